//! Recorded provider streams drive the runtime's streaming input: the
//! lifecycle hooks fire in order (start, deltas, available, output) per call,
//! parallel calls stay apart, and a cut-off call never runs.

use std::sync::{Arc, Mutex};

use integration_tests::{block_on, shared_fixture};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::hooks::{InputAvailable, InputDelta, InputStart, OutputAvailable};
use tool_core::provider::Provider;
use tool_core::{ErrorKind, Hooks, Tool, ToolError, tool};
use tool_runtime::{ProviderStream, Runtime, StreamedCall};

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct City {
    city: String,
    country: String,
    units: String,
}

/// Weather in a city
#[tool(id = "GetWeatherArgs")]
async fn get_weather_args(city: City) -> String {
    format!("{}, {}: 21{}", city.city, city.country, city.units)
}

/// Stock price
#[tool]
async fn get_stock_price(ticker: String, exchange: String) -> String {
    format!("{exchange}:{ticker} 180.0")
}

/// Weather at a location
#[tool]
async fn weather(location: String) -> String {
    format!("{location}: sunny")
}

/// Weather at a location
#[tool]
async fn get_weather(location: String) -> String {
    format!("{location}: rainy")
}

/// Refresh the issue list
#[tool(id = "updateIssueList")]
async fn update_issue_list() -> &'static str {
    "refreshed"
}

/// Write a file
#[tool]
async fn make_file(filename: String, lines_of_text: Vec<String>) -> Result<usize, ToolError> {
    let _ = filename;
    Ok(lines_of_text.len())
}

type Log = Arc<Mutex<Vec<String>>>;

fn runtime(log: &Log) -> Runtime {
    let (start, delta, available, output) = (log.clone(), log.clone(), log.clone(), log.clone());
    let hooks = Hooks::new()
        .on_input_start(move |a: InputStart| {
            start.lock().unwrap().push(format!("start {}", a.call_id))
        })
        .on_input_delta(move |a: InputDelta| {
            delta.lock().unwrap().push(format!("delta {}", a.call_id))
        })
        .on_input_available(move |a: InputAvailable| {
            available
                .lock()
                .unwrap()
                .push(format!("available {} {}", a.call_id, a.input))
        })
        .on_output(move |a: OutputAvailable| {
            output
                .lock()
                .unwrap()
                .push(format!("output {} {}", a.call_id, a.output))
        });
    Runtime::builder()
        .tools([
            Tool::from(GetWeatherArgsTool),
            Tool::from(GetStockPriceTool),
            Tool::from(WeatherTool),
            Tool::from(GetWeatherTool),
            Tool::from(UpdateIssueListTool),
            Tool::from(MakeFileTool),
        ])
        .hooks(hooks)
        .build()
        .expect("a runtime")
}

/// Replays a recording through a `ProviderStream` in small chunks.
fn replay(file: &str, provider: Provider, log: &Log) -> Option<Vec<StreamedCall>> {
    let path = shared_fixture(&format!("streams/{file}"))?;
    let text = std::fs::read_to_string(path).expect("readable fixture");
    // JSON-lines recordings hold the data payloads only: frame them as SSE.
    let body = if file.ends_with(".jsonl") {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("data: {l}\n\n"))
            .collect()
    } else {
        text
    };
    let runtime = runtime(log);
    Some(block_on(async move {
        let mut stream = ProviderStream::new(&runtime, provider).expect("a streaming provider");
        let mut calls = Vec::new();
        let chars: Vec<char> = body.chars().collect();
        for chunk in chars.chunks(37) {
            let chunk: String = chunk.iter().collect();
            let pushed = stream.push_sse(&chunk).await;
            assert!(
                pushed.errors.is_empty(),
                "decodable stream: {:?}",
                pushed.errors
            );
            calls.extend(pushed.calls);
        }
        let end = stream.finish().await;
        assert!(end.errors.is_empty(), "decodable end: {:?}", end.errors);
        calls.extend(end.calls);
        calls
    }))
}

