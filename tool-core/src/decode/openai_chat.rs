//! OpenAI Chat Completions streaming (`chat.completion.chunk`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::Excerpt;

use super::{
    DONE, DecodeError, Fields, PendingCall, STREAM_ENDED, StreamDecoder, ToolCallEvent, parse_data,
    provider_error,
};

/// Name used for chunks in error messages.
const EVENT: &str = "chat.completion.chunk";

/// Where the keys of calls sent without `index` begin: above any index a
/// provider numbers its calls with, so the two never meet.
const UNINDEXED: u64 = 1 << 48;

/// Finish reasons that mean the output was cut off, not completed.
const TRUNCATING: [&str; 2] = ["length", "content_filter"];

/// Decoder for OpenAI Chat Completions chunks.
///
/// Tool-call fragments are routed by `(choice index, tool_calls[].index)`.
/// The first fragment of a call must carry `id` and `function.name`; later
/// ones add `function.arguments`. A call ends when its choice gets a
/// `finish_reason`, or at `[DONE]` (see
/// [`decode_data`](StreamDecoder::decode_data)); a new index starting does
/// not end the previous call. `finish_reason` `length` or `content_filter`
/// reports the open calls as [`ToolCallEvent::Incomplete`]. If a fragment
/// brings a different `id` for an index that is still open (some
/// OpenAI-compatible servers reuse index 0), the open call ends there and a
/// new one starts. Calls sent without `index` (as Gemini's OpenAI-compatible
/// endpoint sends them) are routed by `id`: a fragment with the id of an
/// open call of its choice continues it, one with a new id starts a call,
/// and one with neither continues the choice's last index-less call.
/// Chunks with `choices: []` (usage) carry nothing to decode; a chunk with
/// an `error` object is a [`DecodeError::Provider`].
///
/// ```
/// use tool_core::decode::{OpenAiChatDecoder, StreamDecoder, ToolCallEvent};
///
/// let mut decoder = OpenAiChatDecoder::new();
/// let mut events = Vec::new();
/// for data in [
///     r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"add","arguments":""}}]}}]}"#,
///     r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}"#,
///     r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
///     "[DONE]",
/// ] {
///     events.extend(decoder.decode_data(data).unwrap());
/// }
/// events.extend(decoder.finish());
/// assert_eq!(events.len(), 3);
/// assert_eq!(events[2], ToolCallEvent::InputEnd { call_id: "call_1".into(), input: serde_json::json!({"a": 1}) });
/// ```
#[derive(Debug, Default)]
pub struct OpenAiChatDecoder {
    /// Open calls by (choice index, tool call index); ordered so `finish`
    /// reports them deterministically.
    open: BTreeMap<(u64, u64), PendingCall>,
    /// Tool-call indexes whose call was refused (its id was already used by
    /// an open call): their further fragments are skipped, not errors.
    ignored: BTreeSet<(u64, u64)>,
    /// How many calls were sent without `index` (the next one's key is
    /// [`UNINDEXED`] plus this).
    unindexed: u64,
}

/// Why a chunk was rejected: a decode error, or a call whose id another
/// open call already has (its index is then ignored).
enum Rejected {
    Decode(DecodeError),
    Duplicate((u64, u64), DecodeError),
}

impl From<DecodeError> for Rejected {
    fn from(error: DecodeError) -> Self {
        Rejected::Decode(error)
    }
}

/// One validated `tool_calls[]` entry.
struct Fragment<'a> {
    key: (u64, u64),
    id: Option<&'a str>,
    name: Option<&'a str>,
    arguments: &'a str,
}

