//! The runtime's integration tests: one test binary, a module per concern.
//!
//! Each module was a test binary of its own (`tests/<module>.rs`); one
//! binary links the dependency graph once. Run one module's tests with
//! `cargo test -p <crate> --all-features --test it <module>::`.

mod common;

mod app_state;
mod async_hooks;
#[cfg(feature = "async-openai")]
mod async_openai;
mod background_abort;
mod before_run;
mod calls;
mod edits;
mod expiry;
mod faults;
mod lifecycle;
#[cfg(feature = "sqlite")]
mod notifications;
mod pipeline_shape;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "provider")]
mod provider_stream;
#[cfg(feature = "sqlite")]
mod requirements;
mod restore;
mod seams;
mod separation;
#[cfg(feature = "sqlite")]
mod standing_rules;
#[cfg(feature = "sqlite")]
mod store;
mod streaming_events;
#[cfg(feature = "sqlite")]
mod transactional;
mod transforms;
mod worker;
