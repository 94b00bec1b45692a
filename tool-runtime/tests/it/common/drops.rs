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

/// Many deciders on many waiting calls at once, their futures dropped at
/// random points, on a short lease (the adversarial suite's load: 300
/// suspended calls, each resumed by 20 callers, lease 1 s): under that
/// load the store is slow to answer, so a decision may claim a call only
/// after its lease ran out by this instance's clock. Such a claim is not
/// left to an outside recovery: every call ends, run once, by the live
/// runtime alone (no worker, no `recover()`), and a decision after that
/// is answered with its outcome, never `Running`. Half the calls are
/// resumed, half approved (a failure names its seed).
pub async fn decisions_under_load_never_stick<S: IntoStore>(
    store: S,
    prefix: &str,
    calls: usize,
    deciders: usize,
) {
    let executions: Executions = Arc::default();
    let runtime = Runtime::builder()
        .tool(counting("ask", &executions, |b| b))
        .tool(counting("pay", &executions, |b| b.require_approval(true)))
        .store(store)
        .lease(Duration::from_secs(1))
        .build()
        .unwrap();
    let seed = std::process::id() as u64 | 1;
    let mut points = Points(seed);
    let id = |i: usize| format!("{prefix}-load-{i}");
    // Half of them wait for resume data, half for an approval.
    let tool = |i: usize| if i.is_multiple_of(2) { "ask" } else { "pay" };
    let decide = |call_id: &str, i: usize| {
        let runtime = runtime.clone();
        let call_id = call_id.to_owned();
        async move {
            match tool(i) {
                "ask" => runtime.resume(&call_id, json!(true)).await,
                _ => runtime.approve(&call_id).await,
            }
        }
    };
    for i in 0..calls {
        let waiting = runtime.call(ToolCall::new(id(i), tool(i), json!({}))).await;
        assert!(
            matches!(
                waiting,
                CallOutcome::Suspended { .. } | CallOutcome::ApprovalRequired { .. }
            ),
            "{waiting:?}"
        );
    }
    let mut deciding = Vec::with_capacity(calls * deciders);
    for i in 0..calls {
        for _ in 0..deciders {
            let deciding_one = decide(&id(i), i);
            let cut_at = Duration::from_micros(points.next_micros(200_000));
            deciding.push(tokio::spawn(async move {
                let _ = tokio::time::timeout(cut_at, deciding_one).await;
            }));
        }
    }
    for decider in deciding {
        decider.await.unwrap();
    }
    // Ended by the live runtime: within a few leases of the last decider.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    for i in 0..calls {
        let call_id = id(i);
        loop {
            let stored = runtime.inbox().stored(&call_id).await.unwrap().unwrap();
            match &stored.state {
                CallState::Settled { outcome, .. } => {
                    let outcome = CallOutcome::from(outcome.clone());
                    assert_eq!(
                        outcome.output(),
                        Some(&json!({ "done": call_id })),
                        "seed {seed}"
                    );
                    let again = decide(&call_id, i).await;
                    assert_eq!(
                        again.ok(),
                        Some(outcome),
                        "{call_id}: answered with its outcome"
                    );
                    break;
                }
                // Every decider was dropped before one claimed it: it still
                // waits, and deciding again runs it.
                CallState::Pending => match runtime.resume(&call_id, json!(true)).await {
                    Ok(outcome) => assert!(outcome.output().is_some(), "{outcome:?}"),
                    Err(RuntimeError::Running { .. }) => {}
                    Err(error) => panic!("{call_id}: {error} (seed {seed})"),
                },
                other => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "{call_id} is stuck {other:?} with {:?} executions (seed {seed})",
                        executions.lock().unwrap().get(&call_id)
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
    let executions = executions.lock().unwrap();
    for i in 0..calls {
        assert_eq!(executions.get(&id(i)), Some(&1), "{} (seed {seed})", id(i));
    }
}
