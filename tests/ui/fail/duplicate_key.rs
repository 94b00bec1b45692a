// The same key given twice.
use tool_core::tool;

/// Get the weather
#[tool(id = "weather", strict, id = "forecast")]
async fn weather(city: String) -> String {
    city
}

fn main() {}
