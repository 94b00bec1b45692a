// The input struct derives Deserialize but not JsonSchema.
use tool_core::tool;

#[derive(serde::Deserialize)]
pub struct WeatherInput {
    city: String,
}

/// Get the weather
#[tool]
async fn weather(WeatherInput { city }: WeatherInput) -> String {
    city
}

fn main() {}
