//! Runnable examples live in `examples/`; run one with `cargo run -p examples --example weather`.

/// The README's Rust blocks, compiled and run as doctests: this package's
/// dependencies and dev-dependencies are every crate the README shows (the
/// SQLite store, provider streams, async-openai, MCP, the agent, tool-rig).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
