// `state` given twice.
use tool_core::{ToolContext, tool};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Counter {
    count: u32,
}

/// Counts
#[tool(state = Counter, state = Counter)]
async fn count(ctx: ToolContext) -> u32 {
    ctx.workflow::<Counter>().map_or(0, |w| w.state().count)
}

fn main() {}
