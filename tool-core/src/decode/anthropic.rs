//! Anthropic Messages streaming (`content_block_*` events).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Excerpt;

use super::{
    DecodeError, Fields, PendingCall, STREAM_ENDED, StreamDecoder, ToolCallEvent, provider_error,
};

/// Decoder for Anthropic Messages stream events.
///
/// A `content_block_start` whose block has type `tool_use` starts a call
/// (its `id` and `name` are required); `input_json_delta` deltas for that
/// block index add `partial_json`; `content_block_stop` ends it. Other blocks
/// (text, thinking, and server-run tools such as `server_tool_use`) are
/// tracked only so their deltas are not mistaken for errors. A
/// `message_delta` with a `stop_reason` or a `message_stop` while a tool block
/// is still open reports it as [`ToolCallEvent::Incomplete`] (this is how a
/// `max_tokens` cut shows up). An `error` event is a
/// [`DecodeError::Provider`]. The SSE `event:` name is not needed: every
/// payload repeats it in `type`.
///
/// ```
/// use tool_core::decode::{AnthropicDecoder, StreamDecoder, ToolCallEvent};
/// use serde_json::json;
///
/// let mut decoder = AnthropicDecoder::new();
/// let mut events = Vec::new();
/// for event in [
///     json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "make_file", "input": {}}}),
///     json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"name\": \"ta"}}),
///     json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}}),
/// ] {
///     events.extend(decoder.decode(&event).unwrap());
/// }
/// assert_eq!(events.last(), Some(&ToolCallEvent::Incomplete {
///     call_id: "toolu_1".into(),
///     tool_name: "make_file".into(),
///     partial_text: "{\"name\": \"ta".into(),
///     reason: "message ended (stop_reason: max_tokens) before content_block_stop".into(),
/// }));
/// ```
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    /// Open content blocks by index; `None` for blocks that are not tool calls.
    blocks: BTreeMap<u64, Option<PendingCall>>,
}

impl AnthropicDecoder {
    /// A decoder at the start of a stream.
    ///
    /// ```
    /// let decoder = tool_core::decode::AnthropicDecoder::new();
    /// # drop(decoder);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The open block whose tool call has id `call_id`.
    fn block_of(&self, call_id: &str) -> Option<u64> {
        self.blocks
            .iter()
            .find(|(_, call)| call.as_ref().is_some_and(|c| c.call_id == call_id))
            .map(|(index, _)| *index)
    }

    /// Reports every open tool block as cut short and forgets all blocks.
    fn cut_all(&mut self, reason: &str) -> Vec<ToolCallEvent> {
        std::mem::take(&mut self.blocks)
            .into_values()
            .flatten()
            .map(|call| call.incomplete(reason))
            .collect()
    }

    fn unexpected(event: &str, message: String) -> DecodeError {
        DecodeError::Unexpected {
            event: event.to_owned(),
            message,
        }
    }
}

