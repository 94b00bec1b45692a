// A borrowed parameter: arguments are deserialized into owned values.
use tool_core::tool;

/// Get the weather
#[tool]
async fn weather(city: &str, days: u8) -> String {
    format!("{city} {days}")
}

fn main() {}