impl OpenAiChatDecoder {
    /// A decoder at the start of a stream.
    ///
    /// ```
    /// let decoder = tool_core::decode::OpenAiChatDecoder::new();
    /// # drop(decoder);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The key of a `tool_calls[]` entry sent without `index`: the open (or,
    /// earlier in this chunk, started) call of the choice with its `id`;
    /// without an id, the choice's last index-less call; else a new key
    /// (`unindexed` counts the index-less calls, the new one among them).
    fn unindexed_key(
        &self,
        choice: u64,
        id: Option<&str>,
        started: &HashMap<(u64, u64), &str>,
        unindexed: &mut u64,
    ) -> Option<(u64, u64)> {
        let in_choice = started
            .iter()
            .map(|(k, v)| (*k, *v))
            .chain(self.open.iter().map(|(k, c)| (*k, c.call_id.as_str())))
            .filter(|((c, _), _)| *c == choice);
        match id {
            Some(id) => {
                let found = in_choice
                    .filter(|(_, other)| *other == id)
                    .map(|(k, _)| k)
                    .max();
                Some(found.unwrap_or_else(|| {
                    let key = (choice, UNINDEXED.saturating_add(*unindexed));
                    *unindexed += 1;
                    key
                }))
            }
            None => in_choice
                .map(|(k, _)| k)
                .filter(|(_, index)| *index >= UNINDEXED)
                .max(),
        }
    }

    /// Ends every open call normally (`[DONE]`).
    fn end_all(&mut self) -> Vec<ToolCallEvent> {
        self.ignored.clear();
        self.unindexed = 0;
        std::mem::take(&mut self.open)
            .into_values()
            .map(PendingCall::end)
            .collect()
    }

    /// Reads one choice into fragments, checking them against the calls that
    /// are (or, earlier in this chunk, became) open.
    fn read_choice<'a>(
        &self,
        choice: &Fields<'a>,
        started: &mut HashMap<(u64, u64), &'a str>,
        fragments: &mut Vec<Fragment<'a>>,
        unindexed: &mut u64,
    ) -> Result<(u64, Option<&'a str>), Rejected> {
        let choice_index = choice.u64("index")?;
        if let Some(delta) = choice.opt_obj("delta")? {
            for call in delta.opt_objects("tool_calls")? {
                // Some servers repeat the id (or send "") on every fragment.
                let id = call.opt_str("id")?.filter(|id| !id.is_empty());
                let key = match call.opt_u64("index")? {
                    Some(index) => (choice_index, index),
                    None => self
                        .unindexed_key(choice_index, id, started, unindexed)
                        .ok_or_else(|| call_missing(&call, "id"))?,
                };
                let function = call.opt_obj("function")?;
                let name = match &function {
                    Some(f) => f.opt_str("name")?,
                    None => None,
                };
                let arguments = match &function {
                    Some(f) => f.opt_str("arguments")?.unwrap_or(""),
                    None => "",
                };
                if id.is_none() && self.ignored.contains(&key) {
                    continue;
                }
                let current = started
                    .get(&key)
                    .copied()
                    .or_else(|| self.open.get(&key).map(|c| c.call_id.as_str()));
                let starts_call = match (id, current) {
                    (None, None) => return Err(call_missing(&call, "id").into()),
                    (Some(id), Some(current)) => id != current,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                };
                if starts_call {
                    let Some(function) = &function else {
                        return Err(call_missing(&call, "function").into());
                    };
                    if name.is_none_or(str::is_empty) {
                        return Err(call_missing(function, "name").into());
                    }
                    let id = id.unwrap_or_default();
                    let elsewhere = started
                        .iter()
                        .map(|(k, v)| (*k, *v))
                        .chain(self.open.iter().map(|(k, c)| (*k, c.call_id.as_str())))
                        .find(|(other, other_id)| *other != key && *other_id == id);
                    if let Some(((choice, index), _)) = elsewhere {
                        let error = DecodeError::Unexpected {
                            event: EVENT.to_owned(),
                            message: format!(
                                "tool call id {:?} at index {} is already used by the open call at index {index} of choice {choice}; index {} is ignored",
                                Excerpt::of(id),
                                key.1,
                                key.1
                            ),
                        };
                        return Err(Rejected::Duplicate(key, error));
                    }
                    started.insert(key, id);
                }
                fragments.push(Fragment {
                    key,
                    id: id.filter(|_| starts_call),
                    name,
                    arguments,
                });
            }
        }
        Ok((choice_index, choice.opt_str("finish_reason")?))
    }
}

fn call_missing(fields: &Fields<'_>, key: &str) -> DecodeError {
    DecodeError::MissingField {
        event: EVENT.to_owned(),
        field: fields.field_path(key),
    }
}

