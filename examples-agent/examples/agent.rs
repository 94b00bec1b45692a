//! An agent that pauses for a human's approval: the model asks to transfer
//! money, the run stops with a `tool-call-approval` chunk, the approval
//! continues it, and the model answers with the result.
//!
//! Run: `cargo run -p examples-agent --example agent`. By default it runs
//! offline: a `ScriptedModel` plays the model, its two answers written as
//! data, and the example shows what the model was sent; with
//! `OPENAI_API_KEY` (or `ANTHROPIC_API_KEY`) set, it talks to the real API
//! instead.

use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use tool_agent::{
    Agent, AgentChunk, AgentStream, AnthropicModel, FinishReason, Message, Model, ModelFinish,
    OpenAiChatModel, ScriptedModel, ScriptedStep, Thread,
};
use tool_core::{ToolError, tool};
use tool_runtime::Runtime;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct TransferInput {
    /// Recipient
    to: String,
    /// Amount in euros
    amount: f64,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Receipt {
    to: String,
    amount: f64,
    reference: String,
}

/// Transfer money to someone
#[tool(id = "transfer", require_approval)]
pub async fn transfer(TransferInput { to, amount }: TransferInput) -> Result<Receipt, ToolError> {
    println!("    >>> the transfer runs: {amount} EUR to {to}");
    Ok(Receipt {
        reference: format!("TX-{to}-{amount}"),
        to,
        amount,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut scripted = None;
    let model: Box<dyn Model> = if std::env::var_os("OPENAI_API_KEY").is_some() {
        println!("(talking to the OpenAI API)");
        Box::new(OpenAiChatModel::new("gpt-4.1-mini"))
    } else if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        println!("(talking to the Anthropic API)");
        Box::new(AnthropicModel::new("claude-sonnet-4-5"))
    } else {
        println!("(offline: a scripted model plays the model)");
        let model = scripted_model();
        scripted = Some(model.clone());
        Box::new(model)
    };
    let runtime = Runtime::builder().tool(TransferTool).build()?;
    let agent = Agent::builder("banker", model, runtime)
        .instructions("You move money for the user with the transfer tool. Be brief.")
        .build()?;

    let ask = Message::user("Send 25 euros to Alice, please.");
    let paused = show(agent.stream(Thread::new("thread-1"), vec![ask])).await;
    let Some(call_id) = paused.approval else {
        println!("the model did not ask to transfer; nothing to approve");
        return Ok(());
    };
    println!("--- a human approves {call_id} (from any instance sharing the store)");
    show(agent.approve_tool_call(&paused.run_id, &call_id).await?).await;

    if let Some(model) = scripted {
        // The scripted model recorded every request: what each step read.
        println!("--- what the model was sent");
        for (step, request) in model.requests().iter().enumerate() {
            let tools = request.tools.len();
            println!("step {}: {tools} tool(s), the conversation:", step + 1);
            for message in &request.messages {
                println!("    {}", serde_json::to_string(message)?);
            }
        }
    }
    Ok(())
}

/// The model's two answers, written as data: first some text and a
/// transfer call whose arguments stream in two pieces; then, once it has
/// the transfer's result, a sentence about it.
fn scripted_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new()
            .text("I'll send it. ")
            .tool_call_deltas(
                "call_1",
                "transfer",
                ["{\"to\": \"Ali", "ce\", \"amount\": 25}"],
            )
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::new()
            .text("Done: 25 euros sent to Alice ")
            .text("(reference TX-Alice-25).")
            .finish(ModelFinish::Stop),
    ])
}

/// What a stream showed: its run, and the call waiting for approval.
struct Shown {
    run_id: String,
    approval: Option<String>,
}

/// Prints a run's chunks as they come.
async fn show(mut stream: AgentStream) -> Shown {
    let mut shown = Shown {
        run_id: stream.run_id().to_owned(),
        approval: None,
    };
    while let Some(chunk) = stream.next().await {
        match chunk {
            AgentChunk::TextDelta { text } => print!("{text}"),
            AgentChunk::ToolCall {
                tool_name, args, ..
            } => println!("\n[tool call] {tool_name} {args}"),
            AgentChunk::ToolCallApproval {
                call_id,
                tool_name,
                args,
                ..
            } => {
                println!("[tool-call-approval] {call_id}: {tool_name} {args}");
                shown.approval = Some(call_id);
            }
            AgentChunk::ToolResult {
                tool_name, result, ..
            } => println!("[tool result] {tool_name}: {result}"),
            AgentChunk::ToolError {
                tool_name, error, ..
            } => println!("[tool error] {tool_name}: {error}"),
            AgentChunk::Error { message } => println!("[error] {message}"),
            AgentChunk::Finish { reason, .. } => {
                let note = if reason == FinishReason::Suspended {
                    " (the run is stored; it waits)"
                } else {
                    ""
                };
                println!("\n[finish] {reason:?}{note}");
            }
            _ => {}
        }
    }
    shown
}
