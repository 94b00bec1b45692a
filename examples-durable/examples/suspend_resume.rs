//! Suspend and resume across a process restart. A booking tool suspends to
//! ask the user to confirm; the suspended call is stored in a SQLite file.
//! A second, separate process opens the same file and resumes it.
//!
//! Run: `cargo run -p examples-durable --example suspend_resume`
//! (it runs `suspend <file>` and then `resume <file>` as two child processes
//! of itself; each step can also be run by hand).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_core::{ToolContext, ToolError, tool};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct BookingInput {
    /// Flight number
    flight: String,
    /// Seat wanted
    seat: String,
}

/// What the tool asks the user.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Confirmation {
    question: String,
    price_eur: u32,
}

/// The user's answer.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Answer {
    confirmed: bool,
}

/// Book a flight seat after the user confirms the price
#[tool(id = "book-flight")]
pub async fn book_flight(
    BookingInput { flight, seat }: BookingInput,
    ctx: ToolContext<Confirmation, Answer>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Confirmation {
            question: format!("Book seat {seat} on {flight}?"),
            price_eur: 249,
        }),
        Some(Answer { confirmed: true }) => {
            let price = ctx.suspend_payload().map_or(0, |c| c.price_eur);
            Ok(format!("Booked seat {seat} on {flight} for {price} EUR"))
        }
        Some(Answer { confirmed: false }) => Ok("Booking cancelled by the user".into()),
    }
}

fn runtime(store: &Path) -> Result<Runtime, tool_runtime::RuntimeError> {
    Runtime::builder()
        .tool(BookFlightTool)
        .sqlite_store(store)
        .build()
}

async fn suspend(store: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = runtime(store)?;
    let outcome = runtime
        .call(ToolCall::new(
            "call-42",
            "book-flight",
            r#"{"flight": "AF123", "seat": "12A"}"#,
        ))
        .await;
    let CallOutcome::Suspended {
        payload,
        resume_schema,
        ..
    } = &outcome
    else {
        return Err(format!("expected a suspension, got {outcome:?}").into());
    };
    println!(
        "[process {}] suspended call-42 with {payload}",
        std::process::id()
    );
    println!(
        "[process {}] resume schema: {}",
        std::process::id(),
        resume_schema.clone().unwrap_or_default()
    );
    println!(
        "[process {}] stored in {}; exiting",
        std::process::id(),
        store.display()
    );
    Ok(())
}

async fn resume(store: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = runtime(store)?;
    for pending in runtime.inbox().waiting().await? {
        println!(
            "[process {}] found pending {} ({:?}) for {} with payload {}",
            std::process::id(),
            pending.call.head.call_id,
            pending.call.kind,
            pending.call.head.tool_id,
            pending.call.payload.unwrap_or_default()
        );
    }
    let outcome = runtime
        .resume("call-42", json!({ "confirmed": true }))
        .await?;
    println!(
        "[process {}] resumed: {}",
        std::process::id(),
        outcome.to_model_value()
    );
    // Asked again (a client that lost the answer): the recorded outcome;
    // the tool does not run a second time.
    let again = runtime
        .resume("call-42", json!({ "confirmed": false }))
        .await?;
    println!(
        "[process {}] resumed again: the recorded outcome, no second run: {}",
        std::process::id(),
        again.to_model_value()
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("suspend"), Some(path)) => suspend(Path::new(path)).await,
        (Some("resume"), Some(path)) => resume(Path::new(path)).await,
        _ => {
            let dir =
                std::env::temp_dir().join(format!("suspend-resume-example-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let store: PathBuf = dir.join("pending.sqlite");
            let me = std::env::current_exe()?;
            for step in ["suspend", "resume"] {
                let status = Command::new(&me).arg(step).arg(&store).status()?;
                if !status.success() {
                    return Err(format!("step {step} failed: {status}").into());
                }
            }
            std::fs::remove_dir_all(&dir)?;
            Ok(())
        }
    }
}
