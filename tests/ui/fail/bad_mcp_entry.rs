// An unknown entry in mcp(...).
use tool_core::tool;

/// Get the weather
#[tool(mcp(title = "Weather", readonly))]
async fn weather(city: String) -> String {
    city
}

fn main() {}
