//! Exactly-once effects: a transactional tool's database work commits with
//! its call's outcome and fencing check, or not at all (SQLite here;
//! PostgreSQL in `postgres.rs`); recovery runs an interrupted transactional
//! call again, and asks a tool's reconcile hook about an interrupted call
//! that is not safe to run again.

use crate::common;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{BackgroundConfig, Reconciled, Tool, ToolContext, ToolError};
use tool_runtime::store::{
    CallStore, Committed, MemoryStore, SqliteStore, SqliteTransaction, Transition,
};
use tool_runtime::{
    CallOutcome, CallState, PendingCall, PendingKind, Runtime, RuntimeError, ToolCall,
};

/// A new directory, removed with what it holds when the guard drops, also
/// when the test fails: keep the guard until the test's end.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tool-runtime-tx-{name}-"))
        .tempdir()
        .unwrap()
}

/// A store file with the application's own table, `payments`.
fn store_with_payments(dir: &Path) -> SqliteStore {
    let path = dir.join("app.sqlite");
    let store = SqliteStore::open(&path).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE payments (key TEXT PRIMARY KEY, amount INTEGER NOT NULL)")
        .unwrap();
    store
}

fn payments(dir: &Path) -> Vec<(String, i64)> {
    let conn = rusqlite::Connection::open(dir.join("app.sqlite")).unwrap();
    let mut rows = conn
        .prepare("SELECT key, amount FROM payments ORDER BY key")
        .unwrap();
    rows.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Records a payment in the call's transaction, keyed by its idempotency
/// key; `input.how` makes it misbehave.
fn record_payment() -> Tool {
    Tool::builder("record")
        .description("Records a payment")
        .transactional(true)
        .require_approval(false)
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            let tx = ctx
                .extension::<SqliteTransaction>()
                .cloned()
                .ok_or_else(|| ToolError::new("no transaction"))?;
            let amount = input["amount"].as_i64().unwrap_or(0);
            let key = ctx.idempotency_key().to_string();
            tx.defer(move |tx| {
                tx.execute(
                    "INSERT INTO payments (key, amount) VALUES (?1, ?2)",
                    (key, amount),
                )
                .map(drop)
            })
            .unwrap();
            match input["how"].as_str() {
                Some("failing work") => tx
                    .defer(|tx| {
                        tx.execute("INSERT INTO no_such_table VALUES (1)", [])
                            .map(drop)
                    })
                    .unwrap(),
                Some("tool error") => return Err(ToolError::new("the bank said no")),
                Some("kept clone") => {
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        drop(tx);
                    });
                }
                _ => {}
            }
            Ok::<_, ToolError>(json!({ "recorded": amount }))
        })
        .build()
        .unwrap()
}

fn recorded(stored: Option<tool_runtime::StoredCall>) -> CallOutcome {
    match stored.map(|s| s.state) {
        Some(CallState::Settled { outcome, .. }) => outcome.into(),
        other => panic!("not settled: {other:?}"),
    }
}

