//! What hooks may change, they can write: each of these compiles (and the runtime honours it,
//! as the behaviour tests show).
use agentry_core::hooks::{
    AfterCompact, AfterModel, AfterSubAgent, AfterTool, BeforeCompact, BeforeModel,
    BeforeSubAgent, BeforeTool, CompactFailed, RunStart, TextDelta, Thinking,
};
use agentry_core::agent::OnCompactError;

fn rewrite(
    run: &mut RunStart,
    before_model: &mut BeforeModel,
    after_model: &mut AfterModel,
    text: &mut TextDelta,
    thinking: &mut Thinking,
    before_tool: &mut BeforeTool,
    after_tool: &mut AfterTool,
    before_sub: &mut BeforeSubAgent,
    after_sub: &mut AfterSubAgent,
    before_compact: &mut BeforeCompact,
    after_compact: &mut AfterCompact,
    compact_failed: &mut CompactFailed,
) {
    run.input = "new input".into();
    before_model.request.system = None;
    after_model.response.text = "new text".into();
    text.text = "new piece".into();
    thinking.text = "new thought".into();
    before_tool.input = serde_json::json!({});
    after_tool.content = "new content".into();
    after_tool.is_error = true;
    before_sub.input = "new task".into();
    after_sub.output = "new output".into();
    before_compact.plan.end = 1;
    after_compact.summary = "new summary".into();
    compact_failed.policy = OnCompactError::Continue;
}

fn main() {
    let _ = rewrite;
}
