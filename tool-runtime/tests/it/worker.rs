//! Workers: tasks stored by a runtime that leaves them to workers run on a
//! worker of another runtime sharing the store, once each, woken by the
//! store's signal (their poll is an hour away), within their concurrency,
//! with their retries; a worker told to stop waits for the tasks it runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{BackgroundConfig, Tool, ToolContext, ToolError};
use tool_runtime::store::{IntoStore, MemoryStore};
use tool_runtime::{CallOutcome, CallState, Runtime, ToolCall};

/// Far beyond any test: a task that runs was found through the signal.
const NEVER: Duration = Duration::from_secs(3600);
/// A bound on a test that would otherwise hang when a task is never run.
const BOUND: Duration = Duration::from_secs(20);

/// `report`: a background tool that logs the `n` of each run with the
/// instance that ran it, and fails its first attempt for `n` = "flaky".
fn report(instance: &'static str, runs: &Arc<Mutex<Vec<String>>>) -> Tool {
    let runs = Arc::clone(runs);
    Tool::builder("report")
        .description("Builds a report")
        .background(BackgroundConfig::new().timeout_ms(10_000).max_retries(1))
        .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
            runs.lock()
                .unwrap()
                .push(format!("{} {instance}:{}", input["n"], ctx.attempt()));
            async move {
                if input["n"] == "flaky" && ctx.attempt() == 1 {
                    return Err(ToolError::new("flaked"));
                }
                Ok::<_, ToolError>(json!({ "report": input["n"] }))
            }
        })
        .build()
        .unwrap()
}

fn front(store: impl IntoStore, runs: &Arc<Mutex<Vec<String>>>) -> Runtime {
    Runtime::builder()
        .tool(report("front", runs))
        .store(store)
        .leave_tasks_to_workers(true)
        .build()
        .unwrap()
}

fn back(instance: &'static str, store: impl IntoStore, runs: &Arc<Mutex<Vec<String>>>) -> Runtime {
    Runtime::builder()
        .tool(report(instance, runs))
        .store(store)
        .build()
        .unwrap()
}

