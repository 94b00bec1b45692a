//! The inbox's integration tests: one test binary, a module per concern.
//!
//! Each module was a test binary of its own (`tests/<module>.rs`); one
//! binary links the dependency graph once. Run one module's tests with
//! `cargo test -p <crate> --all-features --test it <module>::`.

mod api;
mod browser;
mod chromium;
mod events;
mod links;
mod slack;
