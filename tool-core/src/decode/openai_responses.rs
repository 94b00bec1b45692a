//! OpenAI Responses API streaming (`response.*` events).

use std::collections::HashSet;

use serde_json::Value;

use crate::Excerpt;

use super::{
    DecodeError, Fields, PendingCall, STREAM_ENDED, StreamDecoder, ToolCallEvent, provider_error,
};

/// Decoder for OpenAI Responses API stream events.
///
/// `response.output_item.added` with an item of type `function_call` starts a
/// call (`id`, `call_id` and `name` are required; the events carry
/// `call_id`, which a tool result must echo). `response.function_call_arguments.delta`
/// routes by `item_id`. The call ends at `response.function_call_arguments.done`
/// or `response.output_item.done`, whichever comes first; the full
/// `arguments` text they carry is authoritative (any part the deltas missed
/// is emitted as a last [`ToolCallEvent::InputDelta`]). An `output_item.done`
/// for a call never announced by `output_item.added` yields the whole call.
/// `response.completed`, `response.incomplete` or `response.failed` while a
/// call is open reports it as [`ToolCallEvent::Incomplete`]; an `error` event
/// is a [`DecodeError::Provider`]. Other item types are ignored.
///
/// ```
/// use tool_core::decode::{OpenAiResponsesDecoder, StreamDecoder, ToolCallEvent};
/// use serde_json::json;
///
/// let mut decoder = OpenAiResponsesDecoder::new();
/// let mut events = Vec::new();
/// for event in [
///     json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": ""}}),
///     json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"city\":\"Rome\"}"}),
///     json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": "{\"city\":\"Rome\"}"}),
/// ] {
///     events.extend(decoder.decode(&event).unwrap());
/// }
/// assert_eq!(events[2], ToolCallEvent::InputEnd { call_id: "call_1".into(), input: json!({"city": "Rome"}) });
/// ```
#[derive(Debug, Default)]
pub struct OpenAiResponsesDecoder {
    /// Open calls with their item id, in the order they started.
    open: Vec<(String, PendingCall)>,
    /// Item ids already ended, so the second of the two "done" events is
    /// recognised rather than rejected.
    ended: HashSet<String>,
}

impl OpenAiResponsesDecoder {
    /// A decoder at the start of a stream.
    ///
    /// ```
    /// let decoder = tool_core::decode::OpenAiResponsesDecoder::new();
    /// # drop(decoder);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn position(&self, item_id: &str) -> Option<usize> {
        self.open.iter().position(|(id, _)| id == item_id)
    }

    /// Ends the call for `item_id` with the final `arguments`, if given.
    fn end(&mut self, at: usize, arguments: Option<&str>, out: &mut Vec<ToolCallEvent>) {
        let (item_id, mut call) = self.open.remove(at);
        // An empty final text next to real deltas is a placeholder, not an
        // override; trusting it would turn a real input into `{}`.
        if let Some(full) = arguments.filter(|full| !full.is_empty()) {
            match full.strip_prefix(call.text.as_str()) {
                Some(rest) => call.push(rest, out),
                // The deltas disagree with the final text; the final text wins.
                None => call.text = full.to_owned(),
            }
        }
        out.push(call.end());
        self.ended.insert(item_id);
    }

    /// Reports every open call as cut short and resets.
    fn cut_all(&mut self, reason: &str) -> Vec<ToolCallEvent> {
        self.ended.clear();
        std::mem::take(&mut self.open)
            .into_iter()
            .map(|(_, call)| call.incomplete(reason))
            .collect()
    }

    fn unknown_item(event: &str, item_id: &str) -> DecodeError {
        DecodeError::Unexpected {
            event: event.to_owned(),
            message: format!("item {} is not an open function call", Excerpt::of(item_id)),
        }
    }
}

/// The fields of a `function_call` output item.
struct FunctionCallItem<'a> {
    id: &'a str,
    call_id: &'a str,
    name: &'a str,
    arguments: Option<&'a str>,
}

/// Reads `item` if it is a function call; other item types give `None`.
fn function_call_item<'a>(root: &Fields<'a>) -> Result<Option<FunctionCallItem<'a>>, DecodeError> {
    let item = root.obj("item")?;
    if item.str("type")? != "function_call" {
        return Ok(None);
    }
    Ok(Some(FunctionCallItem {
        id: item.str("id")?,
        call_id: item.str("call_id")?,
        name: item.str("name")?,
        arguments: item.opt_str("arguments")?,
    }))
}

