//! An MCP server: two `#[tool]` functions served over MCP with the
//! official `rmcp` crate, through the runtime's pipeline (validation,
//! progress, cancellation).
//!
//! - `weather-tool`: the weather tool of the reference docs ("Weather
//!   Lookup": read-only, not destructive, idempotent, open-world).
//! - `count-slowly`: counts to `steps`, one step every `delayMs`
//!   milliseconds, reporting progress at each step; cancelling its call
//!   aborts it (the runtime logs the abort to stderr).
//!
//! Run over stdio (the default; logs go to stderr, stdout carries only JSON-RPC):
//!     cargo run -q -p examples-mcp --example mcp_server
//! Check it with the official Python client:
//!     ../shared/mcp-probe/run --mode both -- cargo run -q -p examples-mcp --example mcp_server
//! Or over streamable HTTP, at http://<addr>/mcp:
//!     cargo run -q -p examples-mcp --example mcp_server -- --http 127.0.0.1:8000
//!
//! `--pending-demo` adds two tools that pause: `delete-file` needs approval,
//! `book-flight` suspends for a confirmation. A client with form
//! elicitation is asked; any other client gets a result saying what is
//! pending (the call stays in the runtime's store).

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tool_core::{ToolContext, ToolError, tool};
use tool_mcp::{HttpOptions, McpServer};
use tool_runtime::Runtime;
use tracing_subscriber::EnvFilter;

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
    mcp(
        title = "Weather Lookup",
        read_only,
        destructive = false,
        idempotent,
        open_world
    )
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

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CountInput {
    /// How many steps to count
    steps: u32,
    /// Milliseconds to wait before each step
    delay_ms: u64,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Counted {
    /// How many steps were counted
    counted: u32,
}

/// Count to `steps`, one step every `delayMs` milliseconds, reporting progress at each step
#[tool(
    id = "count-slowly",
    mcp(title = "Count Slowly", read_only, idempotent)
)]
pub async fn count_slowly(
    CountInput { steps, delay_ms }: CountInput,
    ctx: ToolContext,
) -> Result<Counted, ToolError> {
    for step in 1..=steps {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
            () = ctx.abort_signal().aborted() => {
                ctx.observe().info(&format!("count-slowly stopped at step {step}: abort signal fired"));
                return Err(ToolError::new("aborted"));
            }
        }
        ctx.progress(
            f64::from(step),
            Some(f64::from(steps)),
            Some(&format!("step {step} of {steps}")),
        );
    }
    Ok(Counted { counted: steps })
}

/// Delete a file (demo: nothing is deleted)
#[tool(
    id = "delete-file",
    require_approval,
    mcp(title = "Delete File", destructive)
)]
pub async fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

/// What `book-flight` asks before booking.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct PriceCheck {
    question: String,
    price_eur: u32,
}

/// The answer `book-flight` resumes with.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Confirmation {
    /// Book at this price?
    confirmed: bool,
}

/// Book a flight after the user confirms the price
#[tool(id = "book-flight")]
pub async fn book_flight(
    flight: String,
    ctx: ToolContext<PriceCheck, Confirmation>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(PriceCheck {
            question: format!("Book {flight} for 249 EUR?"),
            price_eur: 249,
        }),
        Some(Confirmation { confirmed: true }) => Ok(format!("booked {flight}")),
        Some(Confirmation { confirmed: false }) => Ok(format!("{flight} not booked")),
    }
}

fn usage() -> ! {
    eprintln!("usage: mcp_server [--http <addr>] [--pending-demo]   (default: stdio)");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs go to stderr: over stdio, stdout carries only JSON-RPC.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();

    let mut args = std::env::args().skip(1);
    let (mut http, mut pending_demo): (Option<SocketAddr>, bool) = (None, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => match args.next().map(|addr| addr.parse()) {
                Some(Ok(addr)) => http = Some(addr),
                _ => usage(),
            },
            "--pending-demo" => pending_demo = true,
            _ => usage(),
        }
    }

    let mut runtime = Runtime::builder().tool(WeatherTool).tool(CountSlowlyTool);
    if pending_demo {
        runtime = runtime.tool(DeleteFileTool).tool(BookFlightTool);
    }
    let runtime = runtime.build()?;
    let server = McpServer::builder(runtime)
        .name("examples-mcp-server", env!("CARGO_PKG_VERSION"))
        .instructions("weather-tool looks up the weather; count-slowly counts with progress.")
        .build();

    match http {
        None => {
            tracing::info!("serving MCP over stdio");
            server.serve_stdio().await?;
            tracing::info!("stdin closed; exiting");
        }
        Some(addr) => {
            let http = server.serve_http(HttpOptions::new(addr)).await?;
            eprintln!("MCP endpoint: {}", http.url());
            http.wait().await?;
        }
    }
    Ok(())
}
