//! A local HTTP server that plays a model provider (OpenAI Chat
//! Completions, OpenAI Responses, Anthropic Messages): scripted answers in
//! each API's streaming format, and the requests it received.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_agent::{AnthropicModel, Model, OpenAiChatModel, OpenAiResponsesModel};

/// An environment variable no test sets, for the missing-key tests.
pub const UNSET_KEY_ENV: &str = "TOOL_RUNTIME_AGENT_MODELS_TEST_UNSET_KEY";

// ---------------------------------------------------------------------------
// The local provider.

/// One scripted answer.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    /// Written one piece at a time, flushed, with a pause between.
    pub pieces: Vec<String>,
    /// Chunked transfer encoding, and the connection dropped without the
    /// last chunk: the body breaks off with an error.
    pub break_off: bool,
    /// Pause after the pieces before closing (a stalled stream).
    pub stall: Duration,
}

impl Reply {
    pub fn sse(pieces: Vec<String>) -> Self {
        Reply {
            status: 200,
            headers: Vec::new(),
            pieces,
            break_off: false,
            stall: Duration::ZERO,
        }
    }

    pub fn status(status: u16, body: &str) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            pieces: vec![body.to_owned()],
            break_off: false,
            stall: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

pub struct Server {
    pub addr: std::net::SocketAddr,
    pub received: Arc<Mutex<Vec<Received>>>,
}

/// What the server answers to a request.
pub type Script = dyn Fn(&Received) -> Reply + Send + Sync;

impl Server {
    /// Serves `replies` in order, one per connection, on 127.0.0.1.
    pub async fn start(replies: Vec<Reply>) -> Server {
        let replies = Mutex::new(VecDeque::from(replies));
        Server::scripted(move |_| {
            replies
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| Reply::status(500, "no scripted reply left"))
        })
        .await
    }

