// One of several plain parameters has a type that is neither Deserialize nor JsonSchema.
use tool_core::tool;

pub struct Unit;

/// Get the weather
#[tool]
async fn weather(city: String, unit: Unit) -> String {
    let _ = unit;
    city
}

fn main() {}
