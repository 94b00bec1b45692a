// The input struct derives JsonSchema but not Deserialize.
use tool_core::tool;

#[derive(schemars::JsonSchema)]
pub struct WeatherInput {
    city: String,
}

/// Get the weather
#[tool]
async fn weather(input: WeatherInput) -> String {
    input.city
}

fn main() {}