    /// Answers each request (one per connection, on 127.0.0.1) with what
    /// `script` makes of it.
    pub async fn scripted(script: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let log = Arc::clone(&received);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (log, script) = (Arc::clone(&log), Arc::clone(&script));
                tokio::spawn(async move { answer(socket, &log, &*script).await });
            }
        });
        Server { addr, received }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn answer(mut socket: TcpStream, log: &Mutex<Vec<Received>>, script: &Script) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .unwrap_or_default()
        .to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
    let body = serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap_or(Value::Null);
    let received = Received {
        path,
        headers,
        body,
    };
    let reply = script(&received);
    log.lock().unwrap().push(received);
    let content_type = if reply.status == 200 {
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut head = format!(
        "HTTP/1.1 {} Scripted\r\ncontent-type: {content_type}\r\nconnection: close\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if reply.break_off {
        head.push_str("transfer-encoding: chunked\r\n");
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for piece in &reply.pieces {
        let bytes = if reply.break_off {
            format!("{:x}\r\n{piece}\r\n", piece.len())
        } else {
            piece.clone()
        };
        if socket.write_all(bytes.as_bytes()).await.is_err() || socket.flush().await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    if reply.break_off {
        // Half a chunk, then the connection drops.
        let _ = socket.write_all(b"40\r\ndata: {\"cut").await;
    }
    tokio::time::sleep(reply.stall).await;
    let _ = socket.shutdown().await;
}

// ---------------------------------------------------------------------------
// The three APIs.

#[derive(Debug, Clone, Copy)]
pub enum Api {
    Chat,
    Responses,
    Anthropic,
}

pub const APIS: [Api; 3] = [Api::Chat, Api::Responses, Api::Anthropic];

impl Api {
    pub fn model(self, server: &Server, key: Option<&str>, retries: u32) -> Box<dyn Model> {
        self.model_with(server, key, retries, Duration::from_secs(10))
    }

    pub fn model_with(
        self,
        server: &Server,
        key: Option<&str>,
        retries: u32,
        timeout: Duration,
    ) -> Box<dyn Model> {
        let addr = server.addr;
        macro_rules! configure {
            ($model:expr) => {{
                let model = $model.max_retries(retries).timeout(timeout);
                match key {
                    Some(key) => Box::new(model.api_key(key)) as Box<dyn Model>,
                    None => Box::new(model.api_key_env(UNSET_KEY_ENV)),
                }
            }};
        }
        match self {
            Api::Chat => {
                configure!(OpenAiChatModel::new("gpt-4.1").base_url(format!("http://{addr}/v1")))
            }
            Api::Responses => configure!(
                OpenAiResponsesModel::new("gpt-5.1").base_url(format!("http://{addr}/v1/"))
            ),
            Api::Anthropic => configure!(
                AnthropicModel::new("claude-sonnet-4-5").base_url(format!("http://{addr}"))
            ),
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
            Api::Anthropic => "/v1/messages",
        }
    }

    /// A short answer: "Hi" and the end.
    pub fn text_answer(self) -> Vec<String> {
        match self {
            Api::Chat => vec![
                chat(
                    json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": null}]}),
                ),
                chat(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
                "data: [DONE]\n\n".into(),
            ],
            Api::Responses => vec![
                typed(
                    json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi"}),
                ),
                typed(
                    json!({"type": "response.completed", "response": {"status": "completed", "output": []}}),
                ),
            ],
            Api::Anthropic => vec![
                typed(
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                typed(
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
                ),
                typed(json!({"type": "content_block_stop", "index": 0})),
                typed(
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}}),
                ),
                typed(json!({"type": "message_stop"})),
            ],
        }
    }

    /// A tool call `weather` (id `call_1`) whose arguments stop at `{"city": "Ro`.
    pub fn cut_answer(self) -> Vec<String> {
        match self {
            Api::Chat => vec![
                chat(
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ""}}]}, "finish_reason": null}]}),
                ),
                chat(
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": \"Ro"}}]}, "finish_reason": null}]}),
                ),
            ],
            Api::Responses => vec![
                typed(
                    json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_1", "name": "weather"}}),
                ),
                typed(
                    json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "{\"city\": \"Ro"}),
                ),
            ],
            Api::Anthropic => vec![
                typed(
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "call_1", "name": "weather", "input": {}}}),
                ),
                typed(
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Ro"}}),
                ),
            ],
        }
    }

    /// [`cut_answer`](Self::cut_answer) followed by the provider's end for
    /// a token limit.
    pub fn token_limit_answer(self) -> Vec<String> {
        let mut answer = self.cut_answer();
        match self {
            Api::Chat => {
                answer.push(chat(
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
                ));
                answer.push("data: [DONE]\n\n".into());
            }
            Api::Responses => answer.push(typed(
                json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}}),
            )),
            Api::Anthropic => {
                answer.push(typed(json!({"type": "content_block_stop", "index": 0})));
                answer.push(typed(
                    json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null}}),
                ));
                answer.push(typed(json!({"type": "message_stop"})));
            }
        }
        answer
    }

    /// The API's error body.
    pub fn error(self, message: &str) -> String {
        match self {
            Api::Chat | Api::Responses => {
                json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}})
            }
            Api::Anthropic => {
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            }
        }
        .to_string()
    }
}

/// A Chat Completions chunk (`data:` only).
pub fn chat(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}

/// A Responses or Anthropic event, with its `event:` line.
pub fn typed(event: Value) -> String {
    format!(
        "event: {}\ndata: {event}\n\n",
        event["type"].as_str().unwrap()
    )
}