impl StreamDecoder for AnthropicDecoder {
    fn decode(&mut self, event: &Value) -> Result<Vec<ToolCallEvent>, DecodeError> {
        let kind = Fields::root(event, "anthropic event")?.str("type")?;
        let root = Fields::root(event, kind)?;
        let mut out = Vec::new();
        match kind {
            "content_block_start" => {
                let index = root.u64("index")?;
                let block = root.obj("content_block")?;
                let block_type = block.str("type")?;
                if self.blocks.contains_key(&index) {
                    return Err(Self::unexpected(
                        kind,
                        format!("content block {index} started again before content_block_stop"),
                    ));
                }
                let call = if block_type == "tool_use" {
                    let (id, name) = (block.str("id")?, block.str("name")?);
                    if let Some(other) = self.block_of(id) {
                        // The block is kept (ignored), so its deltas and stop
                        // are not reported as errors too; the first call goes on.
                        self.blocks.insert(index, None);
                        return Err(Self::unexpected(
                            kind,
                            format!(
                                "tool call id {:?} of content block {index} is already used by open block {other}; block {index} is ignored",
                                Excerpt::of(id)
                            ),
                        ));
                    }
                    let (mut call, start) = PendingCall::start(id, name);
                    out.push(start);
                    // Streams send `input: {}` and fill it by deltas; a full
                    // input here (a replayed message) becomes the call's text.
                    match block.get("input") {
                        None => {}
                        Some(Value::Object(map)) if map.is_empty() => {}
                        Some(input @ Value::Object(_)) => call.push(&input.to_string(), &mut out),
                        Some(other) => {
                            return Err(block.wrong("input", "an object", other));
                        }
                    }
                    Some(call)
                } else {
                    None
                };
                self.blocks.insert(index, call);
            }
            "content_block_delta" => {
                let index = root.u64("index")?;
                let delta = root.obj("delta")?;
                let delta_type = delta.str("type")?;
                let Some(block) = self.blocks.get_mut(&index) else {
                    return Err(Self::unexpected(
                        kind,
                        format!("content block {index} is not open"),
                    ));
                };
                if let (Some(call), "input_json_delta") = (block, delta_type) {
                    let partial = delta.str("partial_json")?;
                    call.push(partial, &mut out);
                }
            }
            "content_block_stop" => {
                let index = root.u64("index")?;
                match self.blocks.remove(&index) {
                    None => {
                        return Err(Self::unexpected(
                            kind,
                            format!("content block {index} is not open"),
                        ));
                    }
                    Some(call) => out.extend(call.map(PendingCall::end)),
                }
            }
            "message_delta" => {
                let delta = root.obj("delta")?;
                if let Some(stop_reason) = delta.opt_str("stop_reason")? {
                    let reason = format!(
                        "message ended (stop_reason: {}) before content_block_stop",
                        Excerpt::of(stop_reason)
                    );
                    out = self.cut_all(&reason);
                }
            }
            "message_stop" => out = self.cut_all("message_stop came before content_block_stop"),
            "error" => return Err(provider_error(root.get("error"))),
            // message_start, ping, and event types added later carry no tool-call data.
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

    fn tool_start(index: u64, id: &str) -> Value {
        json!({"type": "content_block_start", "index": index,
               "content_block": {"type": "tool_use", "id": id, "name": "t", "input": {}}})
    }

    fn json_delta(index: u64, text: &str) -> Value {
        json!({"type": "content_block_delta", "index": index,
               "delta": {"type": "input_json_delta", "partial_json": text}})
    }

    fn stop(index: u64) -> Value {
        json!({"type": "content_block_stop", "index": index})
    }

    #[test]
    fn interleaved_blocks_route_by_index() {
        let mut decoder = AnthropicDecoder::new();
        let events = run(
            &mut decoder,
            &[
                tool_start(1, "a"),
                tool_start(2, "b"),
                json_delta(2, "{\"y\":"),
                json_delta(1, "{\"x\":"),
                json_delta(1, "1}"),
                json_delta(2, "2}"),
                stop(2),
                stop(1),
            ],
        );
        assert_eq!(events[6], end("b", json!({"y": 2})));
        assert_eq!(events[7], end("a", json!({"x": 1})));
    }

    #[test]
    fn text_blocks_and_pings_are_ignored() {
        let mut decoder = AnthropicDecoder::new();
        let events = run(
            &mut decoder,
            &[
                json!({"type": "message_start", "message": {}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "ping"}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
                stop(0),
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
                json!({"type": "message_stop"}),
            ],
        );
        assert!(events.is_empty());
    }

    #[test]
    fn empty_input_is_empty_object_without_deltas() {
        let mut decoder = AnthropicDecoder::new();
        let events = run(
            &mut decoder,
            &[tool_start(0, "a"), json_delta(0, ""), stop(0)],
        );
        assert_eq!(events.len(), 2);
        assert_eq!(events[1], end("a", json!({})));
    }

    #[test]
    fn full_input_in_block_start_is_used() {
        let mut decoder = AnthropicDecoder::new();
        let start = json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "a", "name": "t", "input": {"k": [1]}}});
        let events = run(&mut decoder, &[start, stop(0)]);
        assert_eq!(events[2], end("a", json!({"k": [1]})));
    }

    #[test]
    fn message_stop_without_block_stop_is_incomplete() {
        let mut decoder = AnthropicDecoder::new();
        let events = run(
            &mut decoder,
            &[
                tool_start(0, "a"),
                json_delta(0, "{\"a\": 1}"),
                json!({"type": "message_stop"}),
            ],
        );
        assert!(
            matches!(&events[2], ToolCallEvent::Incomplete { partial_text, .. } if partial_text == "{\"a\": 1}")
        );
        assert!(decoder.finish().is_empty());
    }

    #[test]
    fn finish_reports_open_calls_in_index_order() {
        let mut decoder = AnthropicDecoder::new();
        run(&mut decoder, &[tool_start(3, "c"), tool_start(1, "a")]);
        let ids: Vec<_> = decoder
            .finish()
            .iter()
            .map(|e| e.call_id().to_owned())
            .collect();
        assert_eq!(ids, ["a", "c"]);
    }

    #[test]
    fn malformed_events_are_errors() {
        let mut decoder = AnthropicDecoder::new();
        run(&mut decoder, &[tool_start(0, "a")]);
        let cases = [
            (json!({"index": 0}), "anthropic event: missing field `type`"),
            (
                json!("ping"),
                "anthropic event: `(event)` should be an object, found a string",
            ),
            (
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "name": "t"}}),
                "content_block_start: missing field `content_block.id`",
            ),
            (
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "b", "name": "t", "input": "{}"}}),
                "content_block_start: `content_block.input` should be an object, found a string",
            ),
            (
                tool_start(0, "z"),
                "content_block_start: content block 0 started again before content_block_stop",
            ),
            (
                json_delta(5, "{}"),
                "content_block_delta: content block 5 is not open",
            ),
            (
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": 1}}),
                "content_block_delta: `delta.partial_json` should be a string, found a number",
            ),
            (
                json!({"type": "content_block_delta", "index": 0}),
                "content_block_delta: missing field `delta`",
            ),
            (stop(9), "content_block_stop: content block 9 is not open"),
            (
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                "provider error: overloaded_error: Overloaded",
            ),
        ];
        for (event, message) in cases {
            assert_eq!(decoder.decode(&event).unwrap_err().to_string(), message);
        }
        // None of the rejected events disturbed the open call.
        assert_eq!(
            run(&mut decoder, &[json_delta(0, "{}"), stop(0)]),
            vec![
                ToolCallEvent::InputDelta {
                    call_id: "a".into(),
                    delta: "{}".into()
                },
                end("a", json!({})),
            ]
        );
    }
}
