// A workflow state, but no context to read it through.
use tool_core::tool;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Counter {
    count: u32,
}

/// Counts
#[tool(state = Counter)]
async fn count(n: u32) -> u32 {
    n
}

fn main() {}
