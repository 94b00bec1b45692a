//! Background tasks: a slow report runs as a task. The call returns
//! `Started { task_id }` at once (and the model is told so); progress and
//! completion arrive as events; `wait` gives the final outcome. A flaky tool
//! is retried, and a hanging one times out.
//!
//! Run: `cargo run -p examples --example background`

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::json;
use tool_core::{ToolContext, ToolError, tool};
use tool_runtime::{CallOutcome, EventKind, Runtime, ToolCall};

/// Build a quarterly report (slow)
#[tool(id = "build-report", background(timeout_ms = 5_000))]
pub async fn build_report(quarter: String, ctx: ToolContext) -> Result<String, ToolError> {
    for step in 1..=3 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        ctx.progress(
            f64::from(step),
            Some(3.0),
            Some(&format!("section {step} of 3")),
        );
    }
    Ok(format!("Report for {quarter}: revenue up 12%"))
}

static FLAKY_ATTEMPTS: AtomicU32 = AtomicU32::new(0);

/// Fetch exchange rates from a flaky upstream
#[tool(id = "fetch-rates", background(max_retries = 2))]
pub async fn fetch_rates(currency: String) -> Result<f64, ToolError> {
    let attempt = FLAKY_ATTEMPTS.fetch_add(1, Ordering::SeqCst) + 1;
    println!("  [fetch-rates] attempt {attempt}");
    if attempt < 3 {
        return Err(ToolError::new(format!(
            "upstream unavailable for {currency}"
        )));
    }
    Ok(1.08)
}

/// Wait for a response that never comes
#[tool(id = "hang", background(timeout_ms = 100, max_retries = 1))]
pub async fn hang(ctx: ToolContext) -> Result<(), ToolError> {
    ctx.abort_signal().aborted().await;
    println!("  [hang] abort signal received");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::builder()
        .tools([
            Into::<tool_core::Tool>::into(BuildReportTool),
            FetchRatesTool.into(),
            HangTool.into(),
        ])
        .on_background_complete(|r| {
            println!(
                "  [callback] {} completed after {} attempt(s)",
                r.task_id, r.attempts
            )
        })
        .on_background_failed(|r| {
            println!(
                "  [callback] {} failed after {} attempt(s)",
                r.task_id, r.attempts
            )
        })
        .build()?;
    let mut events = runtime.events();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            match event.kind {
                EventKind::Progress(p) => println!(
                    "  [event] {} progress {}/{} {}",
                    event.call_id,
                    p.value,
                    p.total.unwrap_or_default(),
                    p.message.unwrap_or_default()
                ),
                EventKind::BackgroundStarted { task_id } => {
                    println!("  [event] {} started {task_id}", event.call_id)
                }
                EventKind::BackgroundCompleted { task_id, outcome } => {
                    println!("  [event] {task_id} finished: {}", outcome.to_model_value())
                }
                _ => {}
            }
        }
    });

    let mut tasks = Vec::new();
    for (call_id, tool_id, input) in [
        ("call-1", "build-report", json!({ "quarter": "Q3" })),
        ("call-2", "fetch-rates", json!({ "currency": "USD" })),
        ("call-3", "hang", json!({})),
    ] {
        let started = runtime.call(ToolCall::new(call_id, tool_id, input)).await;
        println!("--- {call_id}: the model sees {}", started.to_model_value());
        if let CallOutcome::BackgroundStarted { task_id } = started {
            tasks.push(task_id);
        }
    }
    for task_id in &tasks {
        let outcome = runtime.wait(task_id).await?;
        println!("--- wait({task_id}): {}", outcome.to_model_value());
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    printer.abort();
    Ok(())
}
