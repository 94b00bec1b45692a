//! Decoders that turn a provider's streamed response into tool-call events.
//!
//! Three wire formats are supported, one decoder each:
//!
//! | decoder | wire format | a call ends at |
//! |---|---|---|
//! | [`OpenAiChatDecoder`] | OpenAI Chat Completions chunks (`choices[].delta.tool_calls[]`) | the choice's `finish_reason`, or `[DONE]` |
//! | [`OpenAiResponsesDecoder`] | OpenAI Responses API events (`response.function_call_arguments.*`) | `response.function_call_arguments.done` or `response.output_item.done` |
//! | [`AnthropicDecoder`] | Anthropic Messages events (`tool_use` content blocks) | `content_block_stop` |
//!
//! Every decoder emits, per call id and in this order: one
//! [`ToolCallEvent::Start`], zero or more [`ToolCallEvent::InputDelta`], then
//! exactly one of [`ToolCallEvent::InputEnd`] (the arguments parsed as JSON)
//! or [`ToolCallEvent::Incomplete`] (the stream stopped early, or the
//! arguments were not valid JSON). Parallel calls are routed by their index or
//! item id and never mixed. A decoder never makes up an input: an empty
//! argument string reads as `{}`, and anything that does not parse is reported
//! as `Incomplete` with the raw text.
//!
//! Feed events with [`StreamDecoder::decode`] (an already parsed JSON value)
//! or [`StreamDecoder::decode_data`] (the SSE `data` text), then call
//! [`StreamDecoder::finish`] when the stream ends. [`SseParser`] splits a
//! `text/event-stream` body that arrives in pieces, and [`decode_sse`] runs
//! the whole pipeline over a complete body.
//!
//! ```
//! use tool_core::decode::{decode_sse, AnthropicDecoder, ToolCallEvent};
//!
//! let body = concat!(
//!     "event: content_block_start\n",
//!     r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#, "\n\n",
//!     "event: content_block_delta\n",
//!     r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Paris\"}"}}"#, "\n\n",
//!     "event: content_block_stop\n",
//!     r#"data: {"type":"content_block_stop","index":0}"#, "\n\n",
//! );
//! let events = decode_sse(AnthropicDecoder::new(), body).unwrap();
//! assert_eq!(
//!     events.last(),
//!     Some(&ToolCallEvent::InputEnd {
//!         call_id: "toolu_1".into(),
//!         input: serde_json::json!({"city": "Paris"}),
//!     })
//! );
//! ```

mod anthropic;
mod openai_chat;
mod openai_responses;
mod sse;

pub use anthropic::AnthropicDecoder;
pub use openai_chat::OpenAiChatDecoder;
pub use openai_responses::OpenAiResponsesDecoder;
pub use sse::{SseEvent, SseParser};

use crate::Excerpt;
use serde_json::{Map, Value};

/// One step in the life of a streamed tool call.
///
/// For each `call_id` a decoder emits `Start`, then any number of
/// `InputDelta`, then exactly one `InputEnd` or `Incomplete`.
///
/// ```
/// use tool_core::decode::ToolCallEvent;
///
/// let event = ToolCallEvent::InputDelta { call_id: "call_1".into(), delta: "{\"a\"".into() };
/// assert_eq!(event.call_id(), "call_1");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallEvent {
    /// The model began a call to `tool_name`.
    Start {
        /// Provider-assigned id that a tool result must echo back.
        call_id: String,
        /// Name of the tool being called.
        tool_name: String,
    },
    /// More raw argument text. Concatenating every delta of a call gives the
    /// argument text; empty fragments are not reported.
    InputDelta {
        /// Call the text belongs to.
        call_id: String,
        /// The new fragment, as sent (usually not valid JSON on its own).
        delta: String,
    },
    /// The call is complete and its arguments parsed as JSON.
    InputEnd {
        /// Call that ended.
        call_id: String,
        /// The parsed arguments; `{}` when the model sent no argument text.
        input: Value,
    },
    /// The call did not finish properly; `partial_text` is all the argument
    /// text received, unparsed.
    Incomplete {
        /// Call that was cut short.
        call_id: String,
        /// Name of the tool being called.
        tool_name: String,
        /// Argument text received so far.
        partial_text: String,
        /// Why, e.g. `stop_reason: max_tokens` or `stream ended before the call finished`.
        reason: String,
    },
}

