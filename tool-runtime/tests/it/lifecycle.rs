//! The lifecycle of stored calls through the runtime: a dropped decision
//! future loses nothing, a runtime that dies mid-run has its calls recovered
//! per the tool's declaration, racing deciders run a call at most once, and
//! a call whose lease was taken over stops here.

use crate::common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::echo_tool;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::store::{CallStore, MemoryStore};
use tool_runtime::{
    CallOutcome, CallState, PendingCall, PendingKind, Runtime, RuntimeError, ToolCall,
};

/// Waits (up to 5 s) until the call `call_id` is settled and returns its
/// recorded outcome.
async fn settled(runtime: &Runtime, call_id: &str) -> CallOutcome {
    for _ in 0..500 {
        let stored = runtime.inbox().stored(call_id).await.unwrap().unwrap();
        if let CallState::Settled { outcome, .. } = stored.state {
            return outcome.into();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("call {call_id} did not settle");
}

/// A tool that suspends on its first run and, resumed, waits for `gate`
/// before it answers; approval-required `gated` waits for it too.
fn gated_tools(gate: &Arc<Notify>, runs: &Arc<AtomicU32>) -> [Tool; 2] {
    let (g1, r1) = (Arc::clone(gate), Arc::clone(runs));
    let gated = Tool::builder("gated")
        .description("Waits for the gate")
        .require_approval(true)
        .execute(move |_input: Value, _ctx: ToolContext<Value, Value>| {
            let (gate, runs) = (Arc::clone(&g1), Arc::clone(&r1));
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                gate.notified().await;
                Ok::<_, ToolError>(json!("approved and done"))
            }
        })
        .build()
        .unwrap();
    let (g2, r2) = (Arc::clone(gate), Arc::clone(runs));
    let asking = Tool::builder("asking")
        .description("Asks, then waits for the gate")
        .resume_schema(json!({ "type": "string" }))
        .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
            let (gate, runs) = (Arc::clone(&g2), Arc::clone(&r2));
            async move {
                let Some(answer) = ctx.resume_data().cloned() else {
                    return ctx.suspend(json!({ "question": "go?" }));
                };
                runs.fetch_add(1, Ordering::SeqCst);
                gate.notified().await;
                Ok::<_, ToolError>(json!({ "resumed": answer }))
            }
        })
        .build()
        .unwrap();
    [gated, asking]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_an_approve_or_resume_future_mid_run_loses_nothing() {
    let (gate, runs) = (Arc::new(Notify::new()), Arc::new(AtomicU32::new(0)));
    let runtime = Runtime::builder()
        .tools(gated_tools(&gate, &runs))
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new("c-approve", "gated", json!({})))
        .await;
    runtime
        .call(ToolCall::new("c-resume", "asking", json!({})))
        .await;

    // A client that gives up while the tool runs: its future is dropped.
    let gave_up = tokio::time::timeout(Duration::from_millis(50), runtime.approve("c-approve"));
    assert!(gave_up.await.is_err(), "the tool waits for the gate");
    let gave_up = tokio::time::timeout(
        Duration::from_millis(50),
        runtime.resume("c-resume", json!("yes")),
    );
    assert!(gave_up.await.is_err(), "the tool waits for the gate");

    for call_id in ["c-approve", "c-resume"] {
        let stored = runtime.inbox().stored(call_id).await.unwrap().unwrap();
        assert!(
            matches!(stored.state, CallState::Running { .. }),
            "still running, not lost: {stored:?}"
        );
        assert!(matches!(
            runtime.approve(call_id).await,
            Err(RuntimeError::Running { .. }) | Err(RuntimeError::NotAwaitingApproval { .. })
        ));
    }
    assert!(matches!(
        runtime.resume("c-resume", json!("again")).await,
        Err(RuntimeError::Running { .. })
    ));

    gate.notify_waiters();
    let approved = settled(&runtime, "c-approve").await;
    assert_eq!(approved.output(), Some(&json!("approved and done")));
    let resumed = settled(&runtime, "c-resume").await;
    assert_eq!(resumed.output(), Some(&json!({ "resumed": "yes" })));
    // The client asks again and gets the outcome it missed.
    assert_eq!(runtime.approve("c-approve").await.unwrap(), approved);
    assert_eq!(
        runtime.resume("c-resume", json!("no")).await.unwrap(),
        resumed
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2, "each ran once");
}

/// Tools whose first run never ends (the process dies during it) and whose
/// later runs answer with their attempt number; `sync` is retry-safe.
fn interruptible_tools(started: &Arc<Mutex<Vec<String>>>) -> Vec<Tool> {
    ["pay", "sync"]
        .into_iter()
        .map(|id| {
            let started = Arc::clone(started);
            Tool::builder(id)
                .description("Never finishes its first run")
                .require_approval(true)
                .retry_safe(id == "sync")
                .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
                    started
                        .lock()
                        .unwrap()
                        .push(format!("{}:{}", ctx.call_id(), ctx.attempt()));
                    async move {
                        if ctx.attempt() == 1 {
                            std::future::pending::<()>().await;
                        }
                        Ok::<_, ToolError>(json!({ "attempt": ctx.attempt() }))
                    }
                })
                .build()
                .unwrap()
        })
        .collect()
}

