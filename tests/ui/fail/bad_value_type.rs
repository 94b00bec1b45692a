// Values of the wrong kind, each reported: a number for a string, a string for a flag, a flag with parentheses, a string for an integer.
use tool_core::tool;

/// Get the weather
#[tool(id = 42, strict = "yes", mcp(read_only(true)), background(max_retries = "3"))]
async fn weather(city: String) -> String {
    city
}

fn main() {}
