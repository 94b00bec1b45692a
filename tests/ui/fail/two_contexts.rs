// Two ToolContext parameters.
use tool_core::{tool, ToolContext};

/// Get the weather
#[tool]
async fn weather(ctx: ToolContext, city: String, again: ToolContext) -> String {
    let _ = (ctx, again);
    city
}

fn main() {}
