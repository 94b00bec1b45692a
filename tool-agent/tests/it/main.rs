//! The agent's integration tests: one test binary, a module per concern.
//!
//! Each module was a test binary of its own (`tests/<module>.rs`); one
//! binary links the dependency graph once. Run one module's tests with
//! `cargo test -p <crate> --all-features --test it <module>::`.

mod common;

mod agent;
mod agent_http;
mod agent_models;
mod background;
mod decisions;
mod declaration_only;
mod model_output;
mod request_context;
mod runtime_decisions;
mod transforms;
mod wire_bodies;
