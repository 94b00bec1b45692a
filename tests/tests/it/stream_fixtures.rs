//! Recorded provider streams (shared/fixtures/streams, see its README.md)
//! decoded end to end by `tool_core::decode`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tool_core::decode::{
    AnthropicDecoder, OpenAiChatDecoder, OpenAiResponsesDecoder, SseEvent, SseParser,
    StreamDecoder, ToolCallEvent, decode_sse,
};

/// Reads a fixture after checking it is the file the README describes.
fn read_checked(path: &Path, sha256: &str) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let digest: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(digest, sha256, "{} changed", path.display());
    String::from_utf8(bytes).expect("fixture is UTF-8")
}

/// Turns a `.jsonl` fixture (one data payload per line) into an SSE body.
fn jsonl_to_sse(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("data: {line}\n\n"))
        .collect()
}

/// How one call ended, checked against the event-order rules.
#[derive(Debug)]
struct Call {
    tool_name: String,
    text: String,
    outcome: Outcome,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Open,
    Input(Value),
    Incomplete {
        partial_text: String,
        reason: String,
    },
}

/// Groups events by call id, asserting Start, InputDelta*, then one end event.
fn calls(events: &[ToolCallEvent]) -> BTreeMap<String, Call> {
    let mut calls: BTreeMap<String, Call> = BTreeMap::new();
    for event in events {
        let id = event.call_id().to_owned();
        if let ToolCallEvent::Start { tool_name, .. } = event {
            let fresh = Call {
                tool_name: tool_name.clone(),
                text: String::new(),
                outcome: Outcome::Open,
            };
            assert!(
                calls.insert(id.clone(), fresh).is_none(),
                "{id} started twice"
            );
            continue;
        }
        let call = calls
            .get_mut(&id)
            .unwrap_or_else(|| panic!("{event:?} before Start"));
        assert_eq!(
            call.outcome,
            Outcome::Open,
            "{event:?} after the call ended"
        );
        match event {
            ToolCallEvent::Start { .. } => unreachable!(),
            ToolCallEvent::InputDelta { delta, .. } => {
                assert!(!delta.is_empty(), "empty delta for {id}");
                call.text.push_str(delta);
            }
            ToolCallEvent::InputEnd { input, .. } => {
                let expected = if call.text.is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(&call.text).expect("deltas add up to the input")
                };
                assert_eq!(input, &expected, "InputEnd disagrees with the deltas");
                call.outcome = Outcome::Input(input.clone());
            }
            ToolCallEvent::Incomplete {
                tool_name,
                partial_text,
                reason,
                ..
            } => {
                assert_eq!(tool_name, &call.tool_name);
                assert_eq!(partial_text, &call.text, "partial text is all the deltas");
                call.outcome = Outcome::Incomplete {
                    partial_text: partial_text.clone(),
                    reason: reason.clone(),
                };
            }
        }
    }
    for (id, call) in &calls {
        assert_ne!(call.outcome, Outcome::Open, "{id} never ended");
    }
    calls
}

fn assert_input(calls: &BTreeMap<String, Call>, id: &str, tool_name: &str, input: Value) {
    let call = calls
        .get(id)
        .unwrap_or_else(|| panic!("no call {id}: {calls:?}"));
    assert_eq!(call.tool_name, tool_name);
    assert_eq!(call.outcome, Outcome::Input(input));
}

/// Parses `body` in pieces of the given sizes (cycled, moved to char
/// boundaries) and returns the events.
fn parse_in_pieces(body: &str, sizes: &[usize]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at >= body.len() {
            break;
        }
        let mut end = (at + size).min(body.len());
        while !body.is_char_boundary(end) {
            end += 1;
        }
        events.extend(parser.push(&body[at..end]));
        at = end;
    }
    events.extend(parser.finish());
    events
}

/// Any split of the body, and CRLF line ends, must give the same events.
fn assert_chunking_independent(body: &str) {
    let whole = parse_in_pieces(body, &[body.len().max(1)]);
    assert!(!whole.is_empty());
    // A fixed irregular pattern stands in for random network chunking.
    let irregular = [3, 1, 17, 64, 2, 9, 128, 5, 33, 1, 250];
    for sizes in [&[1][..], &[7], &[64], &irregular] {
        assert_eq!(parse_in_pieces(body, sizes), whole, "pieces of {sizes:?}");
    }
    let crlf = body.replace('\n', "\r\n");
    for sizes in [&[1][..], &irregular] {
        assert_eq!(
            parse_in_pieces(&crlf, sizes),
            whole,
            "CRLF in pieces of {sizes:?}"
        );
    }
}

/// Decodes `body` whole, and again fed to the parser byte by byte; both
/// must give the same events.
fn decode_both_ways<D: StreamDecoder>(new: impl Fn() -> D, body: &str) -> Vec<ToolCallEvent> {
    let whole = decode_sse(new(), body).expect("fixture decodes");
    let mut decoder = new();
    let mut events = Vec::new();
    for sse in parse_in_pieces(body, &[1]) {
        events.extend(decoder.decode_data(&sse.data).expect("fixture decodes"));
    }
    events.extend(decoder.finish());
    assert_eq!(events, whole);
    whole
}

