//! OpenAI Responses (`POST {base}/responses`).

use serde_json::{Value, json};
use tool_core::decode::{DecodeError, OpenAiResponsesDecoder, StreamDecoder};
use tool_core::provider::{MediaBudget, Provider};

use super::{
    Auth, Call, Flow, HttpSettings, Item, MESSAGE_CHARS, Protocol, arguments_text, count, cut,
    decoded, http_builder, parse_event, push_text, run,
};
use crate::model::tool_result_body;
use crate::{
    Message, Model, ModelCallError, ModelEvent, ModelFinish, ModelRequest, ModelStream, Usage,
};

const PROVIDER: Provider = Provider::OpenAiResponses;

/// A model behind OpenAI's Responses API, streamed.
///
/// The request has the `instructions`, the conversation as `input` items
/// (user messages, assistant messages with their text as `content`,
/// `function_call` items with their
/// arguments as JSON text, `function_call_output` items with the result's
/// text or JSON), the tools as given, and `max_output_tokens` when the
/// request limits it. The key goes in `authorization: Bearer`. The finish:
/// `response.completed` is [`ModelFinish::ToolCalls`] when the answer called
/// a function, [`ModelFinish::Refusal`] when it refused (a refusal's text,
/// `response.refusal.delta`, comes as text), [`ModelFinish::Stop`]
/// otherwise; `response.incomplete` for `max_output_tokens` is
/// [`ModelFinish::Length`], for `content_filter`
/// [`ModelFinish::ContentFilter`], for another reason
/// [`ModelFinish::Other`]; `response.failed` and `error` events end the
/// stream with [`ModelCallError::Decode`].
///
/// ```no_run
/// use futures_util::StreamExt;
/// use tool_agent::{Message, Model, ModelRequest, OpenAiResponsesModel};
///
/// # async fn run() {
/// let model = OpenAiResponsesModel::new("gpt-5.1"); // the key from OPENAI_API_KEY
/// let mut answer = model.stream(ModelRequest::new("Be brief.", vec![Message::user("Hi!")], vec![]));
/// while let Some(event) = answer.next().await {
///     println!("{event:?}");
/// }
/// # }
/// ```
#[doc = include_str!("http.md")]
#[derive(Debug, Clone)]
pub struct OpenAiResponsesModel {
    model: String,
    http: HttpSettings,
}

impl OpenAiResponsesModel {
    /// The model `model` (e.g. `gpt-5.1`), at `https://api.openai.com/v1`.
    ///
    /// ```
    /// use tool_agent::OpenAiResponsesModel;
    ///
    /// let model = OpenAiResponsesModel::new("gpt-5.1");
    /// # drop(model);
    /// ```
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiResponsesModel {
            model: model.into(),
            http: HttpSettings::new(PROVIDER, "OPENAI_API_KEY", "https://api.openai.com/v1"),
        }
    }
}

http_builder!(
    OpenAiResponsesModel,
    "gpt-5.1",
    "OPENAI_API_KEY",
    "https://api.openai.com/v1"
);

impl Model for OpenAiResponsesModel {
    fn provider(&self) -> Provider {
        PROVIDER
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let call = Call {
            settings: self.http.clone(),
            path: "/responses",
            auth: Auth::Bearer,
            body: body(&self.model, &request),
            headers: request.headers.clone(),
        };
        run(
            call,
            Responses {
                decoder: OpenAiResponsesDecoder::new(),
                called: false,
                refusal: Refusal::None,
            },
        )
    }
}

/// The request body.
fn body(model: &str, request: &ModelRequest) -> Value {
    let mut input = Vec::new();
    let mut budget = MediaBudget::new(Provider::OpenAiResponses);
    for message in &request.messages {
        match message {
            Message::User { text } => input.push(json!({ "role": "user", "content": text })),
            Message::Assistant { text, tool_calls } => {
                // An easy input message (an output message item would need
                // the id the API gave it).
                if !text.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": text,
                    }));
                }
                for call in tool_calls {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": call.call_id,
                        "name": call.tool_name,
                        "arguments": arguments_text(&call.arguments),
                    }));
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
                input.push(
                    Provider::OpenAiResponses
                        .encode_tool_result(call_id, tool_name, body, &mut budget)
                        .message,
                );
            }
        }
    }
    let mut body = json!({ "model": model, "stream": true, "input": input });
    if !request.instructions.is_empty() {
        body["instructions"] = json!(request.instructions);
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.clone());
    }
    if let Some(max) = request.max_tokens {
        body["max_output_tokens"] = json!(max);
    }
    body
}

