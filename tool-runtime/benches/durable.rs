//! Durable calls per second on SQLite: create (stored for approval) +
//! approve + execute + settle, through the runtime, sequentially and 32 at
//! once, next to the raw database limit measured in the same run: the same
//! statements with the same durability settings (WAL, `synchronous =
//! FULL`, one immediate transaction per transition), without the runtime.
//!
//! Run: `cargo bench -p tool-runtime --bench durable`
//! (criterion's "thrpt" is calls per second).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

const CONCURRENT: u64 = 32;

fn temp_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-runtime-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

fn runtime(path: PathBuf) -> Runtime {
    let pay = Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(input)
        })
        .build()
        .expect("tool");
    Runtime::builder()
        .tool(pay)
        .sqlite_store(path)
        .build()
        .expect("runtime")
}

/// One durable call through the runtime.
async fn through_runtime(runtime: &Runtime, n: u64) {
    let call_id = format!("c{n}");
    let waiting = runtime
        .call(ToolCall::new(call_id.as_str(), "pay", json!({ "n": n })))
        .await;
    assert!(matches!(waiting, CallOutcome::ApprovalRequired { .. }));
    let done = runtime.approve(&call_id).await.expect("approve");
    assert!(done.output().is_some());
}

/// The raw database side of one call: the statements the SQLite store runs
/// for it (insert; a read, then claim in a transaction; settle in one).
fn raw_call(conn: &Mutex<Connection>, n: u64) {
    let mut conn = conn.lock().expect("connection");
    let call_id = format!("c{n}");
    let record = json!({ "call_id": call_id, "input": { "n": n } }).to_string();
    conn.execute(
        "INSERT INTO calls (call_id, kind, tool_id, state, attempt, record)
         VALUES (?1, 'approval', 'pay', 'pending', 0, ?2)",
        params![call_id, record],
    )
    .expect("insert");
    let read = |conn: &Connection| -> Option<String> {
        conn.query_row(
            "SELECT record FROM calls WHERE call_id = ?1",
            params![call_id],
            |row| row.get(0),
        )
        .optional()
        .expect("read")
    };
    read(&conn).expect("stored");
    for update in [
        "UPDATE calls SET state = 'running', owner = 'bench', lease_expires_at = 1, attempt = attempt + 1 WHERE call_id = ?1",
        "UPDATE calls SET state = 'settled', owner = NULL, outcome = '{\"status\":\"completed\",\"output\":1}', settled_at = 1 WHERE call_id = ?1",
    ] {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        read(&tx).expect("stored");
        tx.execute(update, params![call_id]).expect("update");
        tx.commit().expect("commit");
    }
}

fn raw_connection(path: PathBuf) -> Arc<Mutex<Connection>> {
    // The store creates the file and its table; the raw side then uses its
    // own connection with the store's durability settings.
    drop(tool_runtime::SqliteStore::open(&path).expect("store"));
    let conn = Connection::open(&path).expect("open");
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy timeout");
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("synchronous");
    Arc::new(Mutex::new(conn))
}

fn durable_calls(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let next = Arc::new(AtomicU64::new(0));
    let mut group = c.benchmark_group("sqlite_create_approve_execute");
    group.sample_size(20);

    group.throughput(Throughput::Elements(1));
    let rt = runtime(temp_file("sequential.sqlite"));
    group.bench_function("runtime/sequential", |b| {
        b.to_async(&tokio)
            .iter(|| through_runtime(&rt, next.fetch_add(1, Ordering::Relaxed)));
    });
    let raw = raw_connection(temp_file("raw-sequential.sqlite"));
    group.bench_function("raw/sequential", |b| {
        b.iter(|| raw_call(&raw, next.fetch_add(1, Ordering::Relaxed)));
    });

    group.throughput(Throughput::Elements(CONCURRENT));
    let rt = runtime(temp_file("concurrent.sqlite"));
    group.bench_function("runtime/32_concurrent", |b| {
        b.to_async(&tokio).iter(|| async {
            let calls: Vec<_> = (0..CONCURRENT)
                .map(|_| {
                    let (rt, n) = (rt.clone(), next.fetch_add(1, Ordering::Relaxed));
                    tokio::spawn(async move { through_runtime(&rt, n).await })
                })
                .collect();
            for call in calls {
                call.await.expect("call");
            }
        });
    });
    // The raw limit with 32 callers: they share one connection (SQLite
    // serializes writers anyway), each on a blocking thread, as the store's
    // jobs are.
    let raw = raw_connection(temp_file("raw-concurrent.sqlite"));
    group.bench_function("raw/32_concurrent", |b| {
        b.to_async(&tokio).iter(|| async {
            let calls: Vec<_> = (0..CONCURRENT)
                .map(|_| {
                    let (raw, n) = (Arc::clone(&raw), next.fetch_add(1, Ordering::Relaxed));
                    tokio::task::spawn_blocking(move || raw_call(&raw, n))
                })
                .collect();
            for call in calls {
                call.await.expect("call");
            }
        });
    });
    group.finish();
}

criterion_group!(benches, durable_calls);
criterion_main!(benches);
