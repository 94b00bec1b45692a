//! The approval inbox in front of an agent: a run pauses on a transfer that
//! needs approval and on a shipment that asks a question; the inbox serves
//! both to a person in the browser; once both are decided there, the run
//! continues and the model answers with the results.
//!
//! Run: `cargo run -p examples-inbox --example inbox`, open the URL it prints and
//! paste the token it prints. Offline: a `ScriptedModel` plays the model.
//! `INBOX_PORT` picks the port (a free one by default), `INBOX_TOKEN` the
//! token (a random one by default).

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use tool_agent::{
    Agent, AgentChunk, AgentStream, Message, ModelFinish, ScriptedModel, ScriptedStep, Thread,
};
use tool_core::{ToolContext, ToolError, tool};
use tool_inbox::{BearerTokens, Principal};
use tool_runtime::Runtime;

/// Transfer money to someone
#[tool(id = "transfer", require_approval)]
pub async fn transfer(to: String, amount: f64) -> Result<String, ToolError> {
    Ok(format!(
        "sent {amount} EUR to {to} (reference TX-{to}-{amount})"
    ))
}

/// What the shipping tool asks the person.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShippingQuestion {
    /// The question.
    question: String,
}

/// The person's answer.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShippingAnswer {
    /// Ship it now?
    confirm: bool,
    /// How to ship it.
    carrier: Carrier,
    /// A note for the warehouse.
    #[schemars(length(min = 3, max = 200))]
    note: String,
}

/// How to ship.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Carrier {
    /// By post.
    Post,
    /// By courier.
    Courier,
}

/// Ship an order, once a person confirmed how
#[tool(id = "ship")]
pub async fn ship(
    order: u32,
    ctx: ToolContext<ShippingQuestion, ShippingAnswer>,
) -> Result<String, ToolError> {
    let Some(answer) = ctx.resume_data() else {
        return ctx.suspend(ShippingQuestion {
            question: format!("Ship order {order} today? Pick a carrier."),
        });
    };
    Ok(if answer.confirm {
        format!(
            "order {order} shipped by {}: {}",
            serde_json::json!(answer.carrier),
            answer.note
        )
    } else {
        format!("order {order} held: {}", answer.note)
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store =
        std::env::temp_dir().join(format!("tool-inbox-example-{}.sqlite", std::process::id()));
    let runtime = Runtime::builder()
        .tool(TransferTool)
        .tool(ShipTool)
        .sqlite_store(&store)
        .build()?;
    let agent = Agent::builder("shopkeeper", scripted_model(), runtime.clone())
        .instructions("You pay suppliers and ship orders with your tools.")
        .build()?;

    let ask = Message::user("Pay Alice 25 euros and ship order 7.");
    let run_id = show(agent.stream(Thread::new("thread-1"), vec![ask])).await;

    let token = std::env::var("INBOX_TOKEN").unwrap_or_else(|_| random_token());
    let inbox = tool_inbox::router(
        runtime.clone(),
        BearerTokens::new().token(&token, Principal::new("you")),
    );
    let app = axum::Router::new().nest("/inbox", inbox);
    let port = std::env::var("INBOX_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0u16);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        let served = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        );
        if let Err(error) = served.await {
            eprintln!("the inbox stopped: {error}");
        }
    });
    println!("\n--- decide in the browser: http://{address}/inbox");
    println!("--- token: {token}");

    // The run goes on once none of its calls waits for a person.
    let prefix = format!("{run_id}/");
    loop {
        let waiting = runtime.inbox().waiting().await?;
        if !waiting
            .iter()
            .any(|stored| stored.call.head.call_id.starts_with(&prefix))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("--- both decided: the run continues");
    show(agent.continue_run(&run_id).await?).await;
    let _ = std::fs::remove_file(&store);
    Ok(())
}

/// The model's two answers: both calls at once, then a summary.
fn scripted_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new()
            .text("Paying Alice and shipping order 7. ")
            .tool_call(
                "call_pay",
                "transfer",
                serde_json::json!({ "to": "Alice", "amount": 25 }),
            )
            .tool_call("call_ship", "ship", serde_json::json!({ "order": 7 }))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::new()
            .text("Both are done, as you decided in the inbox.")
            .finish(ModelFinish::Stop),
    ])
}

/// 128 random bits as hex, from the OS.
fn random_token() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut urandom) = std::fs::File::open("/dev/urandom") {
        use std::io::Read as _;
        let _ = urandom.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Prints a run's chunks; its run id.
async fn show(mut stream: AgentStream) -> String {
    let run_id = stream.run_id().to_owned();
    while let Some(chunk) = stream.next().await {
        match chunk {
            AgentChunk::TextDelta { text } => print!("{text}"),
            AgentChunk::ToolCallApproval {
                tool_name, args, ..
            } => {
                println!("\n[waits for approval] {tool_name} {args}");
            }
            AgentChunk::ToolCallSuspended {
                tool_name, payload, ..
            } => {
                println!("\n[waits for an answer] {tool_name} {payload}");
            }
            AgentChunk::ToolResult {
                tool_name, result, ..
            } => {
                println!("\n[result] {tool_name}: {result}");
            }
            AgentChunk::ToolError {
                tool_name, error, ..
            } => println!("\n[error] {tool_name}: {error}"),
            AgentChunk::Finish { reason, .. } => println!("\n[finish] {reason:?}"),
            _ => {}
        }
    }
    run_id
}
