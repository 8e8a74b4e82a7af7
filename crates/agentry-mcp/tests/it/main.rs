//! The integration tests of agentry-mcp, in one test binary.

mod common;

mod annotations;
mod answers;
mod config;
mod everything;
mod faults;
mod process;
mod resume;
mod served;
mod served_in_process;
mod served_stdio_kinds;
mod unavailable;
