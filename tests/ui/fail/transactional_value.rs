// `transactional` is a flag: `transactional` or `transactional = false`, not a string.
use tool_core::tool;

/// Move money between two accounts
#[tool(transactional = "yes")]
async fn transfer(from: String, to: String) -> String {
    format!("{from} -> {to}")
}

fn main() {}