/// Reads Responses events.
struct Responses {
    decoder: OpenAiResponsesDecoder,
    /// Whether a function call item was output.
    called: bool,
    /// Whether the model refused, and whether its text was streamed.
    refusal: Refusal,
}

/// Whether a Responses answer refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    None,
    /// `response.refusal.delta` streamed its text.
    Streamed,
    /// The refusal's text was read from its `done` event or the output.
    Read,
}

/// The refusal parts of the response's output messages, joined.
fn output_refusal(response: Option<&Value>) -> Option<String> {
    let mut text = String::new();
    let mut found = false;
    for item in response
        .and_then(|r| r.get("output"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for part in item
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if part.get("type").and_then(Value::as_str) == Some("refusal") {
                found = true;
                text.push_str(part.get("refusal").and_then(Value::as_str).unwrap_or(""));
            }
        }
    }
    found.then_some(text)
}

fn is_function_call(item: Option<&Value>) -> bool {
    item.and_then(|item| item.get("type"))
        .and_then(Value::as_str)
        == Some("function_call")
}

impl Protocol for Responses {
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
        match kind {
            "response.output_text.delta" => {
                push_text(out, event.get("delta").and_then(Value::as_str));
            }
            // A refusal's text is the answer's text; the answer ends as refused.
            "response.refusal.delta" => {
                self.refusal = Refusal::Streamed;
                push_text(out, event.get("delta").and_then(Value::as_str));
            }
            "response.refusal.done" if self.refusal == Refusal::None => {
                self.refusal = Refusal::Read;
                push_text(out, event.get("refusal").and_then(Value::as_str));
            }
            _ => {}
        }
        let result = self.decoder.decode(&event);
        if decoded(PROVIDER, &mut self.decoder, result, out) == Flow::Done {
            return Flow::Done;
        }
        let response = event.get("response");
        if let Some(usage) = response
            .and_then(|r| r.get("usage"))
            .filter(|usage| usage.is_object())
        {
            out.push(Ok(ModelEvent::Usage(Usage {
                input_tokens: count(usage, "/input_tokens"),
                output_tokens: count(usage, "/output_tokens"),
                cached_input_tokens: count(usage, "/input_tokens_details/cached_tokens"),
                reasoning_tokens: count(usage, "/output_tokens_details/reasoning_tokens"),
            })));
        }
        let finish = match kind {
            "response.output_item.added" | "response.output_item.done" => {
                self.called |= is_function_call(event.get("item"));
                return Flow::Continue;
            }
            "response.completed" => {
                if self.refusal == Refusal::None
                    && let Some(text) = output_refusal(response)
                {
                    self.refusal = Refusal::Read;
                    push_text(out, Some(&text));
                }
                let output_called = response
                    .and_then(|r| r.get("output"))
                    .and_then(Value::as_array)
                    .is_some_and(|items| items.iter().any(|item| is_function_call(Some(item))));
                if self.refusal != Refusal::None {
                    ModelFinish::Refusal
                } else if self.called || output_called {
                    ModelFinish::ToolCalls
                } else {
                    ModelFinish::Stop
                }
            }
            "response.incomplete" => {
                let reason = response
                    .and_then(|r| r.pointer("/incomplete_details/reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("incomplete");
                match reason {
                    "max_output_tokens" => ModelFinish::Length,
                    "content_filter" => ModelFinish::ContentFilter,
                    other => ModelFinish::Other(other.to_owned()),
                }
            }
            "response.failed" => {
                let message = response
                    .and_then(|r| r.get("error"))
                    .map(|error| {
                        let message = error.get("message").and_then(Value::as_str);
                        match (error.get("code").and_then(Value::as_str), message) {
                            (Some(code), Some(message)) => format!("{code}: {message}"),
                            (None, Some(message)) => message.to_owned(),
                            _ => error.to_string(),
                        }
                    })
                    .unwrap_or_else(|| "response.failed without an error".into());
                out.push(Err(ModelCallError::Decode {
                    provider: PROVIDER,
                    source: DecodeError::Provider {
                        message: cut(&message, MESSAGE_CHARS),
                    },
                }));
                return Flow::Done;
            }
            _ => return Flow::Continue,
        };
        out.push(Ok(ModelEvent::Finish(finish)));
        Flow::Done
    }

    fn announced_finish(&mut self) -> Option<ModelFinish> {
        None
    }

    fn decoder(&mut self) -> &mut dyn StreamDecoder {
        &mut self.decoder
    }
}
