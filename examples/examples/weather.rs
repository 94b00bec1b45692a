//! The weather tool of the reference docs: prints its definition with the
//! derived schemas, calls it with valid and invalid input, and shows the
//! error object the model receives.
//!
//! Run: `cargo run -p examples --example weather`

use serde::{Deserialize, Serialize};
use tool_core::{CallContext, Outcome, Tool, ToolError, tool};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct WeatherInput {
    /// City name or coordinates
    location: String,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Weather {
    location: String,
    temperature_celsius: f64,
    conditions: String,
}

/// Get the current weather for a location
#[tool(
    id = "weather-tool",
    strict,
    mcp(title = "Weather Lookup", read_only, idempotent, open_world)
)]
pub async fn weather(WeatherInput { location }: WeatherInput) -> Result<Weather, ToolError> {
    if location.trim().is_empty() {
        return Err(ToolError::new("location must not be empty"));
    }
    Ok(Weather {
        location,
        temperature_celsius: 21.0,
        conditions: "sunny".into(),
    })
}

fn show(title: &str, outcome: &Outcome) {
    println!("--- {title}");
    println!(
        "{}",
        serde_json::to_string_pretty(&outcome.to_model_value()).unwrap_or_default()
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let tool = Tool::from(WeatherTool);
    println!("--- definition");
    println!(
        "{}",
        serde_json::to_string_pretty(tool.definition()).unwrap_or_default()
    );

    let ok = tool
        .execute(r#"{"location": "Paris"}"#, CallContext::new("call-1"))
        .await;
    show("valid call: {\"location\": \"Paris\"}", &ok);

    let missing = tool.execute("{}", CallContext::new("call-2")).await;
    show("invalid call: {} (what the model receives)", &missing);

    let wrong_type = tool
        .execute(r#"{"location": 48.85}"#, CallContext::new("call-3"))
        .await;
    show("invalid call: {\"location\": 48.85}", &wrong_type);

    let not_json = tool
        .execute(r#"{"location": "Par"#, CallContext::new("call-4"))
        .await;
    show("unparseable arguments", &not_json);

    let failing = tool
        .execute(r#"{"location": " "}"#, CallContext::new("call-5"))
        .await;
    show("the tool returns an error", &failing);
}
