//! Counting tokens: a model's own tokenizer where it has one, an estimate otherwise.

use crate::{Content, Message, Part, ToolSpec};

/// Counts the tokens of a text the way one tokenizer does.
///
/// Models that know their tokenizer return one from [`Model::token_counter`](crate::Model):
/// the local GGUF models count with their own vocabulary, the OpenAI-compatible client with
/// `tiktoken`. [`EstimateCounter`] is the fallback.
pub trait TokenCounter: Send + Sync + 'static {
    /// The counter's name, for logs (`estimate`, `tiktoken:o200k_base`, ...).
    fn name(&self) -> &str;
    /// The number of tokens of `text`.
    fn count(&self, text: &str) -> usize;
}

/// An estimate for when no tokenizer is at hand: about four bytes of English or code per token,
/// rounded up. It errs on the high side for prose and the low side for dense non-Latin text.
///
/// ```
/// use agentry_core::{EstimateCounter, TokenCounter};
/// assert_eq!(EstimateCounter.count(""), 0);
/// assert_eq!(EstimateCounter.count("Hello, world"), 3);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct EstimateCounter;

impl TokenCounter for EstimateCounter {
    fn name(&self) -> &str {
        "estimate"
    }
    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }
}

/// Tokens a chat format spends on each message besides its text (role markers, separators).
pub const MESSAGE_OVERHEAD: usize = 4;

/// The tokens of one message: its text, its tool calls' names and arguments, its overhead.
pub fn message_tokens(counter: &dyn TokenCounter, message: &Message) -> usize {
    let body = match message {
        Message::System { content } => counter.count(content),
        Message::User { content } => content_tokens(counter, content),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            content_tokens(counter, content)
                + tool_calls
                    .iter()
                    .map(|c| counter.count(&c.name) + counter.count(&c.arguments))
                    .sum::<usize>()
        }
        Message::Tool(result) => content_tokens(counter, &result.content),
    };
    body + MESSAGE_OVERHEAD
}

/// Tokens an image costs in the providers' own accounting, about: OpenAI bills a high-detail
/// 1024×1024 image 765 tokens, Anthropic (width × height) / 750, about 1,600 at its largest.
/// Without decoding the image, the larger figure keeps budgets on the safe side.
pub const IMAGE_TOKENS: usize = 1_600;

/// The tokens of a message's content: its text counted, each image at [`IMAGE_TOKENS`], files
/// and audio at one token per four bytes (a PDF's text and page images, roughly).
pub fn content_tokens(counter: &dyn TokenCounter, content: &Content) -> usize {
    content
        .parts()
        .iter()
        .map(|p| match p {
            Part::Text(t) => counter.count(t),
            Part::Image(_) => IMAGE_TOKENS,
            Part::File(m) | Part::Audio(m) => {
                (m.size().unwrap_or(IMAGE_TOKENS as u64 * 4) as usize).div_ceil(4)
            }
        })
        .sum()
}

/// The tokens of a prompt: the system prompt, the messages and the tool declarations.
pub fn prompt_tokens<'a>(
    counter: &dyn TokenCounter,
    system: Option<&str>,
    messages: impl IntoIterator<Item = &'a Message>,
    tools: &[ToolSpec],
) -> usize {
    let system = system.map_or(0, |s| counter.count(s) + MESSAGE_OVERHEAD);
    let tools: usize = tools
        .iter()
        .map(|t| {
            counter.count(&t.name)
                + counter.count(&t.description)
                + counter.count(&t.parameters.to_string())
        })
        .sum();
    system
        + tools
        + messages
            .into_iter()
            .map(|m| message_tokens(counter, m))
            .sum::<usize>()
}
