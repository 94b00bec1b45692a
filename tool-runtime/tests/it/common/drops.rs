//! Futures dropped at random points: `call()` of a background tool,
//! `approve()` and `resume()`, each cut off by a timeout of a random length.
//! Whatever the point, nothing is lost: a call either never became stored
//! or it runs exactly once, without a worker or `recover()` (its runtime is
//! alive), and a decision either never claimed the call (it is still
//! waiting) or the call runs to its end. Run against every store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{BackgroundConfig, Tool, ToolContext, ToolError};
use tool_runtime::store::IntoStore;
use tool_runtime::{CallOutcome, CallState, PendingKind, Runtime, RuntimeError, ToolCall};

/// Executions per call id.
type Executions = Arc<Mutex<HashMap<String, u32>>>;

/// A small seeded generator (xorshift64*): the points differ between runs
/// of the loop, and a failure prints its seed.
struct Points(u64);

impl Points {
    fn next_micros(&mut self, max: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % max
    }
}

fn counting(
    id: &str,
    executions: &Executions,
    configure: impl FnOnce(tool_core::ToolBuilder) -> tool_core::ToolBuilder,
) -> Tool {
    let executions = Arc::clone(executions);
    configure(Tool::builder(id).description("Counts its executions"))
        .resume_schema(json!({ "type": "boolean" }))
        .suspend_schema(json!({ "type": "object" }))
        .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
            let executions = Arc::clone(&executions);
            async move {
                if ctx.tool_id() == "ask" && ctx.resume_data().is_none() {
                    return ctx.suspend(json!({}));
                }
                *executions
                    .lock()
                    .unwrap()
                    .entry(ctx.call_id().to_owned())
                    .or_default() += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok::<_, ToolError>(json!({ "done": ctx.call_id() }))
            }
        })
        .build()
        .unwrap()
}

/// Drops `call`, `approve` and `resume` futures of `calls` calls each at
/// random points on `store`, then checks that nothing was lost or run twice.
pub async fn dropped_futures_lose_nothing<S: IntoStore>(store: S, prefix: &str, calls: usize) {
    let executions: Executions = Arc::default();
    let runtime = Runtime::builder()
        .tool(counting("task", &executions, |b| {
            b.background(BackgroundConfig::new())
        }))
        .tool(counting("pay", &executions, |b| b.require_approval(true)))
        .tool(counting("ask", &executions, |b| b))
        .store(store)
        .build()
        .unwrap();
    let seed = std::process::id() as u64 | 1;
    let mut points = Points(seed);
    let id = |kind: &str, i: usize| format!("{prefix}-{kind}-{i}");
    for i in 0..calls {
        let call = runtime.call(ToolCall::new(id("task", i), "task", json!({})));
        let _ = tokio::time::timeout(Duration::from_micros(points.next_micros(3_000)), call).await;
    }
    for i in 0..calls {
        let waiting = runtime
            .call(ToolCall::new(id("pay", i), "pay", json!({})))
            .await;
        assert!(
            matches!(waiting, CallOutcome::ApprovalRequired { .. }),
            "{waiting:?}"
        );
        let approve = runtime.approve(&id("pay", i));
        let _ =
            tokio::time::timeout(Duration::from_micros(points.next_micros(3_000)), approve).await;
        let suspended = runtime
            .call(ToolCall::new(id("ask", i), "ask", json!({})))
            .await;
        assert!(
            matches!(suspended, CallOutcome::Suspended { .. }),
            "{suspended:?}"
        );
        let resume = runtime.resume(&id("ask", i), json!(true));
        let _ =
            tokio::time::timeout(Duration::from_micros(points.next_micros(3_000)), resume).await;
    }

    // Settled by the live runtime alone: no worker, no recover().
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    for kind in ["task", "pay", "ask"] {
        for i in 0..calls {
            let call_id = id(kind, i);
            loop {
                let stored = runtime.inbox().stored(&call_id).await.unwrap();
                match stored.as_ref().map(|s| (&s.state, s.call.kind)) {
                    // Dropped before it was stored: it never happened.
                    None if kind == "task" => break,
                    Some((CallState::Settled { outcome, .. }, _)) => {
                        assert_eq!(
                            CallOutcome::from(outcome.clone()).output(),
                            Some(&json!({ "done": call_id })),
                            "seed {seed}"
                        );
                        break;
                    }
                    // The decision was dropped before it claimed the call:
                    // it still waits, and deciding again runs it.
                    Some((CallState::Pending, PendingKind::Approval | PendingKind::Suspended)) => {
                        let outcome = match kind {
                            "pay" => runtime.approve(&call_id).await,
                            _ => runtime.resume(&call_id, json!(true)).await,
                        };
                        match outcome {
                            Ok(outcome) => assert!(outcome.output().is_some(), "{outcome:?}"),
                            Err(RuntimeError::Running { .. }) => {}
                            Err(error) => panic!("{call_id}: {error} (seed {seed})"),
                        }
                    }
                    other => {
                        assert!(
                            tokio::time::Instant::now() < deadline,
                            "{call_id} is stuck: {other:?} (seed {seed})"
                        );
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
            }
        }
    }
    let executions = executions.lock().unwrap();
    for (call_id, count) in executions.iter() {
        assert_eq!(*count, 1, "{call_id} ran {count} times (seed {seed})");
    }
    for i in 0..calls {
        for kind in ["pay", "ask"] {
            assert_eq!(executions.get(&id(kind, i)), Some(&1), "seed {seed}");
        }
    }
}
