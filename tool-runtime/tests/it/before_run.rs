//! `RuntimeBuilder::before_run`: a claimed call's check before its tool
//! runs. What it says decides whether the tool runs, the call is recovered
//! as interrupted (its decision recorded and audited all the same), or the
//! call stays claimed for a later recovery.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{BackgroundConfig, Tool, ToolContext, ToolError};
use tool_runtime::store::{AuditKind, AuditQuery, CallStore, MemoryStore, StoreError};
use tool_runtime::{
    CallOutcome, CallState, Decider, Decision, Principal, RunCheck, Runtime, RuntimeError,
    ToolCall, Worker,
};

/// `pay` (approval required) counting its runs.
fn pay(retry_safe: bool, runs: &Arc<AtomicUsize>) -> Tool {
    let runs = Arc::clone(runs);
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .retry_safe(retry_safe)
        .execute(move |_input: Value, _ctx: ToolContext<Value, Value>| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(json!("paid")) }
        })
        .build()
        .expect("pay")
}

/// A runtime on `store` whose check answers `answer` and counts its asks.
fn checked(
    tool: Tool,
    store: &Arc<MemoryStore>,
    asked: &Arc<AtomicUsize>,
    answer: fn() -> Result<RunCheck, StoreError>,
) -> Runtime {
    let asked = Arc::clone(asked);
    Runtime::builder()
        .tool(tool)
        .store(Arc::clone(store))
        .lease(Duration::from_millis(200))
        .before_run(move |_stored| {
            asked.fetch_add(1, Ordering::SeqCst);
            async move { answer() }
        })
        .build()
        .expect("runtime")
}

async fn approve(runtime: &Runtime, store: &MemoryStore) -> Result<CallOutcome, RuntimeError> {
    runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    let stored = store.get("c1").await.expect("get").expect("stored");
    let decider = Decider::new(Principal::new("alice"), stored.digest());
    runtime.decide_as("c1", Decision::Approve, decider).await
}

#[tokio::test]
async fn a_run_the_check_lets_through_runs_once() {
    let (store, asked, runs) = (Arc::default(), Arc::default(), Arc::default());
    let runtime = checked(pay(false, &runs), &store, &asked, || Ok(RunCheck::Run));
    let outcome = approve(&runtime, &store).await.expect("approve");
    assert_eq!(outcome.output(), Some(&json!("paid")));
    assert_eq!(
        (asked.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)),
        (1, 1)
    );
}

#[tokio::test]
async fn an_interrupted_run_is_settled_as_interrupted_and_its_decision_audited() {
    let (store, asked, runs) = (Arc::default(), Arc::default(), Arc::default());
    let runtime = checked(pay(false, &runs), &store, &asked, || {
        Ok(RunCheck::Interrupted)
    });
    let outcome = approve(&runtime, &store).await.expect("approve");
    let CallOutcome::Failed { error } = &outcome else {
        panic!("expected an interrupted call, got {outcome:?}")
    };
    assert!(error.message().contains("interrupted"), "{error:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "never ran");
    let audit = runtime
        .inbox()
        .audit(AuditQuery::all().call("c1"))
        .await
        .expect("audit");
    let decided: Vec<_> = audit
        .iter()
        .filter(|e| e.kind == AuditKind::Decided)
        .collect();
    assert_eq!(decided.len(), 1, "{audit:?}");
    assert_eq!(decided[0].principal.as_deref(), Some("alice"));
}

#[tokio::test]
async fn a_retry_safe_interrupted_run_runs_again_unchecked() {
    let (store, asked, runs) = (Arc::default(), Arc::default(), Arc::default());
    let runtime = checked(pay(true, &runs), &store, &asked, || {
        Ok(RunCheck::Interrupted)
    });
    let outcome = approve(&runtime, &store).await.expect("approve");
    assert_eq!(outcome.output(), Some(&json!("paid")));
    assert_eq!(
        (asked.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)),
        (1, 1),
        "checked once, run once by the recovery"
    );
}

#[tokio::test]
async fn a_check_that_fails_leaves_the_call_claimed_for_a_recovery() {
    let (store, asked, runs) = (Arc::default(), Arc::default(), Arc::default());
    let runtime = checked(pay(false, &runs), &store, &asked, || {
        Err(StoreError::Io {
            location: "the fence".into(),
            reason: "unreachable".into(),
            source: None,
        })
    });
    let refused = approve(&runtime, &store).await;
    assert!(
        matches!(refused, Err(RuntimeError::Store(_))),
        "{refused:?}"
    );
    let stored = store.get("c1").await.expect("get").expect("stored");
    assert!(
        matches!(stored.state, CallState::Running { .. }),
        "{stored:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    tokio::time::sleep(Duration::from_millis(400)).await;
    let recovered = runtime.recover().await.expect("recover");
    assert_eq!(recovered.len(), 1);
    assert!(matches!(recovered[0].outcome, CallOutcome::Failed { .. }));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "never ran");
}

#[tokio::test]
async fn a_task_a_worker_claims_is_checked_too() {
    let (store, asked, runs): (Arc<MemoryStore>, Arc<AtomicUsize>, Arc<AtomicUsize>) =
        Default::default();
    let counted = Arc::clone(&runs);
    let report = Tool::builder("report")
        .description("Reports")
        .background(BackgroundConfig::new())
        .execute(move |_input: Value, _ctx: ToolContext<Value, Value>| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(json!("ready")) }
        })
        .build()
        .expect("report");
    let asked_here = Arc::clone(&asked);
    let runtime = Runtime::builder()
        .tool(report)
        .store(Arc::clone(&store))
        .leave_tasks_to_workers(true)
        .before_run(move |_stored| {
            asked_here.fetch_add(1, Ordering::SeqCst);
            async { Ok(RunCheck::Interrupted) }
        })
        .build()
        .expect("runtime");
    runtime.call(ToolCall::new("t1", "report", json!({}))).await;
    let worker: Worker = runtime.worker();
    let working = tokio::spawn(worker.run());
    let outcome = runtime.wait("t1").await.expect("wait");
    working.abort();
    assert!(matches!(outcome, CallOutcome::Failed { .. }), "{outcome:?}");
    assert_eq!(
        (asked.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)),
        (1, 0)
    );
}