impl ToolCallEvent {
    /// The id of the call this event belongs to.
    ///
    /// ```
    /// use tool_core::decode::ToolCallEvent;
    ///
    /// let event = ToolCallEvent::Start { call_id: "call_1".into(), tool_name: "search".into() };
    /// assert_eq!(event.call_id(), "call_1");
    /// ```
    pub fn call_id(&self) -> &str {
        match self {
            Self::Start { call_id, .. }
            | Self::InputDelta { call_id, .. }
            | Self::InputEnd { call_id, .. }
            | Self::Incomplete { call_id, .. } => call_id,
        }
    }
}

/// Why an event could not be decoded.
///
/// Every variant names the event type and the field path involved, so the
/// message alone says what the provider sent wrong.
///
/// ```
/// use tool_core::decode::{AnthropicDecoder, DecodeError, StreamDecoder};
///
/// let mut decoder = AnthropicDecoder::new();
/// let err = decoder
///     .decode(&serde_json::json!({"type": "content_block_stop", "index": "1"}))
///     .unwrap_err();
/// assert!(matches!(err, DecodeError::WrongType { .. }));
/// assert_eq!(err.to_string(), "content_block_stop: `index` should be an integer, found a string");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The SSE `data` text was not JSON. The message quotes at most the
    /// first 200 characters of it.
    #[error("event data is not valid JSON ({source}): {:?}", Excerpt::of(data))]
    InvalidJson {
        /// The text as received.
        data: String,
        /// What the JSON parser reported.
        #[source]
        source: serde_json::Error,
    },
    /// A required field is absent (or `null`).
    #[error("{event}: missing field `{field}`")]
    MissingField {
        /// Event type, e.g. `content_block_start`.
        event: String,
        /// Field path, e.g. `choices[0].delta.tool_calls[1].id`.
        field: String,
    },
    /// A field has the wrong JSON type.
    #[error("{event}: `{field}` should be {expected}, found {found}")]
    WrongType {
        /// Event type, e.g. `content_block_start`.
        event: String,
        /// Field path.
        field: String,
        /// What was expected, e.g. `a string`.
        expected: &'static str,
        /// What was there, e.g. `a number`.
        found: &'static str,
    },
    /// The event is well formed but does not fit the stream so far, e.g. a
    /// delta for a call that was never started.
    #[error("{event}: {message}")]
    Unexpected {
        /// Event type.
        event: String,
        /// What did not fit.
        message: String,
    },
    /// The provider sent an error event instead of more output. Calls still
    /// open stay open, so [`StreamDecoder::finish`] reports them as
    /// [`ToolCallEvent::Incomplete`].
    #[error("provider error: {message}")]
    Provider {
        /// The provider's message (with its error type when given), cut at
        /// 200 characters.
        message: String,
    },
}

/// A decoder for one provider's stream of events.
///
/// ```
/// use tool_core::decode::{OpenAiResponsesDecoder, StreamDecoder, ToolCallEvent};
///
/// let mut decoder = OpenAiResponsesDecoder::new();
/// let mut events = Vec::new();
/// events.extend(decoder.decode_data(r#"{"type":"response.output_item.added","item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"now","arguments":""}}"#).unwrap());
/// events.extend(decoder.finish());
/// assert!(matches!(events.last(), Some(ToolCallEvent::Incomplete { .. })));
/// ```
pub trait StreamDecoder {
    /// Decodes one event (an SSE `data` payload parsed as JSON).
    ///
    /// Events that carry no tool-call information yield an empty list.
    /// Malformed events are errors, and an event that is rejected changes
    /// nothing, so decoding may go on with the next one. One exception: a
    /// call refused because an open call already has its id is remembered,
    /// so that its further fragments are skipped rather than mixed into
    /// the first call or reported again.
    ///
    /// # Errors
    ///
    /// [`DecodeError::MissingField`] / [`DecodeError::WrongType`] for a
    /// malformed event, [`DecodeError::Unexpected`] for one that does not fit
    /// the stream so far, [`DecodeError::Provider`] for a provider error event.
    ///
    /// ```
    /// use tool_core::decode::{AnthropicDecoder, StreamDecoder};
    ///
    /// let mut decoder = AnthropicDecoder::new();
    /// let events = decoder.decode(&serde_json::json!({"type": "ping"})).unwrap();
    /// assert!(events.is_empty());
    /// ```
    fn decode(&mut self, event: &Value) -> Result<Vec<ToolCallEvent>, DecodeError>;

