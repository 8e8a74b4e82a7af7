//! The integration tests of agentry-cli, in one test binary.

mod common;

mod claude_settings;
mod commands;
mod cost;
mod hooks_test;
mod interrupt;
mod layers;
mod mcp;
mod models;
mod postgres;
mod replay;
mod secrets;
mod serve;
mod sessions;
mod telemetry;
mod temporal;
mod terminal;
