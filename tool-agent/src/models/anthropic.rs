//! Anthropic Messages (`POST {base}/v1/messages`).

use serde_json::{Value, json};
use tool_core::decode::{AnthropicDecoder, StreamDecoder};
use tool_core::provider::{MediaBudget, Provider};

use super::{
    Auth, Call, Flow, HttpSettings, Item, Protocol, arguments_object, count, decoded, http_builder,
    parse_event, push_text, run,
};
use crate::model::tool_result_body;
use crate::{Message, Model, ModelEvent, ModelFinish, ModelRequest, ModelStream, Usage};

const PROVIDER: Provider = Provider::Anthropic;

/// The `max_tokens` sent when neither the request nor the builder set one.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A model behind Anthropic's Messages API, streamed.
///
/// The request has the instructions as `system`, `max_tokens` (the
/// request's, else the builder's, default 4096), the conversation
/// (assistant `text` and `tool_use` blocks; tool results as `tool_result`
/// blocks with their text and `is_error`, consecutive ones in one user
/// message, a user text after them in the same message) and the tools as
/// given. The key goes in `x-api-key`, with `anthropic-version: 2023-06-01`.
/// The finish comes from `stop_reason`: `end_turn` and `stop_sequence` are
/// [`ModelFinish::Stop`], `tool_use` [`ModelFinish::ToolCalls`],
/// `max_tokens` [`ModelFinish::Length`], `refusal`
/// [`ModelFinish::Refusal`], `pause_turn` [`ModelFinish::PauseTurn`], others
/// [`ModelFinish::Other`]. An
/// `error` event ends the stream with
/// [`ModelCallError::Decode`](crate::ModelCallError::Decode).
///
/// ```no_run
/// use futures_util::StreamExt;
/// use tool_agent::{AnthropicModel, Message, Model, ModelRequest};
///
/// # async fn run() {
/// let model = AnthropicModel::new("claude-sonnet-4-5").max_tokens(1024); // the key from ANTHROPIC_API_KEY
/// let mut answer = model.stream(ModelRequest::new("Be brief.", vec![Message::user("Hi!")], vec![]));
/// while let Some(event) = answer.next().await {
///     println!("{event:?}");
/// }
/// # }
/// ```
#[doc = include_str!("http.md")]
#[derive(Debug, Clone)]
pub struct AnthropicModel {
    model: String,
    max_tokens: u32,
    http: HttpSettings,
}

impl AnthropicModel {
    /// The model `model` (e.g. `claude-sonnet-4-5`), at
    /// `https://api.anthropic.com`.
    ///
    /// ```
    /// use tool_agent::AnthropicModel;
    ///
    /// let model = AnthropicModel::new("claude-sonnet-4-5");
    /// # drop(model);
    /// ```
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicModel {
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            http: HttpSettings::new(PROVIDER, "ANTHROPIC_API_KEY", "https://api.anthropic.com"),
        }
    }

    /// The `max_tokens` sent when a request does not limit its answer
    /// (the API requires one; default 4096).
    ///
    /// ```
    /// use tool_agent::AnthropicModel;
    ///
    /// let model = AnthropicModel::new("claude-sonnet-4-5").max_tokens(8192);
    /// # drop(model);
    /// ```
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }
}

http_builder!(
    AnthropicModel,
    "claude-sonnet-4-5",
    "ANTHROPIC_API_KEY",
    "https://api.anthropic.com"
);

impl Model for AnthropicModel {
    fn provider(&self) -> Provider {
        PROVIDER
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let body = body(&self.model, self.max_tokens, &request);
        let call = Call {
            settings: self.http.clone(),
            path: "/v1/messages",
            auth: Auth::Anthropic,
            headers: files_beta(&self.http.headers, &request.headers, &body),
            body,
        };
        run(
            call,
            Messages {
                decoder: AnthropicDecoder::new(),
                finish: None,
                usage: Usage::default(),
            },
        )
    }
}

/// The Files API's beta feature, which a `file` source needs.
const FILES_BETA: &str = "files-api-2025-04-14";

/// The request's headers, with the Files API's beta feature added to
/// `anthropic-beta` (after the model's or the request's own features)
/// when `body` refers to an uploaded file.
fn files_beta(
    model_headers: &[(String, String)],
    request_headers: &[(String, String)],
    body: &Value,
) -> Vec<(String, String)> {
    let mut headers = request_headers.to_vec();
    let uses_files = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|message| {
            message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|block| {
                    block["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|part| part.pointer("/source/type") == Some(&json!("file")))
                })
        });
    if !uses_files {
        return headers;
    }
    let beta = model_headers
        .iter()
        .chain(request_headers)
        .filter(|(name, _)| name.eq_ignore_ascii_case("anthropic-beta"))
        .map(|(_, value)| value.as_str())
        .next_back();
    let value = match beta {
        Some(features) if features.split(',').any(|f| f.trim() == FILES_BETA) => return headers,
        Some(features) => format!("{features},{FILES_BETA}"),
        None => FILES_BETA.to_owned(),
    };
    headers.push(("anthropic-beta".to_owned(), value));
    headers
}