impl StreamDecoder for OpenAiChatDecoder {
    fn decode(&mut self, event: &Value) -> Result<Vec<ToolCallEvent>, DecodeError> {
        let root = Fields::root(event, EVENT)?;
        if let Some(error) = root.get("error") {
            return Err(provider_error(Some(error)));
        }
        // Validate the whole chunk before touching any state, so a rejected
        // chunk changes nothing.
        let mut started = HashMap::new();
        let mut fragments = Vec::new();
        let mut finishes = Vec::new();
        let mut unindexed = self.unindexed;
        for choice in root.objects("choices")? {
            let (index, finish_reason) =
                match self.read_choice(&choice, &mut started, &mut fragments, &mut unindexed) {
                    Ok(read) => read,
                    Err(Rejected::Decode(error)) => return Err(error),
                    // The one change a rejected chunk makes: the duplicate's
                    // index is ignored from now on, so that its further
                    // fragments neither error nor reach the first call.
                    Err(Rejected::Duplicate(key, error)) => {
                        self.ignored.insert(key);
                        return Err(error);
                    }
                };
            if let Some(reason) = finish_reason {
                finishes.push((index, reason));
            }
        }

        self.unindexed = unindexed;
        let mut out = Vec::new();
        for fragment in fragments {
            if let (Some(id), Some(name)) = (fragment.id, fragment.name) {
                self.ignored.remove(&fragment.key);
                if let Some(previous) = self.open.remove(&fragment.key) {
                    out.push(previous.end());
                }
                let (call, start) = PendingCall::start(id, name);
                out.push(start);
                self.open.insert(fragment.key, call);
            }
            if let Some(call) = self.open.get_mut(&fragment.key) {
                call.push(fragment.arguments, &mut out);
            }
        }
        for (choice_index, reason) in finishes {
            self.ignored.retain(|(choice, _)| *choice != choice_index);
            let keys: Vec<_> = self
                .open
                .range((choice_index, 0)..=(choice_index, u64::MAX))
                .map(|(key, _)| *key)
                .collect();
            for key in keys {
                if let Some(call) = self.open.remove(&key) {
                    out.push(if TRUNCATING.contains(&reason) {
                        call.incomplete(format!("finish_reason: {reason}"))
                    } else {
                        call.end()
                    });
                }
            }
        }
        Ok(out)
    }

    /// Like the default, but `[DONE]` ends every open call normally.
    fn decode_data(&mut self, data: &str) -> Result<Vec<ToolCallEvent>, DecodeError> {
        if data.trim() == DONE {
            return Ok(self.end_all());
        }
        match parse_data(data)? {
            Some(value) => self.decode(&value),
            None => Ok(Vec::new()),
        }
    }

