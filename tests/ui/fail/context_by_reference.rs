// The ToolContext taken by reference instead of by value.
use tool_core::{tool, ToolContext};

/// Get the weather
#[tool]
async fn weather(city: String, ctx: &ToolContext) -> String {
    let _ = ctx;
    city
}

fn main() {}
