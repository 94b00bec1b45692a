// The output type derives JsonSchema but not Serialize.
use tool_core::{tool, ToolError};

#[derive(schemars::JsonSchema)]
pub struct Weather {
    celsius: f64,
}

/// Get the weather
#[tool]
async fn weather(city: String) -> Result<Weather, ToolError> {
    let _ = city;
    Ok(Weather { celsius: 21.0 })
}

fn main() {}
