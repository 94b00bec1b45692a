// `state` takes a type, not a string.
use tool_core::{ToolContext, tool};

/// Counts
#[tool(state = "Counter")]
async fn count(ctx: ToolContext) -> String {
    ctx.call_id().to_owned()
}

fn main() {}
