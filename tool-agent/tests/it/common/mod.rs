//! Helpers shared by the agent's integration tests.
#![allow(dead_code)]

pub mod postgres;
pub mod provider;

/// The name libtest knows test `test` of the module at `module_path` by
/// (`module_path!()` there), for running it alone in a child process with
/// `--exact`: the module's path without the test binary's crate.
pub fn test_name(module_path: &str, test: &str) -> String {
    let module = module_path
        .split_once("::")
        .map_or("", |(_, module)| module);
    format!("{module}::{test}")
}
