//! The workspace's integration and compile-fail tests of tool-core and `#[tool]`: one test binary, a module per concern.
//!
//! Each module was a test binary of its own (`tests/<module>.rs`); one
//! binary links the dependency graph once. Run one module's tests with
//! `cargo test -p <crate> --all-features --test it <module>::`.

mod attribute;
mod bounded_messages;
mod editable;
mod exactly_once;
mod host_context;
mod input_shapes;
mod observe;
mod partial_json_fixtures;
mod pipeline;
mod properties;
mod provider_stream;
mod providers;
mod reference_examples;
mod schemas;
mod stream_fixtures;
mod strict_fixtures;
