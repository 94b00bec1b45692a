//! Background tasks (timeouts, retries, failure, callbacks), cancellation,
//! time limits, and the tracing span of a call.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Capture;
use serde_json::{Value, json};
use tool_core::{BackgroundConfig, Disposition, ErrorKind, Tool, ToolContext, ToolError};
use tool_runtime::{BackgroundResult, CallOutcome, EventKind, Runtime, RuntimeError, ToolCall};

/// A tool whose attempts fail `fail_first` times, then succeed; `sleep_ms`
/// makes every attempt take that long (until aborted).
fn flaky(
    id: &str,
    background: BackgroundConfig,
    fail_first: u32,
    sleep_ms: u64,
) -> (Tool, Arc<AtomicU32>) {
    let attempts = Arc::new(AtomicU32::new(0));
    let count = attempts.clone();
    let tool = Tool::builder(id)
        .description("Sometimes fails")
        .background(background)
        .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
            let attempt = count.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if sleep_ms > 0 {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(sleep_ms)) => {}
                        () = ctx.abort_signal().aborted() => return Err(ToolError::new("stopped")),
                    }
                }
                if attempt <= fail_first {
                    return Err(ToolError::new(format!("attempt {attempt} failed")));
                }
                Ok::<_, ToolError>(json!({ "input": input, "attempt": attempt }))
            }
        })
        .build()
        .unwrap();
    (tool, attempts)
}

type Results = Arc<Mutex<Vec<(String, BackgroundResult)>>>;

fn with_callbacks(
    builder: tool_runtime::RuntimeBuilder,
    results: &Results,
) -> tool_runtime::RuntimeBuilder {
    let (ok, failed) = (results.clone(), results.clone());
    builder
        .on_background_complete(move |r| ok.lock().unwrap().push(("complete".into(), r.clone())))
        .on_background_failed(move |r| failed.lock().unwrap().push(("failed".into(), r.clone())))
}

/// Calls the background tool `tool_id` (call `c1`) and returns its task id.
async fn start(runtime: &Runtime, tool_id: &str) -> String {
    match runtime.call(ToolCall::new("c1", tool_id, json!({}))).await {
        CallOutcome::BackgroundStarted { task_id } => task_id,
        other => panic!("expected a started background task, got {other:?}"),
    }
}

#[tokio::test]
async fn a_deferred_call_returns_started_and_wait_gives_the_final_outcome() {
    let (tool, attempts) = flaky("report", BackgroundConfig::new(), 0, 800);
    let results = Results::default();
    let runtime = with_callbacks(Runtime::builder().tool(tool), &results)
        .build()
        .unwrap();
    let mut events = runtime.events();

    let begun = std::time::Instant::now();
    let started = runtime
        .call(ToolCall::new("c1", "report", json!({ "q": 1 })))
        .await;
    assert!(
        begun.elapsed() < Duration::from_millis(400),
        "deferred: returns well before the 800 ms tool ends"
    );
    let CallOutcome::BackgroundStarted { task_id } = &started else {
        panic!("{started:?}")
    };
    assert_eq!(
        started.to_model_value(),
        json!(format!(
            "Background task started. Task ID: {task_id}. The result will be available when the task completes."
        ))
    );
    let done = runtime.wait(task_id).await.unwrap();
    assert_eq!(
        done.output(),
        Some(&json!({ "input": { "q": 1 }, "attempt": 1 }))
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert_eq!(
        runtime.wait(task_id).await.unwrap(),
        done,
        "wait can be repeated"
    );

    tokio::time::sleep(Duration::from_millis(5)).await;
    let results = results.lock().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "complete");
    assert_eq!(
        (results[0].1.call_id.as_str(), results[0].1.attempts),
        ("c1", 1)
    );

    let mut kinds = Vec::new();
    while let Some(event) = events.try_next() {
        kinds.push(event.kind);
    }
    assert!(kinds.contains(&EventKind::BackgroundStarted {
        task_id: task_id.clone()
    }));
    assert!(kinds.iter().any(|k| matches!(k, EventKind::BackgroundCompleted { task_id: t, outcome } if t == task_id && outcome == &done)));
}

#[tokio::test]
async fn a_foreground_background_call_returns_its_final_outcome() {
    let (tool, _) = flaky(
        "report",
        BackgroundConfig::new().disposition(Disposition::Foreground),
        1,
        0,
    );
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let outcome = runtime.call(ToolCall::new("c1", "report", json!({}))).await;
    assert_eq!(
        outcome.error().unwrap().message(),
        "attempt 1 failed",
        "no retries configured"
    );
}

