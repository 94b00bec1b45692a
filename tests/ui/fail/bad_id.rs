// An id providers reject (spaces and `!` are outside ^[a-zA-Z0-9_-]{1,64}$).
use tool_core::tool;

/// Get the weather
#[tool(id = "get weather!")]
async fn weather(city: String) -> String {
    city
}

fn main() {}
