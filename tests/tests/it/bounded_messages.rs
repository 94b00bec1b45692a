//! Issue 25: a model-facing message quotes at most a bounded excerpt of what
//! came from outside (a value, a key, a tool name, a call id), however
//! large: each test sends 1 MB and checks the message stays under
//! [`MESSAGE_BOUND`] and says how long the original was.

use std::collections::BTreeMap;

use integration_tests::block_on;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tool_core::decode::{OpenAiChatDecoder, StreamDecoder};
use tool_core::{CallContext, ErrorKind, ModelError, Outcome, Tool, ToolSet, tool};

/// What a message may weigh, in bytes, whatever it quotes: a headline,
/// at most 20 problems and 10 keys each cut at 200 characters, and the
/// arguments cut at 200.
const MESSAGE_BOUND: usize = 8 * 1024;

/// One megabyte of text.
fn megabyte() -> String {
    "x".repeat(1 << 20)
}

fn error(outcome: &Outcome) -> &ModelError {
    outcome
        .error()
        .unwrap_or_else(|| panic!("expected a failure, got {outcome:?}"))
}

/// The message and the whole error as the model may receive it (JSON with
/// its per-field problems) are both bounded, and the message says the
/// length of what it cut.
fn assert_bounded(error: &ModelError) {
    let message = error.message();
    assert!(
        message.len() < MESSAGE_BOUND,
        "{} bytes: {}...",
        message.len(),
        &message[..500]
    );
    assert!(
        message.contains(&format!("({} bytes in all)", 1 << 20)),
        "{message}"
    );
    let json = serde_json::to_string(error).unwrap();
    assert!(
        json.len() < 2 * MESSAGE_BOUND,
        "{} bytes as JSON",
        json.len()
    );
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Reading {
    unit: Unit,
    labels: BTreeMap<String, u8>,
}

/// Record a reading
#[tool]
async fn record(reading: Reading) -> usize {
    reading.labels.len() + matches!(reading.unit, Unit::Celsius) as usize
}

fn run(input: Value, call_id: &str) -> Outcome {
    block_on(Tool::from(RecordTool).execute(input, CallContext::new(call_id)))
}

#[test]
fn a_megabyte_value_is_quoted_as_an_excerpt() {
    let outcome = run(json!({"unit": megabyte(), "labels": {}}), "call-1");
    let error = error(&outcome);
    assert_eq!(error.kind(), ErrorKind::InputValidation);
    assert!(
        error.message().contains(
            "- unit: Invalid enum value. Expected 'celsius' | 'fahrenheit', received 'xxx"
        ),
        "{}",
        &error.message()[..400]
    );
    assert_bounded(error);
}

#[test]
fn a_megabyte_key_is_quoted_as_an_excerpt_where_it_is_unknown_and_in_a_path() {
    let unknown = run(json!({"unit": "celsius", "labels": {}, megabyte(): 1}), "c");
    assert!(
        error(&unknown)
            .message()
            .contains("- root: Unrecognized key(s) in object: 'xxx"),
        "{}",
        &error(&unknown).message()[..400]
    );
    assert_bounded(error(&unknown));
    // The key is the path of a problem in its value.
    let in_path = run(
        json!({"unit": "celsius", "labels": {megabyte(): "high"}}),
        "c",
    );
    assert!(
        error(&in_path).message().contains("- labels.xxx"),
        "{}",
        &error(&in_path).message()[..400]
    );
    assert_bounded(error(&in_path));
}

#[test]
fn many_unknown_keys_are_counted_not_all_named() {
    let mut input: Map<String, Value> = (0..100_000)
        .map(|i| (format!("extra_{i:06}"), json!(i)))
        .collect();
    input.insert("unit".into(), json!("celsius"));
    input.insert("labels".into(), json!({}));
    let outcome = run(Value::Object(input), "c");
    let message = error(&outcome).message();
    assert!(
        message.contains("'extra_000009' and 99990 more"),
        "{message}"
    );
    assert!(message.len() < MESSAGE_BOUND, "{} bytes", message.len());
}

#[test]
fn a_megabyte_tool_name_is_quoted_as_an_excerpt() {
    let set = ToolSet::new([Tool::from(RecordTool)]).unwrap();
    let outcome = block_on(set.execute(&megabyte(), json!({}), CallContext::new("c")));
    let error = error(&outcome);
    assert_eq!(error.kind(), ErrorKind::UnknownTool);
    assert!(error.message().ends_with("Available tools: record."));
    assert_bounded(error);
}

#[test]
fn a_megabyte_call_id_is_not_quoted() {
    let huge_id = megabyte();
    let outcome = run(json!({"unit": "kelvin", "labels": {}}), &huge_id);
    let message = error(&outcome).message();
    assert!(message.len() < MESSAGE_BOUND, "{} bytes", message.len());
    assert!(!message.contains(&huge_id[..1000]));
}

#[test]
fn a_decoder_quotes_a_megabyte_call_id_as_an_excerpt() {
    let id = megabyte();
    let mut decoder = OpenAiChatDecoder::new();
    let call = |index: u64| {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "id": id, "function": {"name": "record", "arguments": ""}}
        ]}}]})
    };
    decoder.decode(&call(0)).unwrap();
    let duplicate = decoder.decode(&call(1)).unwrap_err().to_string();
    assert!(duplicate.contains("is already used"), "{duplicate}");
    assert!(duplicate.contains(&format!("({} bytes in all)", 1 << 20)));
    assert!(duplicate.len() < MESSAGE_BOUND, "{} bytes", duplicate.len());
}
