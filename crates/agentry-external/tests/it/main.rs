//! The integration tests of agentry-external, in one test binary.

mod common;

mod claude_payloads;
mod claude_permissions;
mod masked_payloads;
mod media;
mod native_events;
mod persistent;
mod powershell;
mod reload;
mod resume;
mod run_events;
mod script_faults;
mod tool_events;
mod webhooks;
