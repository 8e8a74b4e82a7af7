//! Entry points for the fuzz targets of `crates/agentry-fuzz`: the tool-call extractor and the
//! chat template, which [`LocalModel`](crate::LocalModel) only uses inside a turn. Not a stable
//! API.

use agentry_core::{ModelRequest, ToolCall, ToolSpec};
use std::path::Path;

/// Splits `text`, what a model wrote, into the text to show and the tool calls it made, checked
/// against `tools`, as a turn of [`LocalModel`](crate::LocalModel) does; call ids are
/// `id_prefix` followed by the call's index.
pub fn extract_tool_calls(
    tools: &[ToolSpec],
    text: &str,
    id_prefix: &str,
) -> (String, Vec<ToolCall>) {
    let extracted = crate::extract::ToolCallExtractor::new(tools).extract(text, id_prefix);
    (extracted.text, extracted.calls)
}

/// Compiles the chat template `source` (ChatML when `None`), as a model file's
/// `tokenizer.chat_template` is compiled, or says why it does not compile.
pub fn compile_chat_template(source: Option<&str>) -> Result<(), String> {
    template(source, "", "").map(drop)
}

/// The prompt of `request` rendered with the chat template `source` (ChatML when `None`) and
/// the tokens `bos` and `eos`, as a turn of [`LocalModel`](crate::LocalModel) renders it.
pub fn render_chat_template(
    source: Option<&str>,
    bos: &str,
    eos: &str,
    request: &ModelRequest,
) -> Result<String, String> {
    template(source, bos, eos)?.render(request)
}

fn template(
    source: Option<&str>,
    bos: &str,
    eos: &str,
) -> Result<crate::template::ChatTemplate, String> {
    crate::template::ChatTemplate::new(
        Path::new("fuzz.gguf"),
        source,
        bos.to_owned(),
        eos.to_owned(),
    )
    .map_err(|e| e.to_string())
}
