//! The weather tool of the reference docs, shared by the benches that
//! compare call paths (this crate's `execute`, tool-runtime's `instructions`
//! and `runtime`, which include this file by path).
#![allow(dead_code)] // each bench uses what it compares

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{ToolError, tool};

/// The weather tool's arguments.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct WeatherInput {
    /// City name or coordinates
    location: String,
}

/// The weather tool's output.
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
    mcp(title = "Weather Lookup", read_only, idempotent)
)]
pub async fn weather(WeatherInput { location }: WeatherInput) -> Result<Weather, ToolError> {
    Ok(Weather {
        location,
        temperature_celsius: 21.0,
        conditions: "sunny".into(),
    })
}

/// Drives a future that finishes on its first poll, without an executor,
/// which keeps executor overhead out of the comparisons.
pub fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("the benchmarked tools never wait"),
    }
}

/// The bare path a hand-written tool would take: `serde_json::from_value`
/// → fn → `serde_json::to_value`.
pub fn bare(input: Value) -> Value {
    let input: WeatherInput = serde_json::from_value(input).expect("valid input");
    let output = ready(weather(input)).expect("weather never fails");
    serde_json::to_value(output).expect("serializable output")
}