/// A part of a scripted answer.
#[derive(Debug, Clone)]
pub enum Part {
    /// Text.
    Text(String),
    /// A tool call: its id, tool, and arguments (streamed in two pieces).
    Call(String, &'static str, Value),
}

impl Api {
    /// An answer of `parts`, in the API's streaming format, ending with
    /// `tool_calls`/`tool_use` when it calls tools and `stop` otherwise.
    pub fn answer(self, parts: &[Part]) -> Vec<String> {
        let calls = parts.iter().any(|p| matches!(p, Part::Call(..)));
        let mut events = Vec::new();
        let mut outputs = Vec::new();
        for (index, part) in parts.iter().enumerate() {
            match (self, part) {
                (Api::Chat, Part::Text(text)) => events.push(chat(
                    json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]}),
                )),
                (Api::Chat, Part::Call(id, name, args)) => {
                    let (head, tail) = halves(args);
                    events.push(chat(
                        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": head}}]}, "finish_reason": null}]}),
                    ));
                    events.push(chat(
                        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "function": {"arguments": tail}}]}, "finish_reason": null}]}),
                    ));
                }
                (Api::Responses, Part::Text(text)) => events.push(typed(
                    json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": index, "content_index": 0, "delta": text}),
                )),
                (Api::Responses, Part::Call(id, name, args)) => {
                    let (head, tail) = halves(args);
                    let item = format!("fc_{index}");
                    events.push(typed(
                        json!({"type": "response.output_item.added", "output_index": index, "item": {"id": item, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": id, "name": name}}),
                    ));
                    for delta in [head, tail] {
                        events.push(typed(
                            json!({"type": "response.function_call_arguments.delta", "item_id": item, "output_index": index, "delta": delta}),
                        ));
                    }
                    events.push(typed(
                        json!({"type": "response.function_call_arguments.done", "item_id": item, "output_index": index, "arguments": args.to_string()}),
                    ));
                    let done = json!({"id": item, "type": "function_call", "status": "completed", "arguments": args.to_string(), "call_id": id, "name": name});
                    events.push(typed(
                        json!({"type": "response.output_item.done", "output_index": index, "item": done}),
                    ));
                    outputs.push(done);
                }
                (Api::Anthropic, Part::Text(text)) => {
                    events.push(typed(
                        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
                    ));
                    events.push(typed(
                        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
                    ));
                    events.push(typed(json!({"type": "content_block_stop", "index": index})));
                }
                (Api::Anthropic, Part::Call(id, name, args)) => {
                    let (head, tail) = halves(args);
                    events.push(typed(
                        json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                    ));
                    for delta in [head, tail] {
                        events.push(typed(
                            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": delta}}),
                        ));
                    }
                    events.push(typed(json!({"type": "content_block_stop", "index": index})));
                }
            }
        }
        match self {
            Api::Chat => {
                let reason = if calls { "tool_calls" } else { "stop" };
                events.push(chat(
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
                ));
                events.push("data: [DONE]\n\n".into());
            }
            Api::Responses => events.push(typed(
                json!({"type": "response.completed", "response": {"status": "completed", "output": outputs}}),
            )),
            Api::Anthropic => {
                let reason = if calls { "tool_use" } else { "end_turn" };
                events.push(typed(
                    json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}}),
                ));
                events.push(typed(json!({"type": "message_stop"})));
            }
        }
        events
    }

    /// The tool results in a request's conversation: call id and content text.
    pub fn tool_results(self, body: &Value) -> Vec<(String, String)> {
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            other => other.to_string(),
        };
        let items = match self {
            Api::Chat | Api::Anthropic => body["messages"].as_array(),
            Api::Responses => body["input"].as_array(),
        };
        let mut results = Vec::new();
        for item in items.into_iter().flatten() {
            match self {
                Api::Chat if item["role"] == "tool" => results.push((
                    item["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                    text(&item["content"]),
                )),
                Api::Responses if item["type"] == "function_call_output" => results.push((
                    item["call_id"].as_str().unwrap_or_default().to_owned(),
                    text(&item["output"]),
                )),
                Api::Anthropic => {
                    for block in item["content"].as_array().into_iter().flatten() {
                        if block["type"] == "tool_result" {
                            results.push((
                                block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                                text(&block["content"]),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        results
    }

    /// The last user text of a request's conversation.
    pub fn last_user_text(self, body: &Value) -> Option<String> {
        let items = match self {
            Api::Chat | Api::Anthropic => body["messages"].as_array()?,
            Api::Responses => body["input"].as_array()?,
        };
        items.iter().rev().find_map(|item| {
            if item["role"] != "user" {
                return None;
            }
            match &item["content"] {
                Value::String(text) => Some(text.clone()),
                Value::Array(parts) => parts
                    .iter()
                    .find(|p| p["type"] == "text" || p["type"] == "input_text")
                    .and_then(|p| p["text"].as_str())
                    .map(str::to_owned),
                _ => None,
            }
        })
    }
}

/// A JSON value's text in two pieces.
fn halves(value: &Value) -> (String, String) {
    let text = value.to_string();
    let (head, tail) = text.split_at(text.len() / 2);
    (head.to_owned(), tail.to_owned())
}
