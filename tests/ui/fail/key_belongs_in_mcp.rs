// An MCP annotation given as a top-level key: the error says it goes inside mcp(...).
use tool_core::tool;

/// Get the weather
#[tool(id = "weather", read_only)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
