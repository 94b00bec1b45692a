// A state type that cannot be written back.
use tool_core::{ToolContext, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Counter {
    count: u32,
}

/// Counts
#[tool(state = Counter)]
async fn count(ctx: ToolContext) -> String {
    ctx.call_id().to_owned()
}

fn main() {}
