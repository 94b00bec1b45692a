//! OpenAI Chat Completions (`POST {base}/chat/completions`).

use serde_json::{Value, json};
use tool_core::decode::{OpenAiChatDecoder, StreamDecoder};
use tool_core::provider::{MediaBudget, Provider};

use super::{
    Auth, Call, Flow, HttpSettings, Item, Protocol, arguments_text, count, decoded, http_builder,
    parse_event, push_text, run,
};
use crate::model::tool_result_body;
use crate::{Message, Model, ModelEvent, ModelFinish, ModelRequest, ModelStream, Usage};

const PROVIDER: Provider = Provider::OpenAiChat;

/// A model behind OpenAI's Chat Completions API (or a server compatible
/// with it), streamed.
///
/// The request asks for the usage (`stream_options.include_usage`; its
/// chunk, with no choices, is read past) and has a `system` message with
/// the instructions, the
/// conversation (assistant tool calls with their arguments as JSON text,
/// each result as a `tool` message whose content is the result's text, or
/// its JSON), the tools as given, and `max_completion_tokens` when the
/// request limits it. The key goes in `authorization: Bearer`. The finish
/// comes from `finish_reason`: `stop`, `tool_calls`, `length`,
/// `content_filter` ([`ModelFinish::ContentFilter`]), or another as
/// [`ModelFinish::Other`]; a `delta.refusal` comes as text and the answer
/// ends with [`ModelFinish::Refusal`]. Chat has no error flag for tool
/// results: an error result is sent like any other.
///
/// ```no_run
/// use futures_util::StreamExt;
/// use tool_agent::{Message, Model, ModelEvent, ModelRequest, OpenAiChatModel};
///
/// # async fn run() {
/// let model = OpenAiChatModel::new("gpt-4.1"); // the key from OPENAI_API_KEY
/// let mut answer = model.stream(ModelRequest::new("Be brief.", vec![Message::user("Hi!")], vec![]));
/// while let Some(event) = answer.next().await {
///     match event {
///         Ok(ModelEvent::TextDelta(text)) => print!("{text}"),
///         Ok(other) => println!("{other:?}"),
///         Err(error) => eprintln!("{error}"),
///     }
/// }
/// # }
/// ```
#[doc = include_str!("http.md")]
#[derive(Debug, Clone)]
pub struct OpenAiChatModel {
    model: String,
    http: HttpSettings,
}

impl OpenAiChatModel {
    /// The model `model` (e.g. `gpt-4.1`), at `https://api.openai.com/v1`.
    ///
    /// ```
    /// use tool_agent::OpenAiChatModel;
    ///
    /// let model = OpenAiChatModel::new("gpt-4.1");
    /// # drop(model);
    /// ```
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiChatModel {
            model: model.into(),
            http: HttpSettings::new(PROVIDER, "OPENAI_API_KEY", "https://api.openai.com/v1"),
        }
    }
}

http_builder!(
    OpenAiChatModel,
    "gpt-4.1",
    "OPENAI_API_KEY",
    "https://api.openai.com/v1"
);

impl Model for OpenAiChatModel {
    fn provider(&self) -> Provider {
        PROVIDER
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let call = Call {
            settings: self.http.clone(),
            path: "/chat/completions",
            auth: Auth::Bearer,
            body: body(&self.model, &request),
            headers: request.headers.clone(),
        };
        run(
            call,
            Chat {
                decoder: OpenAiChatDecoder::new(),
                finish: None,
                refused: false,
            },
        )
    }
}

