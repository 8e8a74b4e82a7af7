//! Built-in hooks: the cross-cutting hooks agents usually need, each written with the public hook
//! API only, so each is also an example of how to write one.
//!
//! - [`ToolPolicy`]: allow and deny lists of tool names (glob patterns), rules on arguments, and
//!   a "deny unless allowed" mode for production.

mod tool_policy;

pub use tool_policy::{ArgRule, ToolPolicy, ToolPolicyError};