    /// Decodes one SSE `data` text: parses it as JSON and calls
    /// [`decode`](Self::decode). Blank data yields nothing. The `[DONE]`
    /// sentinel yields nothing here; [`OpenAiChatDecoder`] overrides this to
    /// end its open calls.
    ///
    /// # Errors
    ///
    /// [`DecodeError::InvalidJson`] if `data` is not JSON, otherwise as
    /// [`decode`](Self::decode).
    ///
    /// ```
    /// use tool_core::decode::{DecodeError, OpenAiResponsesDecoder, StreamDecoder};
    ///
    /// let mut decoder = OpenAiResponsesDecoder::new();
    /// assert!(decoder.decode_data(r#"{"type":"response.created","response":{}}"#).unwrap().is_empty());
    /// assert!(matches!(decoder.decode_data("{\"type\":"), Err(DecodeError::InvalidJson { .. })));
    /// ```
    fn decode_data(&mut self, data: &str) -> Result<Vec<ToolCallEvent>, DecodeError> {
        match parse_data(data)? {
            Some(value) => self.decode(&value),
            None => Ok(Vec::new()),
        }
    }

    /// Signals the end of the stream: every call still open is reported as
    /// [`ToolCallEvent::Incomplete`], and the decoder is reset.
    ///
    /// ```
    /// use tool_core::decode::{OpenAiChatDecoder, StreamDecoder, ToolCallEvent};
    ///
    /// let mut decoder = OpenAiChatDecoder::new();
    /// decoder.decode_data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"add","arguments":"{\"a\":"}}]}}]}"#).unwrap();
    /// let events = decoder.finish();
    /// assert!(matches!(&events[..], [ToolCallEvent::Incomplete { partial_text, .. }] if partial_text == "{\"a\":"));
    /// assert!(decoder.finish().is_empty());
    /// ```
    fn finish(&mut self) -> Vec<ToolCallEvent>;
}

/// Decodes a complete `text/event-stream` body: [`SseParser`], then
/// `decoder`, then [`StreamDecoder::finish`].
///
/// # Errors
///
/// The first [`DecodeError`] any event produces; the events decoded before
/// it are dropped (drive [`SseParser`] and the decoder directly to keep them).
///
/// ```
/// use tool_core::decode::{decode_sse, OpenAiChatDecoder, ToolCallEvent};
///
/// let body = concat!(
///     r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"now","arguments":""}}]},"finish_reason":null}]}"#, "\n\n",
///     r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#, "\n\n",
///     "data: [DONE]\n\n",
/// );
/// let events = decode_sse(OpenAiChatDecoder::new(), body).unwrap();
/// assert_eq!(events, vec![
///     ToolCallEvent::Start { call_id: "call_1".into(), tool_name: "now".into() },
///     ToolCallEvent::InputEnd { call_id: "call_1".into(), input: serde_json::json!({}) },
/// ]);
/// ```
pub fn decode_sse<D: StreamDecoder>(
    mut decoder: D,
    body: &str,
) -> Result<Vec<ToolCallEvent>, DecodeError> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    for sse in parser.push(body).into_iter().chain(parser.finish()) {
        events.extend(decoder.decode_data(&sse.data)?);
    }
    events.extend(decoder.finish());
    Ok(events)
}

/// The `[DONE]` sentinel that ends OpenAI Chat Completions streams.
const DONE: &str = "[DONE]";

/// Parses SSE data; `None` for blank data and for `[DONE]`.
fn parse_data(data: &str) -> Result<Option<Value>, DecodeError> {
    let trimmed = data.trim();
    if trimmed.is_empty() || trimmed == DONE {
        return Ok(None);
    }
    serde_json::from_str(trimmed)
        .map(Some)
        .map_err(|source| DecodeError::InvalidJson {
            data: data.to_owned(),
            source,
        })
}

/// A call between its start and its end, shared by all decoders.
#[derive(Debug)]
struct PendingCall {
    call_id: String,
    tool_name: String,
    text: String,
}

