//! What the server tests share: the tools most of them serve
//! ([`runtime`], and the task tools of both task protocols), an rmcp
//! client that records what the server sends it ([`client`]), raw
//! streamable HTTP requests and a 2025-11-25 session ([`http`]), and a raw
//! client of stdio's framing ([`lines`]). A tool only one test file serves
//! is declared there.
#![allow(dead_code, reason = "each test binary uses a part of it")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{ContentPart, ModelOutput, ToolContext, ToolError, tool};
use tool_mcp::McpToolContext as _;
use tool_runtime::Runtime;

pub mod client;
pub mod http;
pub mod lines;

/// Where.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct WeatherInput {
    /// City name or coordinates
    location: String,
}

/// The weather.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Weather {
    location: String,
    temperature_celsius: f64,
}

fn weather_meta() -> Value {
    json!({ "ui/icon": "sun" })
}

/// Get the current weather for a location
#[tool(
    id = "weather-tool",
    strict,
    mcp(title = "Weather Lookup", read_only, destructive = false, idempotent, open_world, meta = weather_meta)
)]
pub async fn weather(WeatherInput { location }: WeatherInput) -> Result<Weather, ToolError> {
    if location == "Atlantis" {
        return Err(ToolError::new("Atlantis has no weather station"));
    }
    if location == "Crash" {
        panic!("the weather station exploded");
    }
    Ok(Weather {
        location,
        temperature_celsius: 21.0,
    })
}

/// Count the letters of a word
#[tool(title = "Letter Counter")]
pub async fn letters(word: String) -> usize {
    word.chars().count()
}

fn chart(_output: &String) -> ModelOutput {
    ModelOutput::Content(vec![
        ContentPart::text("the chart"),
        ContentPart::ImageData {
            data: "iVBORw0KGgo=".into(),
            media_type: "image/png".into(),
        },
    ])
}

/// Draw a chart
#[tool(to_model_output = chart)]
pub async fn draw(title: String) -> String {
    format!("chart of {title}")
}

/// Count to `steps`, reporting progress
#[tool]
pub async fn count(steps: u32, ctx: ToolContext) -> u32 {
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(2)).await;
        ctx.progress(f64::from(step), Some(f64::from(steps)), Some("counting"));
    }
    steps
}

pub static SLEEPER_ABORTED: AtomicBool = AtomicBool::new(false);

/// Waits until aborted
#[tool]
pub async fn sleeper(ctx: ToolContext) -> Result<(), ToolError> {
    ctx.abort_signal().aborted().await;
    SLEEPER_ABORTED.store(true, Ordering::SeqCst);
    Ok(())
}

/// Delete a file
#[tool(
    id = "delete-file",
    require_approval,
    mcp(title = "Delete File", destructive)
)]
pub async fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

/// What the booking tool asks.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Quote {
    question: String,
    price_eur: u32,
}

/// The user's answer.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Answer {
    /// Book it?
    confirmed: bool,
    /// Number of seats
    #[schemars(range(min = 1))]
    seats: u32,
}

/// What `book-flight` and `book-later` do: ask for a confirmation of the
/// price, then book with the answer.
fn book_once_confirmed(
    flight: String,
    ctx: &ToolContext<Quote, Answer>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Quote {
            question: format!("Book {flight} for 249 EUR?"),
            price_eur: 249,
        }),
        Some(Answer {
            confirmed: true,
            seats,
        }) => Ok(format!("booked {seats} seat(s) on {flight}")),
        Some(Answer {
            confirmed: false, ..
        }) => Ok("not booked".into()),
    }
}

/// Book a flight after the user confirms the price
#[tool(id = "book-flight")]
pub async fn book_flight(
    flight: String,
    ctx: ToolContext<Quote, Answer>,
) -> Result<String, ToolError> {
    book_once_confirmed(flight, &ctx)
}

/// A resume schema no form can ask for.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Nested {
    inner: Inner,
}

/// Its nested part.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Inner {
    value: String,
}

/// Suspends with a resume schema no form can ask for
#[tool(id = "deep-ask")]
pub async fn deep_ask(ctx: ToolContext<String, Nested>) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend("Which value?".to_owned()),
        Some(nested) => Ok(nested.inner.value.clone()),
    }
}

/// A seat.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct SeatChoice {
    /// Seat, e.g. 12A
    pub seat: String,
    /// A window seat?
    window: bool,
}

/// Asks the user for a seat while it runs
#[tool(id = "pick-seat")]
pub async fn pick_seat(flight: String, ctx: ToolContext) -> Result<String, ToolError> {
    let Some(mcp) = ctx.mcp() else {
        return Ok(format!("{flight}: nobody to ask, seat unassigned"));
    };
    Ok(
        match mcp
            .elicit_as::<SeatChoice>(format!("Which seat on {flight}?"))
            .await?
        {
            Some(SeatChoice { seat, window }) => {
                format!(
                    "{flight}: seat {seat} ({})",
                    if window { "window" } else { "aisle" }
                )
            }
            None => format!("{flight}: the user did not pick a seat"),
        },
    )
}

pub fn runtime() -> Runtime {
    Runtime::builder()
        .tool(WeatherTool)
        .tool(LettersTool)
        .tool(DrawTool)
        .tool(CountTool)
        .tool(SleeperTool)
        .tool(DeleteFileTool)
        .tool(BookFlightTool)
        .tool(DeepAskTool)
        .tool(PickSeatTool)
        .build()
        .unwrap()
}

/// Builds an archive, served only as an MCP task
#[tool(background, mcp(task_required))]
pub async fn archive() -> &'static str {
    "archived"
}

/// Books a flight in the background, after the user confirms the price
/// (suspends: the question is stored)
#[tool(background, id = "book-later")]
pub async fn book_later(
    flight: String,
    ctx: ToolContext<Quote, Answer>,
) -> Result<String, ToolError> {
    book_once_confirmed(flight, &ctx)
}
