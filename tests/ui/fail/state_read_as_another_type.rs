// The state read as a type other than the declared one, and read typed in
// a tool that declares no state.
use tool_core::{ToolContext, tool};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Counter {
    count: u32,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Cart {
    items: Vec<String>,
}

/// Counts
#[tool(state = Counter)]
async fn count(ctx: ToolContext) -> usize {
    ctx.workflow::<Cart>().map_or(0, |w| w.state().items.len())
}

/// Counts too
#[tool]
async fn undeclared(ctx: ToolContext) -> u32 {
    ctx.workflow::<Counter>().map_or(0, |w| w.state().count)
}

fn main() {}
