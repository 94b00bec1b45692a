// The same entry twice inside mcp(...).
use tool_core::tool;

/// Get the weather
#[tool(mcp(read_only, title = "Weather", read_only = false))]
async fn weather(city: String) -> String {
    city
}

fn main() {}
