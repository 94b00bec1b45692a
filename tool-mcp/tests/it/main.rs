//! The MCP server's and client's integration tests: one test binary, a module per concern.
//!
//! Each module was a test binary of its own (`tests/<module>.rs`); one
//! binary links the dependency graph once. Run one module's tests with
//! `cargo test -p <crate> --all-features --test it <module>::`.

mod common;

mod elicitation_sampling;
mod mcp_client;
mod progress_logging;
mod stdio;
mod streamable_http;
mod tasks_2025_11_25;
mod tasks_sep2663;
mod tools;
