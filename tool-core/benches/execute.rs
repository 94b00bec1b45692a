//! `Tool::execute` of the weather tool (parse-free JSON input, full input
//! and output validation) against the bare path a hand-written tool would
//! take: `serde_json::from_value` → fn → `serde_json::to_value`.
//!
//! Run: `cargo bench -p tool-core --bench execute`

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{CallContext, Tool, ToolError, tool};

#[derive(Deserialize, schemars::JsonSchema)]
struct WeatherInput {
    /// City name or coordinates
    location: String,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Weather {
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
async fn weather(WeatherInput { location }: WeatherInput) -> Result<Weather, ToolError> {
    Ok(Weather {
        location,
        temperature_celsius: 21.0,
        conditions: "sunny".into(),
    })
}

/// Both paths finish on their first poll; driving them without an executor
/// keeps executor overhead out of the comparison.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("the weather tool never waits"),
    }
}

fn bare(input: Value) -> Value {
    let input: WeatherInput = serde_json::from_value(input).expect("valid input");
    let output = ready(weather(input)).expect("weather never fails");
    serde_json::to_value(output).expect("serializable output")
}

fn execute(c: &mut Criterion) {
    let tool = Tool::from(WeatherTool);
    let input = json!({ "location": "Paris" });
    assert_eq!(
        ready(tool.execute(input.clone(), CallContext::new("call-1"))).output(),
        Some(&bare(input.clone()))
    );
    let mut group = c.benchmark_group("weather");
    group.bench_function("bare serde path", |b| {
        b.iter(|| bare(black_box(input.clone())));
    });
    group.bench_function("Tool::execute", |b| {
        b.iter(|| ready(tool.execute(black_box(input.clone()), CallContext::new("call-1"))));
    });
    group.finish();
}

criterion_group!(benches, execute);
criterion_main!(benches);
