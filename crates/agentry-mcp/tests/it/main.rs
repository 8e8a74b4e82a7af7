//! The integration tests of agentry-mcp, in one test binary.

mod common;

mod config;
mod everything;
mod faults;
mod resume;
mod served;
mod served_in_process;
mod served_stdio_kinds;