impl PendingCall {
    /// Registers a new call, returning it with its `Start` event.
    fn start(call_id: &str, tool_name: &str) -> (Self, ToolCallEvent) {
        let call = Self {
            call_id: call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            text: String::new(),
        };
        let event = ToolCallEvent::Start {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
        };
        (call, event)
    }

    /// Appends argument text; empty fragments produce no event.
    fn push(&mut self, delta: &str, out: &mut Vec<ToolCallEvent>) {
        if delta.is_empty() {
            return;
        }
        self.text.push_str(delta);
        out.push(ToolCallEvent::InputDelta {
            call_id: self.call_id.clone(),
            delta: delta.to_owned(),
        });
    }

    /// Ends the call normally: `InputEnd` if the text parses (empty reads as
    /// `{}`), otherwise `Incomplete` so no input is ever guessed.
    fn end(self) -> ToolCallEvent {
        if self.text.trim().is_empty() {
            return ToolCallEvent::InputEnd {
                call_id: self.call_id,
                input: Value::Object(Map::new()),
            };
        }
        match serde_json::from_str(&self.text) {
            Ok(input) => ToolCallEvent::InputEnd {
                call_id: self.call_id,
                input,
            },
            Err(err) => {
                let reason = format!("arguments are not valid JSON: {err}");
                self.incomplete(reason)
            }
        }
    }

    /// Ends the call as cut short.
    fn incomplete(self, reason: impl Into<String>) -> ToolCallEvent {
        ToolCallEvent::Incomplete {
            call_id: self.call_id,
            tool_name: self.tool_name,
            partial_text: self.text,
            reason: reason.into(),
        }
    }
}

/// Reason used by every decoder's `finish` for calls still open.
const STREAM_ENDED: &str = "stream ended before the call finished";

/// Typed, path-tracking access to a JSON object, so errors name the field.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    event: &'a str,
    /// Path of this object from the event root; empty at the root.
    path: String,
}

impl<'a> Fields<'a> {
    /// Wraps an event root, which must be an object.
    fn root(value: &'a Value, event: &'a str) -> Result<Self, DecodeError> {
        match value {
            Value::Object(map) => Ok(Self {
                map,
                event,
                path: String::new(),
            }),
            other => Err(DecodeError::WrongType {
                event: event.to_owned(),
                field: "(event)".to_owned(),
                expected: "an object",
                found: type_name(other),
            }),
        }
    }

    fn field_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn missing(&self, key: &str) -> DecodeError {
        DecodeError::MissingField {
            event: self.event.to_owned(),
            field: self.field_path(key),
        }
    }

    fn wrong(&self, key: &str, expected: &'static str, found: &Value) -> DecodeError {
        DecodeError::WrongType {
            event: self.event.to_owned(),
            field: self.field_path(key),
            expected,
            found: type_name(found),
        }
    }

