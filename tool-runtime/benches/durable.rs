//! Durable calls per second on SQLite and PostgreSQL: create (stored for
//! approval) + approve + execute + settle, through the runtime, sequentially
//! and 32 at once, next to the raw database limit measured in the same run:
//! the same statements with the same durability settings, without the
//! runtime. SQLite: WAL, `synchronous = FULL`, one immediate transaction per
//! transition. PostgreSQL (feature `postgres`, with `DATABASE_URL` set):
//! the server's defaults (`fsync`, `synchronous_commit` on), one statement
//! per transition on a pool of 8 connections. The same rounds on the
//! memory store (no raw side) give the runtime's own cost of a round.
//!
//! Run: `cargo bench -p tool-runtime --bench durable`, and for PostgreSQL
//! `source .ci/postgres start && cargo bench -p tool-runtime --features postgres --bench durable`
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
    runtime_with(tool_runtime::store::SqliteStore::open(path).expect("store"))
}

fn runtime_with(store: impl tool_runtime::store::IntoStore) -> Runtime {
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
        .store(store)
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

/// [`CONCURRENT`] calls through the runtime at once, as spawned tasks.
async fn runtime_calls_at_once(rt: &Runtime, next: &AtomicU64) {
    join_all((0..CONCURRENT).map(|_| {
        let (rt, n) = (rt.clone(), next.fetch_add(1, Ordering::Relaxed));
        tokio::spawn(async move { through_runtime(&rt, n).await })
    }))
    .await;
}

/// Waits for every task, all started before the first is awaited.
async fn join_all<T>(tasks: impl IntoIterator<Item = tokio::task::JoinHandle<T>>) {
    let tasks: Vec<_> = tasks.into_iter().collect();
    for task in tasks {
        task.await.expect("call");
    }
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
    drop(tool_runtime::store::SqliteStore::open(&path).expect("store"));
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
    let sqlite = |name: &str| runtime(temp_file(&format!("{name}.sqlite")));
    let raw = |name: &str| raw_connection(temp_file(&format!("raw-{name}.sqlite")));
    approval_rounds(c, &tokio, "sqlite", sqlite, Some(&raw));
    // The runtime's own cost of a round, without a database.
    let memory = |_: &str| runtime_with(tool_runtime::store::MemoryStore::new());
    approval_rounds(c, &tokio, "memory", memory, None);
}

/// Opens the raw SQLite side's connection, by name.
type RawSide<'a> = &'a dyn Fn(&str) -> Arc<Mutex<Connection>>;

/// The group `{store}_create_approve_execute`: rounds through runtimes that
/// `runtime` opens (one per side, by name), sequentially and 32 at once,
/// each next to the raw SQLite side when `raw` opens its connection.
fn approval_rounds(
    c: &mut Criterion,
    tokio: &tokio::runtime::Runtime,
    store: &str,
    runtime: impl Fn(&str) -> Runtime,
    raw: Option<RawSide<'_>>,
) {
    let next = Arc::new(AtomicU64::new(0));
    let mut group = c.benchmark_group(format!("{store}_create_approve_execute"));
    group.sample_size(20);

    group.throughput(Throughput::Elements(1));
    let rt = runtime("sequential");
    group.bench_function("runtime/sequential", |b| {
        b.to_async(tokio)
            .iter(|| through_runtime(&rt, next.fetch_add(1, Ordering::Relaxed)));
    });
    if let Some(raw) = raw {
        let raw = raw("sequential");
        group.bench_function("raw/sequential", |b| {
            b.iter(|| raw_call(&raw, next.fetch_add(1, Ordering::Relaxed)));
        });
    }

    group.throughput(Throughput::Elements(CONCURRENT));
    let rt = runtime("concurrent");
    group.bench_function("runtime/32_concurrent", |b| {
        b.to_async(tokio).iter(|| runtime_calls_at_once(&rt, &next));
    });
    // The raw limit with 32 callers: they share one connection (SQLite
    // serializes writers anyway), each on a blocking thread, as the store's
    // jobs are.
    if let Some(raw) = raw {
        let raw = raw("concurrent");
        group.bench_function("raw/32_concurrent", |b| {
            b.to_async(tokio).iter(|| {
                join_all((0..CONCURRENT).map(|_| {
                    let (raw, n) = (Arc::clone(&raw), next.fetch_add(1, Ordering::Relaxed));
                    tokio::task::spawn_blocking(move || raw_call(&raw, n))
                }))
            });
        });
    }
    group.finish();
}

#[cfg(feature = "postgres")]
#[path = "pg/mod.rs"]
mod pg;

#[cfg(feature = "postgres")]
mod postgres {
    //! The PostgreSQL half: skipped without `DATABASE_URL`.

    use super::*;
    use tool_runtime::store::PostgresStore;

    /// A fresh schema for one side of the benchmark, so both start empty.
    async fn schema_url(url: &str, schema: &str) -> String {
        pg::fresh_schema(url, schema, "").await
    }

    /// The raw database side of one call: the statements the PostgreSQL
    /// store runs for it, prepared once per connection as the store's are:
    /// insert; read (the decision's lookup); claim in a transaction; settle.
    async fn raw_call(pool: &deadpool_postgres::Pool, n: u64) {
        let mut client = pool.get().await.expect("connection");
        let call_id = format!("c{n}");
        let input = json!({ "n": n }).to_string();
        let insert = client
            .prepare_cached(
                "INSERT INTO tool_runtime_calls (call_id, kind, tool_id, state, attempt, input, request_context, messages)
                 VALUES ($1, 'approval', 'pay', 'pending', 0, $2, '{}', '[]')",
            )
            .await
            .expect("prepare");
        client
            .execute(&insert, &[&call_id, &input])
            .await
            .expect("insert");
        let read = client
            .prepare_cached("SELECT * FROM tool_runtime_calls WHERE call_id = $1")
            .await
            .expect("prepare");
        client.query_opt(&read, &[&call_id]).await.expect("read");
        let tx = client.transaction().await.expect("begin");
        let claim = tx
            .prepare_cached(
                "UPDATE tool_runtime_calls SET state = 'running', owner = 'bench',
                     lease_expires_at = now() + interval '30 seconds', attempt = attempt + 1
                 WHERE call_id = $1 AND state = 'pending' AND kind = 'approval' RETURNING *",
            )
            .await
            .expect("prepare");
        tx.query_opt(&claim, &[&call_id]).await.expect("claim");
        tx.commit().await.expect("commit");
        let settle = client
            .prepare_cached(
                "UPDATE tool_runtime_calls SET state = 'settled', owner = NULL, lease_expires_at = NULL,
                     outcome = '{\"status\":\"completed\",\"output\":1}', settled_at = now()
                 WHERE call_id = $1 AND state = 'running' AND owner = 'bench'",
            )
            .await
            .expect("prepare");
        client.execute(&settle, &[&call_id]).await.expect("settle");
    }

    pub(super) fn durable_calls(c: &mut Criterion) {
        let Ok(url) = std::env::var("DATABASE_URL") else {
            println!("skipping the PostgreSQL benchmarks: DATABASE_URL is not set");
            return;
        };
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio");
        let (runtime_url, raw_url) = tokio.block_on(async {
            (
                schema_url(&url, "bench_runtime").await,
                schema_url(&url, "bench_raw").await,
            )
        });
        let (rt, raw) = tokio.block_on(async {
            let store = PostgresStore::connect(&runtime_url).await.expect("store");
            let rt = runtime_with(store);
            // The store creates the table; the raw side uses its own pool of 8.
            drop(PostgresStore::connect(&raw_url).await.expect("raw schema"));
            let config: tokio_postgres::Config = raw_url.parse().expect("url");
            let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
            let raw = deadpool_postgres::Pool::builder(manager)
                .max_size(8)
                .build()
                .expect("pool");
            (rt, raw)
        });
        let next = Arc::new(AtomicU64::new(0));
        let mut group = c.benchmark_group("postgres_create_approve_execute");
        group.sample_size(20);
        group.throughput(Throughput::Elements(1));
        group.bench_function("runtime/sequential", |b| {
            b.to_async(&tokio)
                .iter(|| through_runtime(&rt, next.fetch_add(1, Ordering::Relaxed)));
        });
        group.bench_function("raw/sequential", |b| {
            b.to_async(&tokio)
                .iter(|| raw_call(&raw, next.fetch_add(1, Ordering::Relaxed)));
        });
        group.throughput(Throughput::Elements(CONCURRENT));
        group.bench_function("runtime/32_concurrent", |b| {
            b.to_async(&tokio)
                .iter(|| runtime_calls_at_once(&rt, &next));
        });
        group.bench_function("raw/32_concurrent", |b| {
            b.to_async(&tokio).iter(|| {
                join_all((0..CONCURRENT).map(|_| {
                    let (raw, n) = (raw.clone(), next.fetch_add(1, Ordering::Relaxed));
                    tokio::spawn(async move { raw_call(&raw, n).await })
                }))
            });
        });
        group.finish();
    }
}

#[cfg(feature = "postgres")]
criterion_group!(benches, durable_calls, postgres::durable_calls);
#[cfg(not(feature = "postgres"))]
criterion_group!(benches, durable_calls);
criterion_main!(benches);
