//! Token usage and the reasons a model turn ends.

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign};

/// Tokens used by one model call, or summed over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache (Anthropic prompt caching).
    #[serde(default)]
    pub cache_write_input_tokens: u64,
    /// Completion tokens spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Usage with the given input and output token counts.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        }
    }

    /// True when no token was counted.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// What was used since `earlier` (a reading of the same running total), field by field.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(earlier.cached_input_tokens),
            cache_write_input_tokens: self
                .cache_write_input_tokens
                .saturating_sub(earlier.cache_write_input_tokens),
            reasoning_tokens: self
                .reasoning_tokens
                .saturating_sub(earlier.reasoning_tokens),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cached_input_tokens += o.cached_input_tokens;
        self.cache_write_input_tokens += o.cache_write_input_tokens;
        self.reasoning_tokens += o.reasoning_tokens;
    }
}

impl Add for Usage {
    type Output = Usage;
    fn add(mut self, o: Usage) -> Usage {
        self += o;
        self
    }
}

/// Why a model turn ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer.
    #[default]
    Stop,
    /// The model asked for tool calls.
    ToolCalls,
    /// The output token limit was reached.
    Length,
    /// The provider filtered the content.
    ContentFilter,
    /// A TextDelta or Thinking hook aborted the stream, with its reason.
    Aborted(String),
    /// Any other reason, as the provider named it.
    Other(String),
}

impl FinishReason {
    /// The reason's name as telemetry and stop reasons write it (`stop`, `tool_calls`,
    /// `length`, `content_filter`, `aborted`, or the provider's own name).
    ///
    /// ```
    /// use agentry_core::FinishReason;
    /// assert_eq!(FinishReason::ToolCalls.as_str(), "tool_calls");
    /// assert_eq!(FinishReason::Other("pause_turn".into()).as_str(), "pause_turn");
    /// ```
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Aborted(_) => "aborted",
            FinishReason::Other(other) => other,
        }
    }
}