#[tokio::test]
async fn background_retries_until_an_attempt_succeeds() {
    let (tool, attempts) = flaky("report", BackgroundConfig::new().max_retries(3), 2, 0);
    let results = Results::default();
    let runtime = with_callbacks(Runtime::builder().tool(tool), &results)
        .build()
        .unwrap();
    let task_id = start(&runtime, "report").await;
    let done = runtime.wait(&task_id).await.unwrap();
    assert_eq!(done.output().unwrap()["attempt"], 3);
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(results.lock().unwrap()[0].1.attempts, 3);
}

#[tokio::test]
async fn background_failure_after_retries_calls_on_failed() {
    let (tool, attempts) = flaky("report", BackgroundConfig::new().max_retries(2), 10, 0);
    let results = Results::default();
    let runtime = with_callbacks(Runtime::builder().tool(tool), &results)
        .build()
        .unwrap();
    let task_id = start(&runtime, "report").await;
    let done = runtime.wait(&task_id).await.unwrap();
    assert_eq!(done.error().unwrap().message(), "attempt 3 failed");
    assert_eq!(attempts.load(Ordering::SeqCst), 3, "1 attempt + 2 retries");
    tokio::time::sleep(Duration::from_millis(5)).await;
    let results = results.lock().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "failed");
    assert_eq!(results[0].1.attempts, 3);
}

#[tokio::test]
async fn background_timeout_fires_the_abort_signal_then_retries_then_fails() {
    let (tool, attempts) = flaky(
        "slow",
        BackgroundConfig::new().timeout_ms(30).max_retries(1),
        0,
        5_000,
    );
    let results = Results::default();
    let runtime = with_callbacks(Runtime::builder().tool(tool), &results)
        .build()
        .unwrap();
    let begun = std::time::Instant::now();
    let task_id = start(&runtime, "slow").await;
    let done = runtime.wait(&task_id).await.unwrap();
    assert!(
        begun.elapsed() < Duration::from_secs(2),
        "timeouts cut the 5 s attempts"
    );
    let error = done.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Execution);
    assert_eq!(
        error.message(),
        "Tool slow timed out after 30 ms (2 attempts)"
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(results.lock().unwrap()[0].0, "failed");
}