    fn finish(&mut self) -> Vec<ToolCallEvent> {
        self.ignored.clear();
        self.unindexed = 0;
        std::mem::take(&mut self.open)
            .into_values()
            .map(|call| call.incomplete(STREAM_ENDED))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::test_support::{end, run};
    use serde_json::json;

    fn start(index: u64, id: &str, name: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}
        ]}, "finish_reason": null}]})
    }

    fn args(index: u64, text: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "function": {"arguments": text}}
        ]}, "finish_reason": null}]})
    }

    fn finish_reason(reason: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    }

    #[test]
    fn a_second_call_with_an_open_calls_id_is_an_error_and_its_index_is_ignored() {
        let mut decoder = OpenAiChatDecoder::new();
        let mut events = decoder.decode(&start(0, "call_a", "weather")).unwrap();
        let error = decoder.decode(&start(1, "call_a", "stock")).unwrap_err();
        assert!(error.to_string().contains("already used"), "{error}");
        // The duplicate's fragments are skipped; the first call keeps its own.
        for event in [
            args(1, "{\"ticker\":\"X\"}"),
            args(0, "{\"city\":\"Oslo\"}"),
            finish_reason("tool_calls"),
        ] {
            events.extend(decoder.decode(&event).unwrap());
        }
        assert_eq!(
            events.last(),
            Some(&end("call_a", json!({ "city": "Oslo" })))
        );
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, ToolCallEvent::Start { .. }))
                .count(),
            1
        );
        // After the finish, index 1 may start a new call.
        assert!(decoder.decode(&start(1, "call_b", "stock")).is_ok());
    }

    #[test]
    fn calls_without_index_are_one_call_per_id() {
        // Gemini's OpenAI-compatible shape: whole calls, no `index`.
        let mut decoder = OpenAiChatDecoder::new();
        let events = run(
            &mut decoder,
            &[
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}
                ]}, "finish_reason": null}]}),
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}},
                    {"id": "call_c", "type": "function", "function": {"name": "now", "arguments": ""}}
                ]}, "finish_reason": "tool_calls"}]}),
            ],
        );
        let ends: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, ToolCallEvent::InputEnd { .. }))
            .cloned()
            .collect();
        assert_eq!(
            ends,
            [
                end("call_a", json!({"city": "Oslo"})),
                end("call_b", json!({"city": "Rome"})),
                end("call_c", json!({})),
            ]
        );
        assert!(decoder.finish().is_empty());
    }

    #[test]
    fn fragments_without_index_continue_by_id_or_the_last_call() {
        let mut decoder = OpenAiChatDecoder::new();
        let fragment = |id: Option<&str>, name: Option<&str>, text: &str| {
            let mut call = json!({"function": {"arguments": text}});
            if let Some(id) = id {
                call["id"] = json!(id);
            }
            if let Some(name) = name {
                call["function"]["name"] = json!(name);
            }
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
        };
        let events = run(
            &mut decoder,
            &[
                fragment(Some("a"), Some("x"), "{\"q\":"),
                fragment(Some("a"), None, "\"one\"}"),
                fragment(Some("b"), Some("y"), "{\"q\":"),
                fragment(None, None, "\"two\"}"),
                finish_reason("tool_calls"),
            ],
        );
        let n = events.len();
        assert_eq!(
            &events[n - 2..],
            &[end("a", json!({"q": "one"})), end("b", json!({"q": "two"}))]
        );
        // A fragment without index nor id, and no call to continue.
        let error = decoder.decode(&fragment(None, None, "{}")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "chat.completion.chunk: missing field `choices[0].delta.tool_calls[0].id`"
        );
    }

    #[test]
    fn interleaved_parallel_calls_route_by_index() {
        let mut decoder = OpenAiChatDecoder::new();
        let events = run(
            &mut decoder,
            &[
                start(0, "call_a", "weather"),
                start(1, "call_b", "stock"),
                args(1, "{\"ticker\":"),
                args(0, "{\"city\":"),
                args(0, "\"Oslo\"}"),
                args(1, "\"AAPL\"}"),
                finish_reason("tool_calls"),
            ],
        );
        assert_eq!(
            &events[6..],
            &[
                end("call_a", json!({"city": "Oslo"})),
                end("call_b", json!({"ticker": "AAPL"})),
            ]
        );
        assert!(decoder.finish().is_empty());
    }

    #[test]
    fn two_fragments_in_one_chunk() {
        let mut decoder = OpenAiChatDecoder::new();
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "x", "arguments": "{}"}},
            {"index": 1, "id": "b", "function": {"name": "y", "arguments": "[1]"}}
        ]}, "finish_reason": "tool_calls"}]});
        let events = run(&mut decoder, &[chunk]);
        assert_eq!(events.len(), 6);
        assert_eq!(events[4], end("a", json!({})));
        assert_eq!(events[5], end("b", json!([1])));
    }

    #[test]
    fn new_index_does_not_end_previous_call() {
        let mut decoder = OpenAiChatDecoder::new();
        let events = run(
            &mut decoder,
            &[start(0, "a", "x"), args(0, "{}"), start(1, "b", "y")],
        );
        assert!(
            events
                .iter()
                .all(|e| !matches!(e, ToolCallEvent::InputEnd { .. }))
        );
    }

    #[test]
    fn new_id_on_same_index_ends_the_open_call() {
        let mut decoder = OpenAiChatDecoder::new();
        let events = run(
            &mut decoder,
            &[start(0, "a", "x"), args(0, "{}"), start(0, "b", "y")],
        );
        assert_eq!(events[2], end("a", json!({})));
        assert_eq!(
            events[3],
            ToolCallEvent::Start {
                call_id: "b".into(),
                tool_name: "y".into()
            }
        );
    }

    #[test]
    fn repeated_id_continues_the_call() {
        let mut decoder = OpenAiChatDecoder::new();
        let again = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "", "arguments": "{}"}}
        ]}}]});
        let events = run(
            &mut decoder,
            &[start(0, "a", "x"), again, finish_reason("stop")],
        );
        assert_eq!(events.len(), 3);
        assert_eq!(events[2], end("a", json!({})));
    }

    #[test]
    fn length_finish_reason_is_incomplete() {
        let mut decoder = OpenAiChatDecoder::new();
        let events = run(
            &mut decoder,
            &[
                start(0, "a", "x"),
                args(0, "{\"q\": \"ab"),
                finish_reason("length"),
            ],
        );
        assert_eq!(
            events[2],
            ToolCallEvent::Incomplete {
                call_id: "a".into(),
                tool_name: "x".into(),
                partial_text: "{\"q\": \"ab".into(),
                reason: "finish_reason: length".into(),
            }
        );
    }

    #[test]
    fn done_ends_calls_but_stream_end_does_not() {
        let mut decoder = OpenAiChatDecoder::new();
        run(&mut decoder, &[start(0, "a", "x"), args(0, "{}")]);
        assert_eq!(
            decoder.decode_data("[DONE]").unwrap(),
            vec![end("a", json!({}))]
        );

        run(&mut decoder, &[start(0, "b", "x"), args(0, "{}")]);
        assert!(matches!(
            decoder.finish().as_slice(),
            [ToolCallEvent::Incomplete { call_id, .. }] if call_id == "b"
        ));
    }

    #[test]
    fn invalid_json_at_finish_reason_is_incomplete() {
        let mut decoder = OpenAiChatDecoder::new();
        let events = run(
            &mut decoder,
            &[
                start(0, "a", "x"),
                args(0, "{oops}"),
                finish_reason("tool_calls"),
            ],
        );
        assert!(
            matches!(&events[2], ToolCallEvent::Incomplete { reason, .. } if reason.contains("not valid JSON"))
        );
    }

    #[test]
    fn usage_only_chunk_is_nothing() {
        let mut decoder = OpenAiChatDecoder::new();
        assert!(
            decoder
                .decode(&json!({"choices": [], "usage": {"total_tokens": 3}}))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn malformed_chunks_are_errors_naming_the_field() {
        let mut decoder = OpenAiChatDecoder::new();
        let cases = [
            (
                json!({"id": "x"}),
                "chat.completion.chunk: missing field `choices`",
            ),
            (
                json!({"choices": {}}),
                "chat.completion.chunk: `choices` should be an array, found an object",
            ),
            (
                json!({"choices": [{"delta": {}}]}),
                "chat.completion.chunk: missing field `choices[0].index`",
            ),
            (
                args(0, "{}"),
                "chat.completion.chunk: missing field `choices[0].delta.tool_calls[0].id`",
            ),
            (
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": ""}}]}}]}),
                "chat.completion.chunk: missing field `choices[0].delta.tool_calls[0].function.name`",
            ),
            (
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0"}]}}]}),
                "chat.completion.chunk: `choices[0].delta.tool_calls[0].index` should be an integer, found a string",
            ),
            (
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "x", "arguments": 5}}]}}]}),
                "chat.completion.chunk: `choices[0].delta.tool_calls[0].function.arguments` should be a string, found a number",
            ),
        ];
        for (chunk, message) in cases {
            assert_eq!(decoder.decode(&chunk).unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn rejected_chunk_changes_nothing() {
        let mut decoder = OpenAiChatDecoder::new();
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "x", "arguments": "{}"}},
            {"index": 1, "function": {"arguments": "{}"}}
        ]}}]});
        assert!(decoder.decode(&chunk).is_err());
        assert!(decoder.finish().is_empty());
    }

    #[test]
    fn error_chunk_is_provider_error_and_keeps_open_calls() {
        let mut decoder = OpenAiChatDecoder::new();
        run(&mut decoder, &[start(0, "a", "x")]);
        let err = decoder
            .decode(&json!({"error": {"message": "boom", "type": "server_error"}}))
            .unwrap_err();
        assert_eq!(err.to_string(), "provider error: server_error: boom");
        assert_eq!(decoder.finish().len(), 1);
    }
}