#[test]
fn a_transactional_tool_needs_a_store_that_runs_transactions_and_no_background() {
    let error = Runtime::builder()
        .tool(record_payment())
        .store(MemoryStore::new())
        .build()
        .unwrap_err();
    assert!(matches!(&error, RuntimeError::Transactional { tool_id, .. } if tool_id == "record"));
    assert!(error.to_string().contains("memory store cannot"), "{error}");

    let tmp = temp_dir("build");
    let dir = tmp.path().to_path_buf();
    let background =
        Tool::builder("report")
            .description("Builds a report")
            .transactional(true)
            .background(BackgroundConfig::new())
            .execute(
                |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                    Ok::<_, ToolError>(json!(1))
                },
            )
            .build()
            .unwrap();
    let error = Runtime::builder()
        .tool(background)
        .store(SqliteStore::open(dir.join("s.sqlite")).unwrap())
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("background"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_work_commits_with_the_outcome_or_not_at_all() {
    let tmp = temp_dir("commit");
    let dir = tmp.path().to_path_buf();
    let runtime = Runtime::builder()
        .tool(record_payment())
        .store(store_with_payments(&dir))
        .build()
        .unwrap();
    let call = |id: &str, input: Value| runtime.call(ToolCall::new(id, "record", input));

    let done = call("c1", json!({ "amount": 5 })).await;
    assert_eq!(done.output(), Some(&json!({ "recorded": 5 })));
    let key = tool_core::IdempotencyKey::derive("record", "c1").to_string();
    assert_eq!(payments(&dir), [(key, 5)]);
    assert_eq!(
        recorded(runtime.inbox().stored("c1").await.unwrap()),
        done,
        "stored and claimed before it ran"
    );

    for (id, how, says) in [
        ("c2", "failing work", "no_such_table"),
        ("c3", "tool error", "the bank said no"),
        ("c4", "kept clone", "outlived the tool"),
    ] {
        let outcome = call(id, json!({ "amount": 7, "how": how })).await;
        let message = outcome
            .error()
            .map(|e| e.message().to_owned())
            .unwrap_or_default();
        assert!(message.contains(says), "{how}: {outcome:?}");
        assert_eq!(
            recorded(runtime.inbox().stored(id).await.unwrap()),
            outcome,
            "{how}: the answer is the record"
        );
    }
    assert_eq!(
        payments(&dir).len(),
        1,
        "no work of a failed call committed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_for_a_claim_that_was_taken_over_commits_nothing() {
    let tmp = temp_dir("superseded");
    let dir = tmp.path().to_path_buf();
    let store = store_with_payments(&dir);
    let committed = common::contract::commit_after_takeover(&store, "c1", async |extensions| {
        extensions
            .get::<SqliteTransaction>()
            .unwrap()
            .defer(|tx| {
                tx.execute("INSERT INTO payments VALUES ('late', 1)", [])
                    .map(drop)
            })
            .unwrap();
    })
    .await;
    assert_eq!(committed, Committed::Superseded);
    assert!(
        payments(&dir).is_empty(),
        "the superseded execution's work is gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_runs_an_interrupted_transactional_call_again_once() {
    let tmp = temp_dir("recover");
    let dir = tmp.path().to_path_buf();
    let store = store_with_payments(&dir);
    store
        .insert(PendingCall::new(
            "c1",
            "record",
            PendingKind::Approval,
            json!({ "amount": 3 }),
        ))
        .await
        .unwrap();
    // Approved by a process that died before its commit: nothing of it is left.
    store
        .decide(
            "c1",
            PendingKind::Approval,
            Transition::Run {
                owner: "dead".into(),
                lease: Duration::from_millis(20),
                resume_data: None,
            },
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(60)).await;
    let survivor = Runtime::builder()
        .tool(record_payment())
        .store(store)
        .build()
        .unwrap();
    let recovered = survivor.recover().await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert!(
        recovered[0].rerun,
        "not retry-safe, but transactional: {recovered:?}"
    );
    assert_eq!(
        recovered[0].outcome.output(),
        Some(&json!({ "recorded": 3 }))
    );
    assert_eq!(payments(&dir).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_file_wait_for_each_others_transactions() {
    let tmp = temp_dir("busy");
    let dir = tmp.path().to_path_buf();
    let store = store_with_payments(&dir);
    let slow = Tool::builder("slow")
        .description("Holds the file's write lock for 300 ms in its commit")
        .transactional(true)
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            let tx = ctx.extension::<SqliteTransaction>().cloned().unwrap();
            tx.defer(|tx| {
                tx.execute("INSERT INTO payments VALUES ('slow', 1)", [])?;
                std::thread::sleep(Duration::from_millis(300));
                Ok::<_, rusqlite::Error>(())
            })
            .unwrap();
            Ok::<_, ToolError>(json!("slow"))
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(slow).store(store).build().unwrap();
    // Another "process": a second store on the same file, its own connection.
    let other = SqliteStore::open(dir.join("app.sqlite")).unwrap();
    let committing = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.call(ToolCall::new("c1", "slow", json!({}))).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Waits for the write lock (within the busy timeout), then succeeds.
    other
        .insert(PendingCall::new(
            "c2",
            "slow",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    assert_eq!(committing.await.unwrap().output(), Some(&json!("slow")));
    assert!(other.get("c2").await.unwrap().is_some());
    assert_eq!(payments(&dir).len(), 1);
}

/// A tool that is not safe to run again, whose reconcile hook knows what
/// became of an interrupted call: it happened for "ann", not for "bob",
/// and it cannot tell for anyone else.
fn send_email(executions: common::Runs) -> Tool {
    Tool::builder("send")
        .description("Sends an email")
        .output_schema(json!({ "type": "string" }))
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            executions.lock().unwrap().push(input.clone());
            async move { Ok::<_, ToolError>(json!("sent now")) }
        })
        .reconcile(
            |input: Value, _key, _ctx: ToolContext<Value, Value>| async move {
                match input["to"].as_str() {
                    Some("ann") => Ok(Reconciled::Happened(json!("sent before"))),
                    Some("bob") => Ok(Reconciled::NotHappened),
                    _ => Err(ToolError::new("the mail server does not answer")),
                }
            },
        )
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_asks_the_reconcile_hook_of_a_call_that_is_not_retry_safe() {
    let store = std::sync::Arc::new(MemoryStore::new());
    for (id, to) in [("c-ann", "ann"), ("c-bob", "bob"), ("c-eve", "eve")] {
        store
            .insert(PendingCall::new(
                id,
                "send",
                PendingKind::Approval,
                json!({ "to": to }),
            ))
            .await
            .unwrap();
        store
            .decide(
                id,
                PendingKind::Approval,
                Transition::Run {
                    owner: "dead".into(),
                    lease: Duration::from_millis(20),
                    resume_data: None,
                },
            )
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(60)).await;
    let executions = common::Runs::default();
    let runtime = Runtime::builder()
        .tool(send_email(executions.clone()))
        .store(store)
        .build()
        .unwrap();
    let mut recovered = runtime.recover().await.unwrap();
    recovered.sort_by(|a, b| a.call_id.cmp(&b.call_id));
    let seen: Vec<_> = recovered
        .iter()
        .map(|r| (r.call_id.as_str(), r.rerun, r.outcome.output().cloned()))
        .collect();
    assert_eq!(
        seen,
        [
            ("c-ann", false, Some(json!("sent before"))),
            ("c-bob", true, Some(json!("sent now"))),
            ("c-eve", false, None),
        ]
    );
    let message = recovered[2].outcome.error().unwrap().message().to_owned();
    assert!(
        message.contains("reconcile hook could not tell") && message.contains("does not answer"),
        "{message}"
    );
    assert_eq!(
        *executions.lock().unwrap(),
        [json!({ "to": "bob" })],
        "only bob's ran again"
    );
    for r in &recovered {
        assert_eq!(
            recorded(runtime.inbox().stored(&r.call_id).await.unwrap()),
            r.outcome
        );
    }
}

/// A call whose lease could not be renewed is stopped before its commit:
/// `call` hears that its outcome is not recorded (never the tool's own
/// output), nothing of its work exists, and recovery runs it again once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_before_the_commit_leaves_neither_work_nor_outcome() {
    let tmp = temp_dir("lost-lease");
    let dir = tmp.path().to_path_buf();
    let store = common::faulty::Faulty::new(store_with_payments(&dir));
    let slow = Tool::builder("record")
        .description("Records a payment slowly")
        .transactional(true)
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            let tx = ctx.extension::<SqliteTransaction>().cloned().unwrap();
            let key = ctx.idempotency_key().to_string();
            tx.defer(move |tx| {
                tx.execute("INSERT INTO payments VALUES (?1, 1)", [key])
                    .map(drop)
            })
            .unwrap();
            if input["slow"] == json!(true) {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            Ok::<_, ToolError>(json!("recorded"))
        })
        .build()
        .unwrap();
    let lease = Duration::from_millis(300);
    let runtime = Runtime::builder()
        .tool(slow)
        .store(store.clone())
        .lease(lease)
        .build()
        .unwrap();
    store
        .renew_down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let outcome = runtime
        .call(ToolCall::new("c1", "record", json!({ "slow": true })))
        .await;
    let message = outcome
        .error()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    assert!(
        message.contains("not recorded") && message.contains("c1"),
        "{outcome:?}"
    );
    assert!(payments(&dir).is_empty(), "no work without its outcome");
    assert!(matches!(
        runtime.inbox().stored("c1").await.unwrap().unwrap().state,
        CallState::Running { .. }
    ));
    store
        .renew_down
        .store(false, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(lease).await;
    let survivor = Runtime::builder()
        .tool(record_payment())
        .store(std::sync::Arc::clone(&store.store))
        .build()
        .unwrap();
    let recovered = survivor.recover().await.unwrap();
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert!(recovered[0].rerun);
    assert_eq!(payments(&dir).len(), 1, "its work once");
}