#[test]
fn openai_chat_completions_single_call() {
    let Some(path) =
        integration_tests::shared_fixture("streams/openai-chat-completions-tool-call.sse")
    else {
        return;
    };
    let body = read_checked(
        &path,
        "c6aa7e397b7123c3501f25df3a05d4daf7e8ad6d61ffa406ab5361fe36a8d5b1",
    );
    assert_chunking_independent(&body);
    let calls = calls(&decode_both_ways(OpenAiChatDecoder::new, &body));
    assert_eq!(calls.len(), 1);
    assert_input(
        &calls,
        "call_c91SqDXlYFuETYv8mUHzz6pp",
        "GetWeatherArgs",
        json!({"city": "Edinburgh", "country": "UK", "units": "c"}),
    );
}

#[test]
fn openai_chat_completions_parallel_calls() {
    let Some(path) = integration_tests::shared_fixture(
        "streams/openai-chat-completions-parallel-tool-calls.sse",
    ) else {
        return;
    };
    let body = read_checked(
        &path,
        "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b",
    );
    assert_chunking_independent(&body);
    let events = decode_both_ways(OpenAiChatDecoder::new, &body);
    let calls = calls(&events);
    assert_eq!(calls.len(), 2);
    assert_input(
        &calls,
        "call_JMW1whyEaYG438VE1OIflxA2",
        "GetWeatherArgs",
        json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
    );
    assert_input(
        &calls,
        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
        "get_stock_price",
        json!({"ticker": "AAPL", "exchange": "NASDAQ"}),
    );
    // Both end at finish_reason, in index order.
    let ends: Vec<&str> = events
        .iter()
        .filter(|e| matches!(e, ToolCallEvent::InputEnd { .. }))
        .map(ToolCallEvent::call_id)
        .collect();
    assert_eq!(
        ends,
        [
            "call_JMW1whyEaYG438VE1OIflxA2",
            "call_DNYTawLBoN8fj3KN6qU9N1Ou"
        ]
    );
}

#[test]
fn openai_responses_function_call() {
    let Some(path) =
        integration_tests::shared_fixture("streams/openai-responses-function-call.chunks.jsonl")
    else {
        return;
    };
    let text = read_checked(
        &path,
        "863aa54993b3b2063079ae7081a7a58a68bcedfd7ab79fa7e672e46a4863b598",
    );
    let body = jsonl_to_sse(&text);
    assert_chunking_independent(&body);
    let events = decode_both_ways(OpenAiResponsesDecoder::new, &body);
    let calls = calls(&events);
    assert_eq!(calls.len(), 1);
    assert_input(
        &calls,
        "call_H5DxLSFnsGhiROnUiDHmgyc8",
        "weather",
        json!({"location": "San Francisco"}),
    );
    // One delta per argument fragment in the recording.
    let deltas = events
        .iter()
        .filter(|e| matches!(e, ToolCallEvent::InputDelta { .. }))
        .count();
    assert_eq!(deltas, 6);
}

#[test]
fn anthropic_messages_tool_use() {
    let Some(path) = integration_tests::shared_fixture("streams/anthropic-messages-tool-use.sse")
    else {
        return;
    };
    let body = read_checked(
        &path,
        "53787cbf836155a1f5dffb60cde0cf0fa42e21db2dbed0aa76f51c76a70b02f6",
    );
    assert_chunking_independent(&body);
    let calls = calls(&decode_both_ways(AnthropicDecoder::new, &body));
    assert_eq!(calls.len(), 1);
    assert_input(
        &calls,
        "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        "get_weather",
        json!({"location": "Paris"}),
    );
}

#[test]
fn anthropic_messages_tool_without_arguments() {
    let Some(path) =
        integration_tests::shared_fixture("streams/anthropic-messages-tool-no-args.chunks.jsonl")
    else {
        return;
    };
    let text = read_checked(
        &path,
        "3a9c4fc34c0e6c9afc2bd648ae9d6553da7817c936b7a469f281bdf9688a3433",
    );
    let body = jsonl_to_sse(&text);
    assert_chunking_independent(&body);
    let events = decode_both_ways(AnthropicDecoder::new, &body);
    assert_eq!(
        events,
        [
            ToolCallEvent::Start {
                call_id: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP".into(),
                tool_name: "updateIssueList".into(),
            },
            ToolCallEvent::InputEnd {
                call_id: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP".into(),
                input: json!({}),
            },
        ]
    );
}

#[test]
fn anthropic_messages_truncated_at_max_tokens() {
    let Some(path) = integration_tests::shared_fixture(
        "streams/anthropic-messages-tool-use-truncated-max-tokens.sse",
    ) else {
        return;
    };
    let body = read_checked(
        &path,
        "e0e79ee10c18063861f4cc191ff6c6bdda767cd7407bec1c050c7831ff41f90d",
    );
    assert_chunking_independent(&body);
    let events = decode_both_ways(AnthropicDecoder::new, &body);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ToolCallEvent::InputEnd { .. })),
        "a truncated call must not get an input: {events:?}"
    );
    let calls = calls(&events);
    assert_eq!(calls.len(), 1);
    let call = &calls["toolu_01EKqbqmZrGRXy18eN7m9kvY"];
    assert_eq!(call.tool_name, "make_file");
    let Outcome::Incomplete {
        partial_text,
        reason,
    } = &call.outcome
    else {
        panic!("expected Incomplete, got {:?}", call.outcome);
    };
    assert!(partial_text.starts_with("{\"filename\": \"taxes.txt\", \"lines_of_text\": ["));
    assert!(
        partial_text.ends_with("\n\"Filing taxes"),
        "{partial_text:?}"
    );
    assert!(reason.contains("max_tokens"), "{reason}");
}
