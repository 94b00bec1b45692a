//! The trivial tool the runtime's overhead is measured on (`runtime.rs`'s
//! `call_overhead`, `instructions.rs` with `TOOL=add`).

use tool_core::tool;

/// Add two integers
#[tool(id = "add")]
pub async fn add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> i64 {
    a + b
}