#[test]
fn a_call_whose_runtime_died_mid_run_is_recovered_per_the_tools_declaration() {
    let store = Arc::new(MemoryStore::new());
    let started = Arc::new(Mutex::new(Vec::new()));
    let lease = Duration::from_millis(200);
    let instance = |id: &str| {
        Runtime::builder()
            .tools(interruptible_tools(&started))
            .store(Arc::clone(&store))
            .lease(lease)
            .instance_id(id)
            .build()
            .unwrap()
    };

    // Instance A approves two calls and dies while they run: its tokio
    // runtime stops, with every task on it, so nothing renews the leases.
    let dying = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let a = instance("a");
    dying.block_on(async {
        for (call_id, tool_id) in [("c-pay", "pay"), ("c-sync", "sync")] {
            let outcome = a.call(ToolCall::new(call_id, tool_id, json!({}))).await;
            assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
            drop(tokio::spawn(a.approve(call_id)));
        }
        while started.lock().unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    dying.shutdown_background();

    let b = instance("b");
    let survivor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    survivor.block_on(async {
        tokio::time::sleep(lease + Duration::from_millis(150)).await;
        let mut recovered = b.recover().await.unwrap();
        recovered.sort_by(|x, y| x.call_id.cmp(&y.call_id));
        assert_eq!(recovered.len(), 2, "{recovered:?}");

        let (pay, sync) = (&recovered[0], &recovered[1]);
        assert_eq!((pay.call_id.as_str(), pay.rerun), ("c-pay", false));
        let message = pay.outcome.error().expect("settled as failed").message();
        assert!(
            message.contains("interrupted") && message.contains("not declared retry-safe"),
            "{message}"
        );
        assert_eq!((sync.call_id.as_str(), sync.rerun), ("c-sync", true));
        assert_eq!(sync.outcome.output(), Some(&json!({ "attempt": 2 })));

        // Recorded: a decision asked again returns the outcome, from any instance.
        assert_eq!(b.approve("c-pay").await.unwrap(), pay.outcome);
        assert_eq!(a.approve("c-sync").await.unwrap(), sync.outcome);
        assert!(b.recover().await.unwrap().is_empty(), "recovered once");
    });
    let mut runs = started.lock().unwrap().clone();
    runs.sort();
    assert_eq!(
        runs,
        ["c-pay:1", "c-sync:1", "c-sync:2"],
        "the non-retry-safe call never ran again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_approvals_and_declines_from_two_runtimes_settle_each_call_once() {
    let store = Arc::new(MemoryStore::new());
    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let instance = || {
        Runtime::builder()
            .tool(tool.clone())
            .store(Arc::clone(&store))
            .build()
            .unwrap()
    };
    let (a, b) = (instance(), instance());
    let ids: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
    for id in &ids {
        a.call(ToolCall::new(id.as_str(), "pay", json!({ "id": id })))
            .await;
    }
    let mut deciders = Vec::new();
    for id in &ids {
        for n in 0..8 {
            let runtime = if n % 2 == 0 { a.clone() } else { b.clone() };
            let decision = if n % 4 < 2 {
                tokio::spawn(runtime.approve(id))
            } else {
                tokio::spawn(runtime.decline(id, Some("no")))
            };
            deciders.push((id.clone(), decision));
        }
    }
    let mut answers: Vec<(String, CallOutcome)> = Vec::new();
    for (id, decider) in deciders {
        match decider.await.unwrap() {
            Ok(outcome) => answers.push((id, outcome)),
            Err(RuntimeError::Running { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    let runs = runs.lock().unwrap().clone();
    for id in &ids {
        let recorded = settled(&a, id).await;
        let ran = runs
            .iter()
            .filter(|input| input["id"] == id.as_str())
            .count();
        match &recorded {
            CallOutcome::Declined { .. } => assert_eq!(ran, 0, "{id}: declined, never ran"),
            CallOutcome::Completed { .. } => assert_eq!(ran, 1, "{id}: approved, ran once"),
            other => panic!("{id}: {other:?}"),
        }
        for (_, answer) in answers.iter().filter(|(answered, _)| answered == id) {
            assert_eq!(
                answer, &recorded,
                "{id}: every answer is the recorded outcome"
            );
        }
    }
}

#[tokio::test]
async fn a_running_call_whose_lease_is_taken_over_is_aborted_here() {
    let waits = Tool::builder("waits")
        .description("Runs until aborted")
        .require_approval(true)
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            ctx.abort_signal().aborted().await;
            Ok::<_, ToolError>(json!("stopped"))
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder()
        .tool(waits)
        .store({
            // Every lease renewal is refused, as when another instance took
            // the call over.
            let store = common::faulty::Faulty::new(MemoryStore::new());
            store
                .renew_refused
                .store(true, std::sync::atomic::Ordering::SeqCst);
            store
        })
        .lease(Duration::from_millis(30))
        .build()
        .unwrap();
    runtime.call(ToolCall::new("c1", "waits", json!({}))).await;
    let answer = tokio::time::timeout(Duration::from_secs(5), runtime.approve("c1"))
        .await
        .expect("the first refused renewal stops the call");
    // The approver is answered with the store's record, never with what the
    // execution it stopped would have said.
    match answer {
        Err(RuntimeError::NotRecorded { call_id, reason }) => {
            assert_eq!(call_id, "c1");
            assert!(reason.contains("taken over"), "{reason}");
        }
        other => panic!("expected NotRecorded, got {other:?}"),
    }
}

/// A background tool that hangs on its first attempt (the process dies
/// during it) and answers with its attempt number after.
fn hanging_task(id: &str, max_retries: u32) -> Tool {
    Tool::builder(id)
        .description("Hangs on its first attempt")
        .background(tool_core::BackgroundConfig::new().max_retries(max_retries))
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            if ctx.attempt() == 1 {
                std::future::pending::<()>().await;
            }
            Ok::<_, ToolError>(json!({ "attempt": ctx.attempt() }))
        })
        .build()
        .unwrap()
}

#[test]
fn a_background_task_whose_runtime_died_is_run_again_while_it_has_retries() {
    let store = Arc::new(MemoryStore::new());
    let instance = |id: &str| {
        Runtime::builder()
            .tools([hanging_task("report", 1), hanging_task("once", 0)])
            .store(Arc::clone(&store))
            .lease(Duration::from_millis(100))
            .instance_id(id)
            .build()
            .unwrap()
    };
    let dying = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let a = instance("a");
    dying.block_on(async {
        for (call_id, tool_id) in [("c-report", "report"), ("c-once", "once")] {
            let started = a.call(ToolCall::new(call_id, tool_id, json!({}))).await;
            assert_eq!(
                started,
                CallOutcome::BackgroundStarted {
                    task_id: call_id.into()
                }
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    });
    drop(dying); // the runtime dies with its tasks

    let b = instance("b");
    let survivor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    survivor.block_on(async {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let mut recovered = b.recover().await.unwrap();
        recovered.sort_by(|x, y| x.call_id.cmp(&y.call_id));
        let summary: Vec<_> = recovered
            .iter()
            .map(|r| (r.call_id.as_str(), r.rerun))
            .collect();
        assert_eq!(summary, [("c-once", false), ("c-report", true)]);
        assert!(
            recovered[0]
                .outcome
                .error()
                .unwrap()
                .message()
                .contains("interrupted")
        );
        assert_eq!(
            recovered[1].outcome.output(),
            Some(&json!({ "attempt": 2 }))
        );
        // `wait` on any instance, after the fact, reads the recorded outcome.
        assert_eq!(b.wait("c-report").await.unwrap(), recovered[1].outcome);
        assert_eq!(a.wait("c-once").await.unwrap(), recovered[0].outcome);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_works_from_another_runtime_and_orphaned_tasks_are_claimed() {
    let store = Arc::new(MemoryStore::new());
    let slow = Tool::builder("slow")
        .description("Takes a while")
        .background(tool_core::BackgroundConfig::new())
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<_, ToolError>(json!({ "done": input }))
        })
        .build()
        .unwrap();
    let instance = || {
        Runtime::builder()
            .tool(slow.clone())
            .store(Arc::clone(&store))
            .build()
            .unwrap()
    };
    let (a, b) = (instance(), instance());
    let started = a.call(ToolCall::new("c1", "slow", json!({ "n": 1 }))).await;
    let CallOutcome::BackgroundStarted { task_id } = started else {
        panic!("{started:?}")
    };
    let from_b = b.wait(&task_id).await.unwrap();
    assert_eq!(from_b.output(), Some(&json!({ "done": { "n": 1 } })));
    assert_eq!(a.wait(&task_id).await.unwrap(), from_b);
    assert!(matches!(
        b.wait("no-such-task").await,
        Err(RuntimeError::UnknownTask { .. })
    ));

    // A task stored by a runtime that died before claiming it: claimed and
    // run by the next recovery, on any instance.
    store
        .insert(PendingCall::new(
            "c-orphan",
            "slow",
            PendingKind::Task,
            json!({ "n": 2 }),
        ))
        .await
        .unwrap();
    assert!(
        b.inbox().waiting().await.unwrap().is_empty(),
        "tasks are not decisions"
    );
    let recovered = b.recover().await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert!(recovered[0].rerun);
    assert_eq!(
        recovered[0].outcome.output(),
        Some(&json!({ "done": { "n": 2 } })),
        "{:?}",
        recovered[0]
    );
    assert_eq!(a.wait("c-orphan").await.unwrap(), recovered[0].outcome);
}