async fn wait(runtime: &Runtime, task_id: &str) -> CallOutcome {
    tokio::time::timeout(BOUND, runtime.wait(task_id))
        .await
        .unwrap_or_else(|_| panic!("task {task_id} never settled"))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_left_to_workers_run_once_each_on_some_worker_woken_by_the_store() {
    let runs = Arc::default();
    let store = Arc::new(MemoryStore::new());
    let front = front(Arc::clone(&store), &runs);
    let workers: Vec<_> = ["back-1", "back-2", "back-3"]
        .into_iter()
        .map(|instance| {
            let back = back(instance, Arc::clone(&store), &runs);
            tokio::spawn(back.worker().poll_every(NEVER).run())
        })
        .collect();
    // Each worker's first sweep finds nothing; every task below is stored after.
    tokio::time::sleep(Duration::from_millis(50)).await;

    for i in 0..30 {
        let started = front
            .call(ToolCall::new(format!("c{i}"), "report", json!({ "n": i })))
            .await;
        assert_eq!(
            started,
            CallOutcome::BackgroundStarted {
                task_id: format!("c{i}")
            }
        );
    }
    for i in 0..30 {
        let outcome = wait(&front, &format!("c{i}")).await;
        assert_eq!(outcome.output(), Some(&json!({ "report": i })));
    }
    let mut ran: Vec<String> = runs.lock().unwrap().clone();
    assert!(
        ran.iter().all(|run| !run.contains("front")),
        "the front end ran none: {ran:?}"
    );
    ran.sort_by_key(|run| run.split(' ').next().unwrap().parse::<usize>().unwrap());
    let numbers: Vec<&str> = ran.iter().map(|r| r.split(' ').next().unwrap()).collect();
    let expected: Vec<String> = (0..30).map(|i| i.to_string()).collect();
    assert_eq!(numbers, expected, "each task ran exactly once");
    for worker in workers {
        worker.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_tasks_with_their_declared_retries_and_records_them() {
    let runs = Arc::default();
    let store = Arc::new(MemoryStore::new());
    let front = front(Arc::clone(&store), &runs);
    let worker = tokio::spawn(back("back", Arc::clone(&store), &runs).worker().run());

    front
        .call(ToolCall::new("c1", "report", json!({ "n": "flaky" })))
        .await;
    let outcome = wait(&front, "c1").await;
    assert_eq!(
        outcome.output(),
        Some(&json!({ "report": "flaky" })),
        "{outcome:?}"
    );
    assert_eq!(
        *runs.lock().unwrap(),
        ["\"flaky\" back:1", "\"flaky\" back:2"]
    );
    let stored = front.inbox().stored("c1").await.unwrap().unwrap();
    assert!(
        matches!(stored.state, CallState::Settled { .. }),
        "{stored:?}"
    );
    worker.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_at_most_its_concurrency_and_waits_for_its_tasks_when_stopped() {
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let slow = {
        let (now, most) = (Arc::clone(&now), Arc::clone(&most));
        Tool::builder("slow")
            .description("Takes a while")
            .background(BackgroundConfig::new())
            .execute(move |_input: Value, _ctx: ToolContext<Value, Value>| {
                let (now, most) = (Arc::clone(&now), Arc::clone(&most));
                async move {
                    let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(running, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    now.fetch_sub(1, Ordering::SeqCst);
                    Ok::<_, ToolError>(json!("done"))
                }
            })
            .build()
            .unwrap()
    };
    let runtime = Runtime::builder()
        .tool(slow)
        .leave_tasks_to_workers(true)
        .build()
        .unwrap();
    for i in 0..8 {
        runtime
            .call(ToolCall::new(format!("c{i}"), "slow", json!({})))
            .await;
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(runtime.worker().concurrency(2).poll_every(NEVER).run_until(
        async move {
            let _ = stopped.await;
        },
    ));
    for i in 0..7 {
        wait(&runtime, &format!("c{i}")).await;
    }
    stop.send(()).unwrap();
    tokio::time::timeout(BOUND, worker)
        .await
        .expect("the worker stopped")
        .unwrap();
    // Stopped only once the tasks it had claimed ended.
    assert_eq!(now.load(Ordering::SeqCst), 0);
    assert_eq!(most.load(Ordering::SeqCst), 2, "two at once, never more");
    let last = runtime.inbox().stored("c7").await.unwrap().unwrap();
    assert!(
        matches!(last.state, CallState::Settled { .. } | CallState::Pending),
        "{last:?}"
    );
}

/// A new directory, removed with what it holds when the guard drops, also
/// when the test fails: keep the guard until the test's end.
fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tool-runtime-worker-")
        .tempdir()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_worker_is_woken_within_its_process_and_polls_for_other_connections() {
    let runs = Arc::default();
    let tmp = temp_dir();
    let path = tmp.path().join("tasks.sqlite");
    let shared = tool_runtime::store::SqliteStore::open(&path).unwrap();
    let near = front(shared.clone(), &runs);
    let woken = back("woken", shared, &runs);
    let woken = tokio::spawn(woken.worker().poll_every(NEVER).run());
    tokio::time::sleep(Duration::from_millis(50)).await;
    near.call(ToolCall::new("c1", "report", json!({ "n": 1 })))
        .await;
    assert_eq!(
        wait(&near, "c1").await.output(),
        Some(&json!({ "report": 1 }))
    );

    // Other connections to the file, as other processes have: a task stored
    // through one reaches the first worker by no signal, and a worker on
    // another finds it by polling.
    let far = front(
        tool_runtime::store::SqliteStore::open(&path).unwrap(),
        &runs,
    );
    let polling = back(
        "polling",
        tool_runtime::store::SqliteStore::open(&path).unwrap(),
        &runs,
    );
    let polling = tokio::spawn(
        polling
            .worker()
            .poll_every(Duration::from_millis(100))
            .run(),
    );
    far.call(ToolCall::new("c2", "report", json!({ "n": 2 })))
        .await;
    assert_eq!(
        wait(&far, "c2").await.output(),
        Some(&json!({ "report": 2 }))
    );
    assert_eq!(*runs.lock().unwrap(), ["1 woken:1", "2 polling:1"]);
    woken.abort();
    polling.abort();
}
