// One struct parameter is the whole input, taken plain.
use tool_core::{tool, Tool, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct WeatherInput {
    /// City name or coordinates
    location: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Weather {
    location: String,
    temperature_celsius: f64,
}

/// Get the current weather for a location
#[tool]
pub async fn weather(input: WeatherInput) -> Result<Weather, ToolError> {
    Ok(Weather { location: input.location, temperature_celsius: 21.0 })
}

fn main() {
    let tool = Tool::from(WeatherTool);
    let definition = tool.definition();
    assert_eq!(definition.id, "weather");
    assert_eq!(WeatherTool::ID, "weather");
    assert_eq!(definition.description, "Get the current weather for a location");
    assert_eq!(
        definition.input_schema["properties"]["location"]["description"],
        "City name or coordinates"
    );
    assert!(definition.output_schema.as_ref().unwrap()["properties"]["temperature_celsius"].is_object());
    // The function stays callable as written.
    let _future = weather(WeatherInput { location: "Paris".into() });
}