/// The hook log of one call, deltas collapsed to a count.
fn phases(log: &Log, call_id: &str) -> Vec<String> {
    let mut phases: Vec<String> = Vec::new();
    for entry in log.lock().unwrap().iter().filter(|e| e.contains(call_id)) {
        let phase = entry.split(' ').next().unwrap_or_default().to_owned();
        if phases.last() != Some(&phase) || phase != "delta" {
            phases.push(phase);
        }
    }
    phases
}

#[test]
fn openai_chat_single_call_runs_with_hooks_in_order() {
    let log = Log::default();
    let Some(calls) = replay(
        "openai-chat-completions-tool-call.sse",
        Provider::OpenAiChat,
        &log,
    ) else {
        return;
    };
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool_id, "GetWeatherArgs");
    assert_eq!(
        calls[0].outcome.output(),
        Some(&json!("Edinburgh, UK: 21c"))
    );
    assert_eq!(
        phases(&log, &calls[0].call_id),
        ["start", "delta", "available", "output"]
    );
}

#[test]
fn openai_chat_parallel_calls_stay_apart() {
    let log = Log::default();
    let Some(calls) = replay(
        "openai-chat-completions-parallel-tool-calls.sse",
        Provider::OpenAiChat,
        &log,
    ) else {
        return;
    };
    let outputs: Vec<(&str, &Value)> = calls
        .iter()
        .map(|c| (c.tool_id.as_str(), c.outcome.output().unwrap()))
        .collect();
    assert_eq!(
        outputs,
        [
            ("GetWeatherArgs", &json!("Edinburgh, GB: 21c")),
            ("get_stock_price", &json!("NASDAQ:AAPL 180.0"))
        ]
    );
    for call in &calls {
        assert_eq!(
            phases(&log, &call.call_id),
            ["start", "delta", "available", "output"]
        );
    }
}

#[test]
fn openai_responses_call_runs() {
    let log = Log::default();
    let Some(calls) = replay(
        "openai-responses-function-call.chunks.jsonl",
        Provider::OpenAiResponses,
        &log,
    ) else {
        return;
    };
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].outcome.output(),
        Some(&json!("San Francisco: sunny"))
    );
    assert_eq!(
        phases(&log, &calls[0].call_id),
        ["start", "delta", "available", "output"]
    );
}

#[test]
fn anthropic_call_runs() {
    let log = Log::default();
    let Some(calls) = replay("anthropic-messages-tool-use.sse", Provider::Anthropic, &log) else {
        return;
    };
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome.output(), Some(&json!("Paris: rainy")));
    assert_eq!(
        phases(&log, &calls[0].call_id),
        ["start", "delta", "available", "output"]
    );
}

#[test]
fn anthropic_call_without_arguments_reads_as_empty_object() {
    let log = Log::default();
    let Some(calls) = replay(
        "anthropic-messages-tool-no-args.chunks.jsonl",
        Provider::Anthropic,
        &log,
    ) else {
        return;
    };
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome.output(), Some(&json!("refreshed")));
    assert_eq!(
        phases(&log, &calls[0].call_id),
        ["start", "available", "output"]
    );
}

#[test]
fn a_cut_off_call_never_runs() {
    let log = Log::default();
    let Some(calls) = replay(
        "anthropic-messages-tool-use-truncated-max-tokens.sse",
        Provider::Anthropic,
        &log,
    ) else {
        return;
    };
    assert_eq!(calls.len(), 1);
    let error = calls[0].outcome.error().expect("a failed call");
    assert_eq!(error.kind(), ErrorKind::InvalidJson);
    assert!(
        error
            .message()
            .contains("was cut off before its arguments were complete"),
        "{}",
        error.message()
    );
    assert!(
        error.message().contains("max_tokens"),
        "{}",
        error.message()
    );
    assert_eq!(
        phases(&log, &calls[0].call_id),
        ["start", "delta"],
        "never available, never executed"
    );
}