/// Adds `block` to the last message when it is the user's (its content
/// turned into blocks), else opens a user message with it.
fn push_user_block(messages: &mut Vec<Value>, block: Value) {
    if let Some(last) = messages.last_mut()
        && last["role"] == "user"
    {
        if let Value::String(text) = &last["content"] {
            last["content"] = json!([{ "type": "text", "text": text }]);
        }
        if let Some(blocks) = last["content"].as_array_mut() {
            blocks.push(block);
            return;
        }
    }
    messages.push(json!({ "role": "user", "content": [block] }));
}

/// The request body.
fn body(model: &str, default_max_tokens: u32, request: &ModelRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut budget = MediaBudget::new(Provider::Anthropic);
    for message in &request.messages {
        match message {
            Message::User { text } => {
                if messages.last().is_some_and(|last| last["role"] == "user") {
                    push_user_block(&mut messages, json!({ "type": "text", "text": text }));
                } else {
                    messages.push(json!({ "role": "user", "content": text }));
                }
            }
            Message::Assistant { text, tool_calls } => {
                let mut content = Vec::new();
                // The API refuses empty text blocks.
                if !text.is_empty() {
                    content.push(json!({ "type": "text", "text": text }));
                }
                for call in tool_calls {
                    content.push(json!({
                        "type": "tool_use",
                        "id": call.call_id,
                        "name": call.tool_name,
                        "input": arguments_object(&call.arguments),
                    }));
                }
                // Nor does it take an assistant message without content.
                if !content.is_empty() {
                    messages.push(json!({ "role": "assistant", "content": content }));
                }
            }
            Message::ToolResult {
                call_id,
                tool_name,
                result,
                model_output,
                is_error,
            } => {
                let body = tool_result_body(result, model_output.as_ref(), *is_error);
                let block = Provider::Anthropic
                    .encode_tool_result(call_id, tool_name, body, &mut budget)
                    .message;
                push_user_block(&mut messages, block);
            }
        }
    }
    let mut body = json!({
        "model": model,
        "stream": true,
        "max_tokens": request.max_tokens.unwrap_or(default_max_tokens),
        "messages": messages,
    });
    if !request.instructions.is_empty() {
        body["system"] = json!(request.instructions);
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.clone());
    }
    body
}

/// Reads Messages events.
struct Messages {
    decoder: AnthropicDecoder,
    /// The `stop_reason` of `message_delta`, once given.
    finish: Option<ModelFinish>,
    /// The answer's usage so far.
    usage: Usage,
}

impl Protocol for Messages {
    fn data(&mut self, data: &str, out: &mut Vec<Item>) -> Flow {
        let event = match parse_event(data) {
            Ok(Some(event)) => event,
            Ok(None) => return Flow::Continue,
            Err(error) => return decoded(PROVIDER, &mut self.decoder, Err(error), out),
        };
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind == "content_block_delta"
            && event.pointer("/delta/type").and_then(Value::as_str) == Some("text_delta")
        {
            push_text(out, event.pointer("/delta/text").and_then(Value::as_str));
        }
        // A text block may start with text of its own.
        if kind == "content_block_start"
            && event.pointer("/content_block/type").and_then(Value::as_str) == Some("text")
        {
            push_text(
                out,
                event.pointer("/content_block/text").and_then(Value::as_str),
            );
        }
        let result = self.decoder.decode(&event);
        if decoded(PROVIDER, &mut self.decoder, result, out) == Flow::Done {
            return Flow::Done;
        }
        match kind {
            // The input is counted at the start, the output (so far) at
            // each delta.
            "message_start" => {
                let usage = event.pointer("/message/usage").unwrap_or(&Value::Null);
                let cache_read = count(usage, "/cache_read_input_tokens");
                self.usage = Usage {
                    input_tokens: count(usage, "/input_tokens")
                        + cache_read
                        + count(usage, "/cache_creation_input_tokens"),
                    output_tokens: count(usage, "/output_tokens"),
                    cached_input_tokens: cache_read,
                    reasoning_tokens: 0,
                };
                Flow::Continue
            }
            "message_delta" => {
                if let Some(output) = event
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    self.usage.output_tokens = output;
                    out.push(Ok(ModelEvent::Usage(self.usage)));
                }
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.finish = Some(match reason {
                        "end_turn" | "stop_sequence" => ModelFinish::Stop,
                        "tool_use" => ModelFinish::ToolCalls,
                        "max_tokens" => ModelFinish::Length,
                        "refusal" => ModelFinish::Refusal,
                        "pause_turn" => ModelFinish::PauseTurn,
                        other => ModelFinish::Other(other.to_owned()),
                    });
                }
                Flow::Continue
            }
            "message_stop" => {
                let finish = self.finish.take().unwrap_or(ModelFinish::Stop);
                out.push(Ok(ModelEvent::Finish(finish)));
                Flow::Done
            }
            _ => Flow::Continue,
        }
    }

    fn announced_finish(&mut self) -> Option<ModelFinish> {
        self.finish.take()
    }

    fn decoder(&mut self) -> &mut dyn StreamDecoder {
        &mut self.decoder
    }
}
