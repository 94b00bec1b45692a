// A `const fn` cannot be a tool.
use tool_core::tool;

/// Double a number
#[tool]
const fn double(n: i64) -> i64 {
    n * 2
}

fn main() {}
