//! Streaming input, lifecycle hooks, events, progress and transforms.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{Capture, asking_tool, echo_tool};
use serde_json::{Value, json};
use tool_core::hooks::{InputAvailable, InputDelta, InputStart, OutputAvailable};
use tool_core::transform::{Phase, ToolTransform};
use tool_core::{Hooks, Tool, ToolContext, ToolError};
use tool_runtime::{CallOutcome, EventKind, Events, Runtime, ToolCall, ToolEvent};

type Log = Arc<Mutex<Vec<String>>>;

fn hooks(prefix: &'static str, log: &Log) -> Hooks {
    let (a, b, c, d) = (log.clone(), log.clone(), log.clone(), log.clone());
    Hooks::new()
        .on_input_start(move |args: InputStart| {
            a.lock().unwrap().push(format!(
                "{prefix}:start:{}:{}",
                args.call_id,
                args.messages.len()
            ));
        })
        .on_input_delta(move |args: InputDelta| {
            b.lock()
                .unwrap()
                .push(format!("{prefix}:delta:{}", args.input_text_delta));
        })
        .on_input_available(move |args: InputAvailable| {
            c.lock()
                .unwrap()
                .push(format!("{prefix}:available:{}", args.input));
        })
        .on_output(move |args: OutputAvailable| {
            d.lock()
                .unwrap()
                .push(format!("{prefix}:output:{}:{}", args.tool_id, args.output));
        })
}

fn logged_tool(log: &Log) -> Tool {
    let exec_log = log.clone();
    Tool::builder("weather")
        .description("Weather")
        .hooks(hooks("tool", log))
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            exec_log.lock().unwrap().push("execute".into());
            async move { Ok::<_, ToolError>(json!({ "at": input["city"] })) }
        })
        .build()
        .unwrap()
}

fn boom(what: &str) {
    panic!("{what}")
}

fn drain(events: &mut Events) -> Vec<ToolEvent> {
    std::iter::from_fn(|| events.try_next()).collect()
}

