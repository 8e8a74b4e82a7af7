//! Built-in hooks: the cross-cutting hooks agents usually need, each written with the public hook
//! API only, so each is also an example of how to write one.
//!
//! - [`Guards`]: limits on steps, tokens, wall time and cost, and finish reasons that stop a run,
//!   each with a typed reason.
//! - [`FinishGate`]: a check on the final answer that sends the model back to work, a bounded
//!   number of times.
//! - [`Telemetry`]: `tracing` spans with the OpenTelemetry GenAI semantic conventions.
//! - [`ToolPolicy`]: allow and deny lists of tool names (glob patterns), rules on arguments, and
//!   a "deny unless allowed" mode for production.
//! - [`ToolMocks`]: tool results given without calling the tools, for tests and evals.
//! - [`Recorder`]: every event of a run, captured for assertions in tests.
//! - [`Redactor`]: masks secrets (common API-key shapes, patterns and values of your own) in
//!   what runs report, and when asked in what tools receive and return.
//!
//! Context compaction is configured on the agent ([`Compaction`](agentry_core::agent::Compaction))
//! and steered by the `context` hook events.

mod finish_gate;
mod guards;
mod mocks;
mod per_run;
mod recorder;
mod redaction;
mod telemetry;
mod tool_policy;

pub use finish_gate::FinishGate;
pub use guards::{GUARD_PRIORITY, Guards, Price, PriceTable};
pub use mocks::ToolMocks;
pub use recorder::{Recorded, Recorder};
pub use redaction::{DEFAULT_MASK, DEFAULT_PATTERNS, Redactor, RedactorError};
pub use telemetry::Telemetry;
pub use tool_policy::{ArgRule, ToolPolicy, ToolPolicyBuilder, ToolPolicyError};
