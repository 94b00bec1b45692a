// One struct parameter is the whole input, destructured in the signature.
use tool_core::{tool, Tool, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct WeatherInput {
    /// City name or coordinates
    location: String,
    /// Temperature unit
    unit: Option<String>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Weather {
    location: String,
    temperature_celsius: f64,
}

/// Get the current weather for a location
#[tool(id = "weather-tool", strict, mcp(title = "Weather Lookup", read_only, idempotent))]
pub async fn weather(WeatherInput { location, unit: _ }: WeatherInput) -> Result<Weather, ToolError> {
    Ok(Weather { location, temperature_celsius: 21.0 })
}

fn main() {
    let tool = Tool::from(WeatherTool);
    let definition = tool.definition();
    assert_eq!(definition.id, "weather-tool");
    assert!(definition.strict);
    assert_eq!(definition.input_schema["required"], serde_json::json!(["location"]));
    assert!(definition.output_schema.as_ref().unwrap()["properties"]["temperatureCelsius"].is_object());
    let mcp = definition.mcp.as_ref().unwrap();
    assert_eq!(mcp.annotations.title.as_deref(), Some("Weather Lookup"));
    assert_eq!(mcp.annotations.read_only_hint, Some(true));
}
