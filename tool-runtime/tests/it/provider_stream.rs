//! `ProviderStream` on broken streams: a malformed event never costs a
//! finished call, a body cut inside its last event reports the open call,
//! and a second call with an id already streaming is an error.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_core::provider::Provider;
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::{ProviderStream, Runtime};

fn runtime() -> (Runtime, Arc<Mutex<Vec<Value>>>) {
    let runs = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&runs);
    let weather = Tool::builder("weather")
        .description("Weather for a city")
        .input_schema(json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] }))
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            seen.lock().unwrap().push(input.clone());
            async move { Ok::<_, ToolError>(json!({ "city": input["city"] })) }
        })
        .build()
        .unwrap();
    (Runtime::builder().tool(weather).build().unwrap(), runs)
}

fn event(data: Value) -> String {
    format!("data: {data}\n\n")
}

fn start(index: u64, id: &str) -> String {
    event(json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": "weather", "input": {}}}))
}

fn delta(index: u64, text: &str) -> String {
    event(json!({"type": "content_block_delta", "index": index,
        "delta": {"type": "input_json_delta", "partial_json": text}}))
}

fn stop(index: u64) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

const MALFORMED: &str = "data: {\"type\": \"content_block_delta\", \"ind\n\n";

#[tokio::test]
async fn a_malformed_event_after_a_finished_call_keeps_the_call() {
    let (runtime, runs) = runtime();
    let mut stream = ProviderStream::new(&runtime, Provider::Anthropic).unwrap();
    let chunk = [start(0, "toolu_1"), delta(0, r#"{"city":"Oslo"}"#), stop(0)].concat() + MALFORMED;
    let pushed = stream.push_sse(&chunk).await;
    assert_eq!(pushed.calls.len(), 1, "the call that ran is reported");
    assert_eq!(
        pushed.calls[0].outcome.output(),
        Some(&json!({ "city": "Oslo" }))
    );
    assert_eq!(pushed.errors.len(), 1, "{:?}", pushed.errors);
    assert_eq!(runs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_malformed_event_before_a_call_does_not_make_it_vanish() {
    let (runtime, runs) = runtime();
    let mut stream = ProviderStream::new(&runtime, Provider::Anthropic).unwrap();
    let chunk = MALFORMED.to_owned()
        + &[start(0, "toolu_1"), delta(0, r#"{"city":"Rome"}"#), stop(0)].concat();
    let pushed = stream.push_sse(&chunk).await;
    assert_eq!(pushed.errors.len(), 1);
    assert_eq!(pushed.calls.len(), 1);
    assert_eq!(
        pushed.calls[0].outcome.output(),
        Some(&json!({ "city": "Rome" }))
    );
    assert_eq!(runs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_body_cut_inside_its_last_event_reports_the_open_call_as_incomplete() {
    let (runtime, runs) = runtime();
    let mut stream = ProviderStream::new(&runtime, Provider::Anthropic).unwrap();
    let body = [start(0, "toolu_1"), delta(0, r#"{"city":"Pa"#)].concat();
    assert!(stream.push_sse(&body).await.calls.is_empty());
    // The connection drops in the middle of the next event.
    let cut = r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"input_js"#;
    assert!(stream.push_sse(cut).await.calls.is_empty());
    let end = stream.finish().await;
    assert_eq!(end.errors.len(), 1, "the cut event: {:?}", end.errors);
    assert_eq!(end.calls.len(), 1, "the open call is reported");
    let error = end.calls[0].outcome.error().expect("failed, never ran");
    assert!(error.message().contains("cut off"), "{}", error.message());
    assert!(runs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_second_call_with_an_id_already_streaming_is_an_error_and_the_first_runs() {
    let (runtime, runs) = runtime();
    let mut stream = ProviderStream::new(&runtime, Provider::Anthropic).unwrap();
    let body = [
        start(0, "toolu_dup"),
        start(1, "toolu_dup"),
        delta(0, r#"{"city":"#),
        delta(1, r#"{"city":"Lima"}"#),
        delta(0, r#""Kyiv"}"#),
        stop(1),
        stop(0),
    ]
    .concat();
    let pushed = stream.push_sse(&body).await;
    assert_eq!(pushed.errors.len(), 1, "{:?}", pushed.errors);
    let message = pushed.errors[0].to_string();
    assert!(
        message.contains("toolu_dup") && message.contains("already used"),
        "{message}"
    );
    assert_eq!(pushed.calls.len(), 1);
    assert_eq!(
        pushed.calls[0].outcome.output(),
        Some(&json!({ "city": "Kyiv" }))
    );
    assert_eq!(
        *runs.lock().unwrap(),
        [json!({ "city": "Kyiv" })],
        "its own arguments only"
    );
}