/// The request body.
fn body(model: &str, request: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !request.instructions.is_empty() {
        messages.push(json!({ "role": "system", "content": request.instructions }));
    }
    let mut budget = MediaBudget::new(Provider::OpenAiChat);
    // Images and files of the tool results just written: one user message
    // after them, as tool messages take text only.
    let mut follow_up: Vec<Value> = Vec::new();
    for message in &request.messages {
        if !matches!(message, Message::ToolResult { .. }) && !follow_up.is_empty() {
            messages.push(json!({ "role": "user", "content": std::mem::take(&mut follow_up) }));
        }
        messages.push(match message {
            Message::User { text } => json!({ "role": "user", "content": text }),
            Message::Assistant { text, tool_calls } => {
                let content = if text.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    Value::String(text.clone())
                };
                let mut message = json!({ "role": "assistant", "content": content });
                if !tool_calls.is_empty() {
                    message["tool_calls"] = tool_calls
                        .iter()
                        .map(|call| {
                            json!({
                                "id": call.call_id,
                                "type": "function",
                                "function": { "name": call.tool_name, "arguments": arguments_text(&call.arguments) },
                            })
                        })
                        .collect();
                }
                message
            }
            Message::ToolResult {
                call_id,
                tool_name,
                result,
                model_output,
                is_error,
            } => {
                let body = tool_result_body(result, model_output.as_ref(), *is_error);
                let encoded = Provider::OpenAiChat.encode_tool_result(call_id, tool_name, body, &mut budget);
                follow_up.extend(encoded.follow_up);
                encoded.message
            }
        });
    }
    if !follow_up.is_empty() {
        messages.push(json!({ "role": "user", "content": follow_up }));
    }
    let mut body = json!({
        "model": model,
        "stream": true,
        "stream_options": { "include_usage": true },
        "messages": messages,
    });
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.clone());
    }
    if let Some(max) = request.max_tokens {
        body["max_completion_tokens"] = json!(max);
    }
    body
}

/// Reads Chat Completions chunks.
struct Chat {
    decoder: OpenAiChatDecoder,
    /// The first choice's `finish_reason`, once given.
    finish: Option<ModelFinish>,
    /// Whether the model sent a `delta.refusal`.
    refused: bool,
}

impl Chat {
    /// The finish: [`ModelFinish::Refusal`] after a refusal, else the
    /// announced one.
    fn take_finish(&mut self) -> Option<ModelFinish> {
        let finish = self.finish.take();
        if self.refused {
            return Some(ModelFinish::Refusal);
        }
        finish
    }
}

impl Protocol for Chat {
    fn data(&mut self, data: &str, out: &mut Vec<Item>) -> Flow {
        if data.trim() == "[DONE]" {
            let result = self.decoder.decode_data(data);
            if decoded(PROVIDER, &mut self.decoder, result, out) == Flow::Done {
                return Flow::Done;
            }
            let finish = self
                .take_finish()
                .unwrap_or_else(|| ModelFinish::Other("[DONE] without a finish_reason".into()));
            out.push(Ok(ModelEvent::Finish(finish)));
            return Flow::Done;
        }
        let chunk = match parse_event(data) {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Flow::Continue,
            Err(error) => return decoded(PROVIDER, &mut self.decoder, Err(error), out),
        };
        // The first choice (a request asks for one).
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| {
                choices
                    .iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            });
        push_text(
            out,
            choice
                .and_then(|c| c.pointer("/delta/content"))
                .and_then(Value::as_str),
        );
        // A refusal's text is the answer's text; the answer ends as refused.
        let refusal = choice
            .and_then(|c| c.pointer("/delta/refusal"))
            .and_then(Value::as_str);
        if refusal.is_some_and(|text| !text.is_empty()) {
            self.refused = true;
            push_text(out, refusal);
        }
        let result = self.decoder.decode(&chunk);
        if decoded(PROVIDER, &mut self.decoder, result, out) == Flow::Done {
            return Flow::Done;
        }
        // The last chunk before `[DONE]` (asked for with `include_usage`).
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            out.push(Ok(ModelEvent::Usage(Usage {
                input_tokens: count(usage, "/prompt_tokens"),
                output_tokens: count(usage, "/completion_tokens"),
                cached_input_tokens: count(usage, "/prompt_tokens_details/cached_tokens"),
                reasoning_tokens: count(usage, "/completion_tokens_details/reasoning_tokens"),
            })));
        }
        if let Some(reason) = choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
        {
            self.finish = Some(match reason {
                "stop" => ModelFinish::Stop,
                "tool_calls" | "function_call" => ModelFinish::ToolCalls,
                "length" => ModelFinish::Length,
                "content_filter" => ModelFinish::ContentFilter,
                other => ModelFinish::Other(other.to_owned()),
            });
        }
        Flow::Continue
    }

    fn announced_finish(&mut self) -> Option<ModelFinish> {
        self.take_finish()
    }

    fn decoder(&mut self) -> &mut dyn StreamDecoder {
        &mut self.decoder
    }
}
