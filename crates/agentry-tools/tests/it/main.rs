//! The integration tests of agentry-tools, in one test binary.

mod common;

mod bash;
mod config;
mod end_to_end;
mod files;
mod search;
mod web_fetch;
mod workspace;
