//! An agent that pauses for a human's approval: the model asks to transfer
//! money, the run stops with a `tool-call-approval` chunk, the approval
//! continues it, and the model answers with the result.
//!
//! Run: `cargo run -p examples --example agent`. By default the model is a
//! local server this example starts, which answers in OpenAI's Chat
//! Completions streaming format; with `OPENAI_API_KEY` (or
//! `ANTHROPIC_API_KEY`) set, it talks to the real API instead.

use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tool_agent::{
    Agent, AgentChunk, AgentStream, AnthropicModel, FinishReason, Message, Model, OpenAiChatModel,
    Thread,
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
    let model: Box<dyn Model> = if std::env::var_os("OPENAI_API_KEY").is_some() {
        println!("(talking to the OpenAI API)");
        Box::new(OpenAiChatModel::new("gpt-4.1-mini"))
    } else if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        println!("(talking to the Anthropic API)");
        Box::new(AnthropicModel::new("claude-sonnet-4-5"))
    } else {
        let url = scripted_provider().await?;
        println!("(offline: a scripted OpenAI-compatible server at {url})");
        Box::new(
            OpenAiChatModel::new("scripted")
                .api_key("offline")
                .base_url(url),
        )
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
    Ok(())
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

/// Starts a local server that answers like OpenAI's Chat Completions API:
/// first a transfer call, then, once the conversation holds its result, a
/// sentence about it. Returns its base URL.
async fn scripted_provider() -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let body = sse(answer(&request));
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let _ = socket.write_all(format!("{head}{body}").as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Ok(url)
}

/// The scripted model's next chunks for a request.
fn answer(request: &Value) -> Vec<Value> {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let result = messages.iter().find(|m| m["role"] == "tool");
    let chunk = |delta: Value, finish: Value| json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
    match result {
        None => vec![
            chunk(
                json!({ "role": "assistant", "content": "I'll send it. " }),
                Value::Null,
            ),
            chunk(
                json!({ "tool_calls": [{ "index": 0, "id": "call_1", "type": "function", "function": { "name": "transfer", "arguments": "{\"to\": \"Ali" } }] }),
                Value::Null,
            ),
            chunk(
                json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "ce\", \"amount\": 25}" } }] }),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ],
        Some(tool) => {
            let receipt: Value =
                serde_json::from_str(tool["content"].as_str().unwrap_or("{}")).unwrap_or_default();
            let text = format!(
                "Done: 25 euros sent to Alice (reference {}).",
                receipt["reference"].as_str().unwrap_or("?")
            );
            vec![
                chunk(json!({ "content": text }), Value::Null),
                chunk(json!({}), json!("stop")),
            ]
        }
    }
}

fn sse(chunks: Vec<Value>) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// Reads one HTTP request's JSON body.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Value> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buffer);
        let Some(head_end) = text.find("\r\n\r\n") else {
            continue;
        };
        let length = text[..head_end]
            .lines()
            .find_map(|line| {
                line.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
            })
            .unwrap_or(0);
        if buffer.len() >= head_end + 4 + length {
            return serde_json::from_slice(&buffer[head_end + 4..head_end + 4 + length]).ok();
        }
    }
}