    /// The value at `key`, treating `null` as absent (providers send both).
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, DecodeError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    fn str(&self, key: &str) -> Result<&'a str, DecodeError> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, DecodeError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an integer", v)),
        }
    }

    fn u64(&self, key: &str) -> Result<u64, DecodeError> {
        self.opt_u64(key)?.ok_or_else(|| self.missing(key))
    }

    fn opt_obj(&self, key: &str) -> Result<Option<Fields<'a>>, DecodeError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Fields {
                map,
                event: self.event,
                path: self.field_path(key),
            })),
            Some(other) => Err(self.wrong(key, "an object", other)),
        }
    }

    fn obj(&self, key: &str) -> Result<Fields<'a>, DecodeError> {
        self.opt_obj(key)?.ok_or_else(|| self.missing(key))
    }

    /// The elements of an optional array of objects, each with its indexed path.
    fn opt_objects(&self, key: &str) -> Result<Vec<Fields<'a>>, DecodeError> {
        let items = match self.get(key) {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => return Err(self.wrong(key, "an array", other)),
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let path = format!("{}[{i}]", self.field_path(key));
                match item {
                    Value::Object(map) => Ok(Fields {
                        map,
                        event: self.event,
                        path,
                    }),
                    other => Err(DecodeError::WrongType {
                        event: self.event.to_owned(),
                        field: path,
                        expected: "an object",
                        found: type_name(other),
                    }),
                }
            })
            .collect()
    }

    /// Like [`opt_objects`](Self::opt_objects) but the array must be present.
    fn objects(&self, key: &str) -> Result<Vec<Fields<'a>>, DecodeError> {
        if self.get(key).is_none() {
            return Err(self.missing(key));
        }
        self.opt_objects(key)
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Message of a provider `error` payload: `{"type": "...", "message": "..."}`.
fn provider_error(error: Option<&Value>) -> DecodeError {
    let error = error.and_then(Value::as_object);
    let field = |key: &str| error.and_then(|e| e.get(key)).and_then(Value::as_str);
    // `code` is the more specific of the two where both exist (Responses API).
    let message = match (field("code").or(field("type")), field("message")) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (None, Some(message)) => message.to_owned(),
        (Some(kind), None) => kind.to_owned(),
        (None, None) => "error event without a message".to_owned(),
    };
    let message = Excerpt::of(&message).to_string();
    DecodeError::Provider { message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_arguments_read_as_empty_object() {
        let (call, _) = PendingCall::start("c", "t");
        assert_eq!(
            call.end(),
            ToolCallEvent::InputEnd {
                call_id: "c".into(),
                input: json!({})
            }
        );
    }

    #[test]
    fn invalid_arguments_are_incomplete_not_guessed() {
        let (mut call, _) = PendingCall::start("c", "t");
        call.push("{\"a\": 1", &mut Vec::new());
        match call.end() {
            ToolCallEvent::Incomplete {
                partial_text,
                reason,
                ..
            } => {
                assert_eq!(partial_text, "{\"a\": 1");
                assert!(
                    reason.starts_with("arguments are not valid JSON"),
                    "{reason}"
                );
            }
            other => panic!("expected Incomplete, got {other:?}"),
        }
    }

    #[test]
    fn decode_data_rejects_non_json_and_skips_blank_and_done() {
        let mut decoder = AnthropicDecoder::new();
        assert!(decoder.decode_data("  ").unwrap().is_empty());
        assert!(decoder.decode_data("[DONE]").unwrap().is_empty());
        let err = decoder.decode_data("{nope").unwrap_err();
        assert!(matches!(err, DecodeError::InvalidJson { .. }), "{err}");
    }

    #[test]
    fn non_object_event_is_an_error() {
        let err = OpenAiChatDecoder::new().decode(&json!([1])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "chat.completion.chunk: `(event)` should be an object, found an array"
        );
    }

    #[test]
    fn an_error_about_a_huge_event_quotes_only_its_start() {
        // The hardening issue: a malformed 50 MB event made a 52 MB message.
        let huge = format!("{{\"type\": \"{}", "x".repeat(50 * 1024 * 1024));
        let error = parse_data(&huge).unwrap_err();
        let message = error.to_string();
        assert!(message.len() < 1_000, "{} bytes", message.len());
        assert!(
            message.contains(&format!("({} bytes in all)", huge.len())),
            "{message}"
        );
        let provider = provider_error(Some(&json!({ "message": "y".repeat(100_000) })));
        assert!(provider.to_string().len() < 1_000);
        // Short data is quoted whole, as before.
        assert!(
            parse_data("{nope")
                .unwrap_err()
                .to_string()
                .ends_with(r#": "{nope""#)
        );
    }

    #[test]
    fn provider_error_message_includes_type() {
        let err = provider_error(Some(
            &json!({"type": "overloaded_error", "message": "busy"}),
        ));
        assert_eq!(err.to_string(), "provider error: overloaded_error: busy");
        assert_eq!(
            provider_error(None).to_string(),
            "provider error: error event without a message"
        );
    }
}

/// Helpers shared by the decoders' unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use serde_json::Value;

    use super::{StreamDecoder, ToolCallEvent};

    /// Decodes `events` in order; every event must decode.
    pub(crate) fn run<D: StreamDecoder>(decoder: &mut D, events: &[Value]) -> Vec<ToolCallEvent> {
        events
            .iter()
            .flat_map(|e| decoder.decode(e).unwrap())
            .collect()
    }

    /// The `InputEnd` event of `id`.
    pub(crate) fn end(id: &str, input: Value) -> ToolCallEvent {
        ToolCallEvent::InputEnd {
            call_id: id.into(),
            input,
        }
    }
}
