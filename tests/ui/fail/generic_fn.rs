// A generic tool function: schemas need concrete types.
use tool_core::tool;

/// Echo a value
#[tool]
async fn echo<T: serde::Serialize>(value: T) -> T {
    value
}

fn main() {}