#[tokio::test]
async fn streamed_input_fires_hooks_in_order_tool_then_runtime() {
    let log: Log = Arc::default();
    let runtime = Runtime::builder()
        .tool(logged_tool(&log))
        .hooks(hooks("rt", &log))
        .build()
        .unwrap();
    let mut stream = runtime.begin(
        "c1",
        "weather",
        vec![json!({ "role": "user", "content": "hi" })],
    );
    for delta in [r#"{"ci"#, r#"ty": "Pa"#, r#"ris"}"#] {
        stream.push(delta);
    }
    let outcome = stream.finish().await;
    assert_eq!(outcome.output(), Some(&json!({ "at": "Paris" })));
    let expected = [
        "tool:start:c1:1",
        "rt:start:c1:1",
        r#"tool:delta:{"ci"#,
        r#"rt:delta:{"ci"#,
        r#"tool:delta:ty": "Pa"#,
        r#"rt:delta:ty": "Pa"#,
        r#"tool:delta:ris"}"#,
        r#"rt:delta:ris"}"#,
        r#"tool:available:{"city":"Paris"}"#,
        r#"rt:available:{"city":"Paris"}"#,
        "execute",
        r#"tool:output:weather:{"at":"Paris"}"#,
        r#"rt:output:weather:{"at":"Paris"}"#,
    ];
    assert_eq!(*log.lock().unwrap(), expected);

    // A plain call fires available, execute, output (no start or deltas).
    log.lock().unwrap().clear();
    runtime
        .call(ToolCall::new("c2", "weather", r#"{"city": "Oslo"}"#))
        .await;
    let log = log.lock().unwrap();
    assert_eq!(log[0], r#"tool:available:{"city":"Oslo"}"#);
    assert_eq!(log[2], "execute");
    assert_eq!(log.len(), 5);
}

#[tokio::test]
async fn partial_is_a_best_effort_value_updated_per_delta() {
    let runtime = Runtime::builder()
        .tool(logged_tool(&Log::default()))
        .build()
        .unwrap();
    let mut stream = runtime.begin("c1", "weather", Vec::new());
    assert_eq!(stream.partial(), None);
    let steps = [
        (r#"{"city": "Pa"#, json!({ "city": "Pa" })),
        (
            r#"ris", "days": [1, 2"#,
            json!({ "city": "Paris", "days": [1, 2] }),
        ),
        (
            r#"], "units": tr"#,
            json!({ "city": "Paris", "days": [1, 2], "units": true }),
        ),
        (
            r#"ue}"#,
            json!({ "city": "Paris", "days": [1, 2], "units": true }),
        ),
    ];
    for (delta, expected) in steps {
        stream.push(delta);
        assert_eq!(stream.partial(), Some(&expected), "after {delta:?}");
    }
    assert_eq!(
        stream.text(),
        r#"{"city": "Paris", "days": [1, 2], "units": true}"#
    );
    assert_eq!(
        stream.finish().await.output(),
        Some(&json!({ "at": "Paris" }))
    );
}

#[tokio::test]
async fn a_streamed_call_to_an_unknown_tool_fails_at_finish() {
    let runtime = Runtime::builder()
        .tool(logged_tool(&Log::default()))
        .build()
        .unwrap();
    let mut stream = runtime.begin("c1", "nope", Vec::new());
    stream.push("{}");
    let outcome = stream.finish().await;
    assert_eq!(
        outcome.error().unwrap().message(),
        r#"Tool "nope" not found. Available tools: weather."#
    );
}

#[tokio::test]
async fn a_streamed_call_cancelled_before_finish_ends_aborted() {
    let log: Log = Arc::default();
    let runtime = Runtime::builder().tool(logged_tool(&log)).build().unwrap();
    let mut stream = runtime.begin("c1", "weather", Vec::new());
    stream.push(r#"{"city": "Rome"}"#);
    runtime.cancel("c1").unwrap();
    assert!(stream.abort_signal().is_aborted());
    assert_eq!(stream.finish().await, CallOutcome::Aborted);
    assert!(!log.lock().unwrap().contains(&"execute".to_owned()));
}

#[tokio::test]
async fn hook_errors_and_panics_are_logged_and_never_fail_the_call() {
    let capture = Capture::default();
    let _guard = capture.install();
    let panicking = Hooks::new()
        .on_input_start(|_: InputStart| boom("start hook bug"))
        .on_input_delta(|_: InputDelta| boom("delta hook bug"))
        .on_input_available(|_: InputAvailable| boom("available hook bug"))
        .on_output(|_: OutputAvailable| boom("output hook bug"));
    let failing = Hooks::new()
        .on_input_start(|_: InputStart| Err::<(), _>("start failed"))
        .on_input_delta(|_: InputDelta| Err::<(), _>("delta failed"))
        .on_input_available(|_: InputAvailable| Err::<(), _>("available failed"))
        .on_output(|_: OutputAvailable| Err::<(), _>("output failed"));
    let (tool, runs) = echo_tool("echo", |b| b.hooks(panicking));
    let runtime = Runtime::builder()
        .tool(tool)
        .hooks(failing)
        .build()
        .unwrap();
    let mut stream = runtime.begin("c1", "echo", Vec::new());
    stream.push(r#"{"a": 1}"#);
    let outcome = stream.finish().await;
    assert_eq!(outcome.output(), Some(&json!({ "echo": { "a": 1 } })));
    assert_eq!(runs.lock().unwrap().len(), 1);
    let logs = capture.logs().join("\n");
    let lines = capture.logs();
    for hook in [
        "on_input_start",
        "on_input_delta",
        "on_input_available",
        "on_output",
    ] {
        let tagged = format!("hook={hook} ");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("ERROR") && l.contains(&tagged) && l.contains("panicked")),
            "{hook}: {logs}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("ERROR")
                && l.contains(&tagged)
                && l.contains("hook failed")),
            "{hook}: {logs}"
        );
    }
    assert!(logs.contains("error=start failed"), "{logs}");
    assert!(logs.contains("error=output failed"), "{logs}");
    // The runtime keeps serving.
    let again = runtime.call(ToolCall::new("c2", "echo", "{}")).await;
    assert!(again.output().is_some());
}

#[tokio::test]
async fn events_cover_every_phase_with_call_and_tool_ids() {
    let (echo, _) = echo_tool("echo", |b| b);
    let (pay, _) = echo_tool("pay", |b| b.require_approval(true));
    let (ask, _) = asking_tool("ask");
    let progress = Tool::builder("progress")
        .description("Reports progress")
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            ctx.progress(1.0, Some(2.0), Some("half way"));
            ctx.progress(2.0, Some(2.0), None);
            Ok::<_, ToolError>(json!("done"))
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder()
        .tools([echo, pay, ask, progress])
        .build()
        .unwrap();
    let mut events = runtime.events();

    let mut stream = runtime.begin("s1", "echo", Vec::new());
    stream.push(r#"{"a":"#);
    stream.push("1}");
    stream.finish().await;
    let got = drain(&mut events);
    let kinds: Vec<_> = got
        .iter()
        .map(|e| (e.call_id.as_str(), e.tool_id.as_str(), e.kind.clone()))
        .collect();
    assert!(matches!(kinds[0], ("s1", "echo", EventKind::InputStart)));
    assert_eq!(
        kinds[1].2,
        EventKind::InputDelta {
            display: json!(r#"{"a":"#)
        }
    );
    assert_eq!(
        kinds[2].2,
        EventKind::InputDelta {
            display: json!("1}")
        }
    );
    assert!(
        matches!(&kinds[3].2, EventKind::InputAvailable { payload } if payload.display == json!({ "a": 1 }))
    );
    assert!(
        matches!(&kinds[4].2, EventKind::Output { payload } if payload.display == json!({ "echo": { "a": 1 } }))
    );
    assert_eq!(kinds.len(), 5);
    assert!(got.iter().all(|e| e.call_id == "s1" && e.tool_id == "echo"));

    runtime
        .call(ToolCall::new("p1", "pay", json!({ "amount": 1 })))
        .await;
    runtime.decline("p1", Some("no")).await.unwrap();
    let got = drain(&mut events);
    assert!(
        matches!(&got[1].kind, EventKind::ApprovalRequired { payload, resume_schema }
        if payload.display == json!({ "amount": 1 }) && resume_schema["properties"]["approved"]["type"] == "boolean")
    );
    assert_eq!(
        got[2].kind,
        EventKind::Declined {
            reason: Some("no".into())
        }
    );
    assert!(got.iter().all(|e| e.call_id == "p1" && e.tool_id == "pay"));

    runtime.call(ToolCall::new("a1", "ask", json!({}))).await;
    runtime.resume("a1", json!("blue")).await.unwrap();
    let got = drain(&mut events);
    assert!(
        matches!(&got[1].kind, EventKind::Suspended { payload, resume_schema: Some(_) } if payload.display == json!({ "asked": {} }))
    );
    assert!(
        matches!(&got[2].kind, EventKind::Resumed { payload } if payload.display == json!("blue"))
    );
    assert!(matches!(&got[3].kind, EventKind::Output { .. }));

    runtime.call(ToolCall::new("e1", "echo", "not json")).await;
    let got = drain(&mut events);
    assert!(
        matches!(&got[0].kind, EventKind::Error { payload } if payload.display["error"] == true)
    );
    assert_eq!(got[0].transcript().unwrap().phase, Phase::Error);

    runtime
        .call(ToolCall::new("g1", "progress", json!({})))
        .await;
    let got = drain(&mut events);
    let progress: Vec<_> = got
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Progress(p) => Some((
                e.call_id.as_str(),
                e.tool_id.as_str(),
                p.value,
                p.total,
                p.message.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        progress,
        [
            (
                "g1",
                "progress",
                1.0,
                Some(2.0),
                Some("half way".to_owned())
            ),
            ("g1", "progress", 2.0, Some(2.0), None)
        ]
    );
}

fn transformed_tool(calls: &Arc<AtomicUsize>, seen: &Arc<Mutex<Vec<Value>>>) -> Tool {
    let (c1, c2, c3) = (calls.clone(), calls.clone(), calls.clone());
    let seen = seen.clone();
    Tool::builder("secret")
        .description("Handles secrets")
        .transform(
            ToolTransform::new()
                .display(Phase::Input, move |ctx| {
                    c1.fetch_add(1, Ordering::SeqCst);
                    Some(json!({ "user": ctx.payload["user"] }))
                })
                .display(Phase::Output, move |ctx| {
                    c2.fetch_add(1, Ordering::SeqCst);
                    Some(json!({ "ok": ctx.payload["ok"] }))
                })
                .display(Phase::Error, |_| panic!("error transform bug"))
                .transcript(Phase::Output, move |_| {
                    c3.fetch_add(1, Ordering::SeqCst);
                    Some(json!("[redacted output]"))
                }),
        )
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            seen.lock().unwrap().push(input.clone());
            async move {
                if input.get("fail").is_some() {
                    return Err(ToolError::new("boom"));
                }
                Ok(json!({ "ok": true, "token": input["password"] }))
            }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn transforms_shape_display_and_transcript_while_execute_and_model_see_raw_values() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runtime = Runtime::builder()
        .tool(transformed_tool(&calls, &seen))
        .build()
        .unwrap();
    let mut events = runtime.events();

    let mut stream = runtime.begin("c1", "secret", Vec::new());
    stream.push(r#"{"user": "ann", "#);
    stream.push(r#""password": "hunter2"}"#);
    let outcome = stream.finish().await;
    let raw_output = json!({ "ok": true, "token": "hunter2" });
    assert_eq!(outcome.output(), Some(&raw_output));
    assert_eq!(
        outcome.to_model_value(),
        raw_output,
        "the model sees raw output"
    );
    assert_eq!(
        seen.lock().unwrap()[0],
        json!({ "user": "ann", "password": "hunter2" }),
        "execute sees raw input"
    );

    let got = drain(&mut events);
    assert!(
        !got.iter()
            .any(|e| matches!(e.kind, EventKind::InputDelta { .. })),
        "deltas are suppressed when display is configured without a delta transformer"
    );
    let input = got
        .iter()
        .find(|e| matches!(e.kind, EventKind::InputAvailable { .. }))
        .unwrap();
    let EventKind::InputAvailable { payload } = &input.kind else {
        unreachable!()
    };
    assert_eq!(payload.display, json!({ "user": "ann" }));
    assert_eq!(
        payload.transcript,
        json!({ "message": "Tool input-available payload unavailable" })
    );
    let output = got
        .iter()
        .find(|e| matches!(e.kind, EventKind::Output { .. }))
        .unwrap();
    let EventKind::Output { payload } = &output.kind else {
        unreachable!()
    };
    assert_eq!(payload.display, json!({ "ok": true }));
    let entry = output.transcript().unwrap();
    assert_eq!(
        (entry.call_id.as_str(), entry.tool_id.as_str(), entry.phase),
        ("c1", "secret", Phase::Output)
    );
    assert_eq!(entry.payload, json!("[redacted output]"));

    let failed = runtime
        .call(ToolCall::new("c2", "secret", json!({ "fail": 1 })))
        .await;
    assert_eq!(failed.error().unwrap().message(), "boom");
    let got = drain(&mut events);
    let error = got
        .iter()
        .find(|e| matches!(e.kind, EventKind::Error { .. }))
        .unwrap();
    let EventKind::Error { payload } = &error.kind else {
        unreachable!()
    };
    assert_eq!(
        payload.display,
        json!({ "message": "Tool error payload unavailable" }),
        "a panicking transform shows the placeholder"
    );
}

#[tokio::test]
async fn without_subscribers_no_event_payload_is_built() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runtime = Runtime::builder()
        .tool(transformed_tool(&calls, &seen))
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new("c1", "secret", json!({ "user": "a" })))
        .await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "no subscriber: transforms never ran"
    );
    let events = runtime.events();
    runtime
        .call(ToolCall::new("c2", "secret", json!({ "user": "a" })))
        .await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "input display, output display, output transcript"
    );
    drop(events);
    runtime
        .call(ToolCall::new("c3", "secret", json!({ "user": "a" })))
        .await;
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}
