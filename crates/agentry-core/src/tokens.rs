//! Counting tokens: a model's own tokenizer where it has one, an estimate otherwise.

use crate::{Message, ToolSpec};

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
        Message::System { content } | Message::User { content } => counter.count(content),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            counter.count(content)
                + tool_calls
                    .iter()
                    .map(|c| counter.count(&c.name) + counter.count(&c.arguments))
                    .sum::<usize>()
        }
        Message::Tool(result) => counter.count(&result.content),
    };
    body + MESSAGE_OVERHEAD
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
