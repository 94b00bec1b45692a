//! tool-core's own integration tests (most of tool-core's are in the workspace's `tests` package): one test binary, a module per concern.
//!
//! Each module was a test binary of its own (`tests/<module>.rs`); one
//! binary links the dependency graph once. Run one module's tests with
//! `cargo test -p <crate> --all-features --test it <module>::`.

mod editable;
#[cfg(feature = "decode")]
mod recorded_streams;