impl StreamDecoder for OpenAiResponsesDecoder {
    fn decode(&mut self, event: &Value) -> Result<Vec<ToolCallEvent>, DecodeError> {
        let kind = Fields::root(event, "responses event")?.str("type")?;
        let root = Fields::root(event, kind)?;
        let mut out = Vec::new();
        match kind {
            "response.output_item.added" => {
                let Some(item) = function_call_item(&root)? else {
                    return Ok(out);
                };
                if self.position(item.id).is_some() || self.ended.contains(item.id) {
                    return Err(DecodeError::Unexpected {
                        event: kind.to_owned(),
                        message: format!("function call item {} added twice", Excerpt::of(item.id)),
                    });
                }
                if let Some((other, _)) = self.open.iter().find(|(_, c)| c.call_id == item.call_id)
                {
                    return Err(DecodeError::Unexpected {
                        event: kind.to_owned(),
                        message: format!(
                            "call id {:?} of item {} is already used by open item {}; item {} is ignored",
                            Excerpt::of(item.call_id),
                            Excerpt::of(item.id),
                            Excerpt::of(other),
                            Excerpt::of(item.id)
                        ),
                    });
                }
                let (mut call, start) = PendingCall::start(item.call_id, item.name);
                out.push(start);
                call.push(item.arguments.unwrap_or(""), &mut out);
                self.open.push((item.id.to_owned(), call));
            }
            "response.function_call_arguments.delta" => {
                let item_id = root.str("item_id")?;
                let delta = root.str("delta")?;
                let at = self
                    .position(item_id)
                    .ok_or_else(|| Self::unknown_item(kind, item_id))?;
                self.open[at].1.push(delta, &mut out);
            }
            "response.function_call_arguments.done" => {
                let item_id = root.str("item_id")?;
                let arguments = root.opt_str("arguments")?;
                match self.position(item_id) {
                    Some(at) => self.end(at, arguments, &mut out),
                    None if self.ended.contains(item_id) => {}
                    None => return Err(Self::unknown_item(kind, item_id)),
                }
            }
            "response.output_item.done" => {
                let Some(item) = function_call_item(&root)? else {
                    return Ok(out);
                };
                match self.position(item.id) {
                    Some(at) => self.end(at, item.arguments, &mut out),
                    None if self.ended.contains(item.id) => {}
                    None => {
                        // Never announced: the done item holds the whole call.
                        let (call, start) = PendingCall::start(item.call_id, item.name);
                        out.push(start);
                        self.open.push((item.id.to_owned(), call));
                        self.end(self.open.len() - 1, item.arguments, &mut out);
                    }
                }
            }
            "response.completed" => {
                out = self.cut_all("response.completed before the call's arguments were done");
            }
            "response.incomplete" => {
                let why = root
                    .opt_obj("response")?
                    .and_then(|r| r.get("incomplete_details"))
                    .and_then(|d| d.get("reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                out = self.cut_all(&format!("response.incomplete: {}", Excerpt::of(why)));
            }
            "response.failed" => {
                let why = root
                    .opt_obj("response")?
                    .and_then(|r| r.get("error"))
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("no message given");
                out = self.cut_all(&format!("response.failed: {}", Excerpt::of(why)));
            }
            "error" => return Err(provider_error(Some(event))),
            // Lifecycle, text, reasoning and other tools' events carry no function-call data.
            _ => {}
        }
        Ok(out)
    }

    fn finish(&mut self) -> Vec<ToolCallEvent> {
        self.cut_all(STREAM_ENDED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::test_support::{end, run};
    use serde_json::json;

    fn added(item_id: &str, call_id: &str) -> Value {
        json!({"type": "response.output_item.added", "output_index": 0, "item": {
            "type": "function_call", "id": item_id, "call_id": call_id, "name": "t",
            "arguments": "", "status": "in_progress"}})
    }

    fn delta(item_id: &str, text: &str) -> Value {
        json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "delta": text})
    }

    fn args_done(item_id: &str, text: &str) -> Value {
        json!({"type": "response.function_call_arguments.done", "item_id": item_id, "arguments": text})
    }

    fn item_done(item_id: &str, call_id: &str, text: &str) -> Value {
        json!({"type": "response.output_item.done", "item": {
            "type": "function_call", "id": item_id, "call_id": call_id, "name": "t",
            "arguments": text, "status": "completed"}})
    }

    #[test]
    fn interleaved_calls_route_by_item_id() {
        let mut decoder = OpenAiResponsesDecoder::new();
        let events = run(
            &mut decoder,
            &[
                added("fc_a", "call_a"),
                added("fc_b", "call_b"),
                delta("fc_b", "{\"b\":"),
                delta("fc_a", "{\"a\":"),
                delta("fc_a", "1}"),
                delta("fc_b", "2}"),
                args_done("fc_b", "{\"b\":2}"),
                item_done("fc_b", "call_b", "{\"b\":2}"),
                args_done("fc_a", "{\"a\":1}"),
                item_done("fc_a", "call_a", "{\"a\":1}"),
                json!({"type": "response.completed", "response": {}}),
            ],
        );
        assert_eq!(events.len(), 8);
        assert_eq!(events[6], end("call_b", json!({"b": 2})));
        assert_eq!(events[7], end("call_a", json!({"a": 1})));
    }

    #[test]
    fn output_item_done_alone_ends_the_call() {
        let mut decoder = OpenAiResponsesDecoder::new();
        let events = run(
            &mut decoder,
            &[
                added("fc", "call"),
                delta("fc", "{}"),
                item_done("fc", "call", "{}"),
            ],
        );
        assert_eq!(events[2], end("call", json!({})));
    }

    #[test]
    fn done_text_fills_in_missing_deltas_and_wins_on_conflict() {
        let mut decoder = OpenAiResponsesDecoder::new();
        let events = run(
            &mut decoder,
            &[
                added("fc", "call"),
                delta("fc", "{\"a\""),
                args_done("fc", "{\"a\":1}"),
            ],
        );
        assert_eq!(
            events[2],
            ToolCallEvent::InputDelta {
                call_id: "call".into(),
                delta: ":1}".into()
            }
        );
        assert_eq!(events[3], end("call", json!({"a": 1})));

        let events = run(
            &mut decoder,
            &[
                added("fc2", "c2"),
                delta("fc2", "garbage"),
                args_done("fc2", "{\"b\":2}"),
            ],
        );
        assert_eq!(events[2], end("c2", json!({"b": 2})));
    }

    #[test]
    fn empty_done_text_does_not_erase_deltas() {
        let mut decoder = OpenAiResponsesDecoder::new();
        let events = run(
            &mut decoder,
            &[
                added("fc", "call"),
                delta("fc", "{\"a\":1}"),
                item_done("fc", "call", ""),
            ],
        );
        assert_eq!(events[2], end("call", json!({"a": 1})));
    }

    #[test]
    fn unannounced_done_item_is_a_whole_call() {
        let mut decoder = OpenAiResponsesDecoder::new();
        let events = run(&mut decoder, &[item_done("fc", "call", "{\"x\":true}")]);
        assert_eq!(events.len(), 3);
        assert_eq!(events[2], end("call", json!({"x": true})));
    }

    #[test]
    fn empty_arguments_read_as_empty_object() {
        let mut decoder = OpenAiResponsesDecoder::new();
        let events = run(&mut decoder, &[added("fc", "call"), args_done("fc", "")]);
        assert_eq!(
            events,
            vec![
                ToolCallEvent::Start {
                    call_id: "call".into(),
                    tool_name: "t".into()
                },
                end("call", json!({})),
            ]
        );
    }

    #[test]
    fn incomplete_response_cuts_open_calls() {
        let mut decoder = OpenAiResponsesDecoder::new();
        let events = run(
            &mut decoder,
            &[
                added("fc", "call"),
                delta("fc", "{\"q\": \"lo"),
                json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
            ],
        );
        assert_eq!(
            events[2],
            ToolCallEvent::Incomplete {
                call_id: "call".into(),
                tool_name: "t".into(),
                partial_text: "{\"q\": \"lo".into(),
                reason: "response.incomplete: max_output_tokens".into(),
            }
        );
    }

    #[test]
    fn other_items_are_ignored() {
        let mut decoder = OpenAiResponsesDecoder::new();
        let message =
            json!({"type": "response.output_item.added", "item": {"type": "message", "id": "msg"}});
        let text = json!({"type": "response.output_text.delta", "item_id": "msg", "delta": "hi"});
        assert!(run(&mut decoder, &[message, text]).is_empty());
    }

    #[test]
    fn malformed_events_are_errors() {
        let mut decoder = OpenAiResponsesDecoder::new();
        run(&mut decoder, &[added("fc", "call")]);
        let cases = [
            (json!({}), "responses event: missing field `type`"),
            (
                json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": "x", "name": "t"}}),
                "response.output_item.added: missing field `item.call_id`",
            ),
            (
                added("fc", "call"),
                "response.output_item.added: function call item fc added twice",
            ),
            (
                json!({"type": "response.function_call_arguments.delta", "delta": "{"}),
                "response.function_call_arguments.delta: missing field `item_id`",
            ),
            (
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc", "delta": ["{"]}),
                "response.function_call_arguments.delta: `delta` should be a string, found an array",
            ),
            (
                delta("nope", "{"),
                "response.function_call_arguments.delta: item nope is not an open function call",
            ),
            (
                args_done("nope", "{}"),
                "response.function_call_arguments.done: item nope is not an open function call",
            ),
            (
                json!({"type": "response.output_item.done"}),
                "response.output_item.done: missing field `item`",
            ),
            (
                json!({"type": "error", "code": "server_error", "message": "oops"}),
                "provider error: server_error: oops",
            ),
        ];
        for (event, message) in cases {
            assert_eq!(decoder.decode(&event).unwrap_err().to_string(), message);
        }
        assert!(matches!(
            decoder.finish().as_slice(),
            [ToolCallEvent::Incomplete { call_id, .. }] if call_id == "call"
        ));
    }
}