#[tokio::test]
async fn cancelling_a_background_task_stops_it_without_retries() {
    let (tool, attempts) = flaky("slow", BackgroundConfig::new().max_retries(5), 0, 5_000);
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let task_id = start(&runtime, "slow").await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    runtime.cancel("c1").unwrap();
    assert_eq!(runtime.wait(&task_id).await.unwrap(), CallOutcome::Aborted);
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn waiting_for_an_unknown_task_is_an_error() {
    let runtime = Runtime::builder().build().unwrap();
    let error = runtime.wait("task-404").await.unwrap_err();
    assert!(matches!(error, RuntimeError::UnknownTask { .. }));
    assert!(error.to_string().contains("task-404"));
}

#[tokio::test]
async fn approving_a_background_tool_starts_the_task() {
    let tool = Tool::builder("guarded")
        .description("Needs approval, runs in the background")
        .require_approval(true)
        .background(BackgroundConfig::new())
        .execute(|_input: Value, _ctx: ToolContext<Value, Value>| async {
            Ok::<_, ToolError>(json!("ran"))
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    assert!(matches!(
        runtime
            .call(ToolCall::new("c1", "guarded", json!({})))
            .await,
        CallOutcome::ApprovalRequired { .. }
    ));
    let CallOutcome::BackgroundStarted { task_id } = runtime.approve("c1").await.unwrap() else {
        panic!()
    };
    assert_eq!(
        runtime.wait(&task_id).await.unwrap().output(),
        Some(&json!("ran"))
    );
}

// ---- abort ------------------------------------------------------------------

/// A tool that waits for its abort signal and records that it saw it.
fn waits_for_abort(id: &str, saw_abort: &Arc<AtomicBool>) -> Tool {
    let saw = saw_abort.clone();
    Tool::builder(id)
        .description("Runs until aborted")
        .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
            let saw = saw.clone();
            async move {
                ctx.abort_signal().aborted().await;
                saw.store(true, Ordering::SeqCst);
                Err::<Value, _>(ToolError::new("interrupted"))
            }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn cancel_fires_the_abort_signal_and_the_call_ends_aborted_and_logged() {
    let capture = Capture::default();
    let _guard = capture.install();
    let saw = Arc::new(AtomicBool::new(false));
    let runtime = Runtime::builder()
        .tool(waits_for_abort("wait", &saw))
        .build()
        .unwrap();
    let mut events = runtime.events();
    let call = runtime.call(ToolCall::new("c1", "wait", json!({})));
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        runtime.cancel("c1").unwrap();
    };
    let (outcome, ()) = tokio::join!(call, cancel);
    assert_eq!(
        outcome,
        CallOutcome::Aborted,
        "aborted, not an error result"
    );
    assert!(
        saw.load(Ordering::SeqCst),
        "the tool saw its abort signal fire"
    );
    assert!(
        capture
            .logs()
            .iter()
            .any(|l| l.contains("aborted") && l.contains("reason=cancelled")),
        "{:?}",
        capture.logs()
    );
    let mut kinds = Vec::new();
    while let Some(event) = events.try_next() {
        kinds.push(event.kind);
    }
    assert!(kinds.contains(&EventKind::Aborted));
    let error = runtime.cancel("c1").unwrap_err();
    assert!(matches!(error, RuntimeError::NotRunning { .. }), "{error}");
}

#[tokio::test]
async fn per_call_per_tool_and_runtime_timeouts_abort_the_call() {
    let capture = Capture::default();
    let _guard = capture.install();
    let saw = Arc::new(AtomicBool::new(false));
    let a = waits_for_abort("a", &saw);
    let b = waits_for_abort("b", &saw);
    let runtime = Runtime::builder()
        .tool(a)
        .tool(b)
        .tool_timeout("b", Duration::from_millis(20))
        .build()
        .unwrap();
    let call = ToolCall::new("c1", "a", json!({})).with_timeout(Duration::from_millis(20));
    assert_eq!(runtime.call(call).await, CallOutcome::Aborted);
    assert!(saw.swap(false, Ordering::SeqCst));
    assert_eq!(
        runtime.call(ToolCall::new("c2", "b", json!({}))).await,
        CallOutcome::Aborted
    );
    assert!(saw.swap(false, Ordering::SeqCst));
    assert!(
        capture
            .logs()
            .iter()
            .any(|l| l.contains("aborted") && l.contains("reason=timed out"))
    );

    let with_default = Runtime::builder()
        .tool(waits_for_abort("a", &saw))
        .timeout(Duration::from_millis(20))
        .build()
        .unwrap();
    assert_eq!(
        with_default.call(ToolCall::new("c3", "a", json!({}))).await,
        CallOutcome::Aborted
    );
}

#[tokio::test]
async fn every_call_runs_in_a_span_with_tool_and_call_ids_and_observe_spans_nest_in_it() {
    let capture = Capture::default();
    let _guard = capture.install();
    let tool = Tool::builder("observed")
        .description("Logs through observe()")
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            let span = ctx.observe().span("fetch");
            let _entered = span.enter();
            ctx.observe().info("fetching");
            Ok::<_, ToolError>(json!(1))
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    runtime
        .call(ToolCall::new("call-77", "observed", json!({})))
        .await;
    let spans = capture.spans();
    let call = spans
        .iter()
        .find(|s| s.name == "tool.call")
        .expect("a call span");
    assert!(
        call.fields.contains("tool_id=observed") && call.fields.contains("call_id=call-77"),
        "{call:?}"
    );
    let execute = spans.iter().find(|s| s.name == "tool.execute").unwrap();
    assert_eq!(execute.parent.as_deref(), Some("tool.call"));
    let observe = spans.iter().find(|s| s.name == "tool.observe").unwrap();
    assert_eq!(observe.parent.as_deref(), Some("tool.execute"));
    assert!(
        capture
            .logs()
            .iter()
            .any(|l| l.contains("fetching") && l.contains("in:tool.call in:tool.execute"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_calls_complete_with_their_own_results() {
    let tool = Tool::builder("square")
        .description("Squares n; panics on multiples of 1000")
        .input_schema(json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] }))
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            let n = input["n"].as_i64().unwrap_or(0);
            tokio::task::yield_now().await;
            assert!(n % 1000 != 999, "tool bug on {n}");
            Ok::<_, ToolError>(json!({ "n": n, "square": n * n }))
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let handles: Vec<_> = (0..10_000i64)
        .map(|n| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                runtime
                    .call(ToolCall::new(format!("c{n}"), "square", json!({ "n": n })))
                    .await
            })
        })
        .collect();
    let mut panicked = 0;
    for (n, handle) in (0..10_000i64).zip(handles) {
        let outcome = handle.await.expect("the runtime never panics");
        if n % 1000 == 999 {
            assert_eq!(outcome.error().unwrap().kind(), ErrorKind::Panic);
            panicked += 1;
        } else {
            assert_eq!(outcome.output(), Some(&json!({ "n": n, "square": n * n })));
        }
    }
    assert_eq!(panicked, 10);
    // The same runtime still serves after the panics.
    let after = runtime
        .call(ToolCall::new("after", "square", json!({ "n": 5 })))
        .await;
    assert_eq!(after.output(), Some(&json!({ "n": 5, "square": 25 })));
}
