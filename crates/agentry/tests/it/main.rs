//! The integration tests of agentry, in one test binary: hooks, built-in hooks and the runtime,
//! through the public API. (`no_alloc` is a binary of its own: it installs a counting allocator.)

mod common;

mod builtin_compaction;
mod builtin_finish_gate;
mod builtin_guards;
mod builtin_mocks_recorder;
mod builtin_redaction;
mod builtin_telemetry;
mod builtin_tool_policy;
mod hooks_allow;
mod hooks_batch;
mod hooks_changes;
mod hooks_decisions;
mod hooks_errors;
mod hooks_fields;
mod hooks_in_place;
mod hooks_order;
mod hooks_pairing;
mod hooks_priority;
mod hooks_sub_agents;
mod hooks_sync;
mod hooks_traced;
mod prelude_api;
mod runtime_approval;
mod runtime_durability;
mod runtime_fork;
mod runtime_lifecycle;
mod runtime_limits;
mod runtime_media;
mod runtime_model_request;
mod runtime_output;
mod runtime_size_limits;
mod runtime_snapshot;
mod runtime_streamed_continue;
mod runtime_tool_sources;
mod runtime_tools;
