//! The cost of exactly-once effects and of fencing (issue 22), on SQLite and
//! PostgreSQL, side by side in one run:
//!
//! - `stored`: the plain stored call of `durable.rs` (stored for approval,
//!   approved, executed, settled): the baseline.
//! - `transactional`: a transactional call through `runtime.call` (stored
//!   and claimed before it runs, then committed with its outcome and the
//!   fencing check) whose tool does one INSERT into an application table
//!   (SQLite: deferred; PostgreSQL: through the call's transaction).
//! - `plain_insert`: the same effect at least once: a plain call (not
//!   stored) whose tool does the same INSERT on its own connection (SQLite:
//!   its own rusqlite connection, in a blocking task; PostgreSQL: its own
//!   pool of `tokio_postgres` clients).
//!
//! each sequentially and 32 at once; then the store operations a claimed
//! call's fencing token guards (`CallStore` directly, one operation per
//! iteration, its setup untimed): `insert`, `decide` (a claim, which draws
//! the token), `renew` and `finish` by token.
//!
//! Run: `cargo bench -p tool-runtime --bench exactly_once`, and for
//! PostgreSQL `source .ci/postgres start && cargo bench -p tool-runtime --all-features --bench exactly_once`
//! (criterion's "thrpt" is calls, or operations, per second).

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use rusqlite::Connection;
use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::store::{
    CallStore, Decided, IntoStore, RecordedOutcome, Settlement, SqliteStore, SqliteTransaction,
    Transition,
};
use tool_runtime::{CallOutcome, PendingCall, PendingKind, Runtime, ToolCall};

const CONCURRENT: u64 = 32;
/// The application's own table, beside the store's.
const PAYMENTS: &str = "CREATE TABLE payments (key TEXT PRIMARY KEY, amount BIGINT NOT NULL)";

/// Which call a benchmark makes.
#[derive(Clone, Copy)]
enum Kind {
    /// Stored for approval, approved, executed, settled.
    Stored,
    /// Transactional, with one INSERT in the call's transaction.
    Transactional,
    /// Not stored, with the same INSERT on the tool's own connection.
    PlainInsert,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Stored, Kind::Transactional, Kind::PlainInsert];

    fn name(self) -> &'static str {
        match self {
            Kind::Stored => "stored",
            Kind::Transactional => "transactional",
            Kind::PlainInsert => "plain_insert",
        }
    }
}

fn temp_file(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("tool-runtime-exactly-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

/// The approval tool of `durable.rs`.
fn pay() -> Tool {
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(input)
        })
        .build()
        .expect("tool")
}

/// A plain (not stored) tool whose effect is `insert(key, amount)`.
fn plain_insert<F, Fut>(insert: F) -> Tool
where
    F: Fn(String, i64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    Tool::builder("record_plain")
        .description("Records a payment")
        .require_approval(false)
        .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
            let amount = input["amount"].as_i64().unwrap_or(0);
            let inserted = insert(ctx.idempotency_key().to_string(), amount);
            async move {
                inserted.await.map_err(ToolError::new)?;
                Ok::<_, ToolError>(json!({ "recorded": amount }))
            }
        })
        .build()
        .expect("tool")
}

fn runtime_with(store: impl IntoStore, tools: [Tool; 3]) -> Runtime {
    Runtime::builder()
        .tools(tools)
        .store(store)
        .build()
        .expect("runtime")
}

/// One call of `kind`.
async fn one_call(runtime: &Runtime, kind: Kind, n: u64) {
    let call_id = format!("c{n}");
    let tool = match kind {
        Kind::Stored => "pay",
        Kind::Transactional => "record",
        Kind::PlainInsert => "record_plain",
    };
    let outcome = runtime
        .call(ToolCall::new(
            call_id.as_str(),
            tool,
            json!({ "n": n, "amount": 1 }),
        ))
        .await;
    let done = match kind {
        Kind::Stored => {
            assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
            runtime.approve(&call_id).await.expect("approve")
        }
        Kind::Transactional | Kind::PlainInsert => outcome,
    };
    assert!(done.output().is_some(), "{done:?}");
}

/// [`CONCURRENT`] calls of `kind` at once, as spawned tasks.
async fn calls_at_once(runtime: &Runtime, kind: Kind, next: &AtomicU64) {
    let tasks: Vec<_> = (0..CONCURRENT)
        .map(|_| {
            let (rt, n) = (runtime.clone(), next.fetch_add(1, Ordering::Relaxed));
            tokio::spawn(async move { one_call(&rt, kind, n).await })
        })
        .collect();
    for task in tasks {
        task.await.expect("call");
    }
}

/// The calls of every kind, sequentially then 32 at once, each on a fresh
/// runtime (`runtime(kind, label)`) so that every benchmark starts empty.
fn bench_calls(
    group: &mut BenchmarkGroup<'_, WallTime>,
    tokio: &tokio::runtime::Runtime,
    runtime: impl Fn(Kind, &str) -> Runtime,
) {
    let next = AtomicU64::new(0);
    group.throughput(Throughput::Elements(1));
    for kind in Kind::ALL {
        let rt = runtime(kind, "sequential");
        group.bench_function(format!("{}/sequential", kind.name()), |b| {
            b.to_async(tokio)
                .iter(|| one_call(&rt, kind, next.fetch_add(1, Ordering::Relaxed)));
        });
    }
    group.throughput(Throughput::Elements(CONCURRENT));
    for kind in Kind::ALL {
        let rt = runtime(kind, "concurrent");
        group.bench_function(format!("{}/32_concurrent", kind.name()), |b| {
            b.to_async(tokio).iter(|| calls_at_once(&rt, kind, &next));
        });
    }
}

/// Which store operation a benchmark times.
#[derive(Clone, Copy)]
enum Op {
    Insert,
    Decide,
    Renew,
    Finish,
}

const LEASE: Duration = Duration::from_secs(30);

/// Brings a fresh call `c{n}` to where `op` applies, untimed, then times
/// `op` alone.
async fn store_op<S: CallStore>(store: &S, op: Op, n: u64) -> Duration {
    let call_id = format!("c{n}");
    let call = PendingCall::new(
        call_id.as_str(),
        "pay",
        PendingKind::Approval,
        json!({ "n": n }),
    );
    let claim = Transition::Run {
        owner: "bench".into(),
        lease: LEASE,
        resume_data: None,
    };
    if let Op::Insert = op {
        let start = Instant::now();
        store.insert(call).await.expect("insert");
        return start.elapsed();
    }
    store.insert(call).await.expect("insert");
    let start = Instant::now();
    let Decided::Won(claimed) = store
        .decide(&call_id, PendingKind::Approval, claim)
        .await
        .expect("decide")
    else {
        panic!("not claimed");
    };
    if let Op::Decide = op {
        return start.elapsed();
    }
    let start = Instant::now();
    let done = match op {
        Op::Renew => store.renew(&call_id, claimed.epoch, LEASE).await,
        _ => {
            let outcome = RecordedOutcome::Completed {
                output: json!(1),
                model_output: None,
                state: None,
            };
            store
                .finish(&call_id, claimed.epoch, Settlement::Settled(outcome))
                .await
        }
    };
    let elapsed = start.elapsed();
    assert!(done.expect("renew or finish"), "refused");
    elapsed
}

/// `insert`, `decide` (claim), `renew` and `finish` by token, one at a time.
fn bench_store_ops<S: CallStore>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    tokio: &tokio::runtime::Runtime,
    store: &S,
) {
    let next = AtomicU64::new(0);
    group.throughput(Throughput::Elements(1));
    for (name, op) in [
        ("insert", Op::Insert),
        ("decide_claim", Op::Decide),
        ("renew", Op::Renew),
        ("finish", Op::Finish),
    ] {
        group.bench_function(format!("store_op/{name}"), |b| {
            b.to_async(tokio).iter_custom(|iters| {
                let next = &next;
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += store_op(store, op, next.fetch_add(1, Ordering::Relaxed)).await;
                    }
                    total
                }
            });
        });
    }
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

/// A connection to the store's file with the store's durability settings
/// (WAL, `synchronous = FULL`), for the plain tool's own INSERT.
fn own_connection(path: &PathBuf) -> Arc<Mutex<Connection>> {
    let conn = Connection::open(path).expect("open");
    conn.busy_timeout(Duration::from_secs(10))
        .expect("busy timeout");
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("synchronous");
    Arc::new(Mutex::new(conn))
}

/// A runtime on a fresh SQLite file that has the application's table.
fn sqlite_runtime(kind: Kind, label: &str) -> Runtime {
    let path = temp_file(&format!("{}-{label}.sqlite", kind.name()));
    let store = SqliteStore::open(&path).expect("store");
    let own = own_connection(&path);
    own.lock()
        .expect("connection")
        .execute_batch(PAYMENTS)
        .expect("payments");
    let record = Tool::builder("record")
        .description("Records a payment")
        .transactional(true)
        .require_approval(false)
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            let tx = ctx
                .extension::<SqliteTransaction>()
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
            .map_err(|e| ToolError::new(e.to_string()))?;
            Ok::<_, ToolError>(json!({ "recorded": amount }))
        })
        .build()
        .expect("tool");
    let record_plain = plain_insert(move |key, amount| {
        let own = Arc::clone(&own);
        async move {
            tokio::task::spawn_blocking(move || {
                own.lock()
                    .expect("connection")
                    .execute(
                        "INSERT INTO payments (key, amount) VALUES (?1, ?2)",
                        (key, amount),
                    )
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
            .await
            .map_err(|e| e.to_string())?
        }
    });
    runtime_with(store, [pay(), record, record_plain])
}

fn sqlite(c: &mut Criterion) {
    let tokio = tokio_runtime();
    let mut group = c.benchmark_group("sqlite_exactly_once");
    group.sample_size(20);
    bench_calls(&mut group, &tokio, sqlite_runtime);
    let store = SqliteStore::open(temp_file("store-ops.sqlite")).expect("store");
    bench_store_ops(&mut group, &tokio, &store);
    group.finish();
}

#[cfg(feature = "postgres")]
#[path = "pg/mod.rs"]
mod pg;

#[cfg(feature = "postgres")]
mod postgres {
    //! The PostgreSQL half: skipped without `DATABASE_URL`.

    use super::*;
    use tool_runtime::store::{PostgresStore, PostgresTransaction};

    /// A fresh schema with the application's table; a URL that uses it.
    async fn schema_url(url: &str, schema: &str) -> String {
        pg::fresh_schema(url, schema, PAYMENTS).await
    }

    /// A runtime on a fresh schema; the plain tool's own pool of 16 (as
    /// many connections as the store keeps for transactional calls).
    async fn pg_runtime(url: &str, kind: Kind, label: &str) -> Runtime {
        let url = schema_url(url, &format!("bench_eo_{}_{label}", kind.name())).await;
        let store = PostgresStore::connect(&url).await.expect("store");
        let config: tokio_postgres::Config = url.parse().expect("url");
        let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
        let own = deadpool_postgres::Pool::builder(manager)
            .max_size(16)
            .build()
            .expect("pool");
        let record = Tool::builder("record")
            .description("Records a payment")
            .transactional(true)
            .require_approval(false)
            .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
                let tx = ctx
                    .extension::<PostgresTransaction>()
                    .cloned()
                    .ok_or_else(|| ToolError::new("no transaction"))?;
                let amount = input["amount"].as_i64().unwrap_or(0);
                let key = ctx.idempotency_key().to_string();
                tx.execute(
                    "INSERT INTO payments (key, amount) VALUES ($1, $2)",
                    &[&key, &amount],
                )
                .await
                .map_err(|e| ToolError::new(e.to_string()))?;
                Ok::<_, ToolError>(json!({ "recorded": amount }))
            })
            .build()
            .expect("tool");
        let record_plain = plain_insert(move |key, amount| {
            let own = own.clone();
            async move {
                let client = own.get().await.map_err(|e| e.to_string())?;
                client
                    .execute(
                        "INSERT INTO payments (key, amount) VALUES ($1, $2)",
                        &[&key, &amount],
                    )
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        });
        runtime_with(store, [pay(), record, record_plain])
    }

    pub(super) fn postgres(c: &mut Criterion) {
        let Ok(url) = std::env::var("DATABASE_URL") else {
            println!("skipping the PostgreSQL benchmarks: DATABASE_URL is not set");
            return;
        };
        let tokio = tokio_runtime();
        let mut group = c.benchmark_group("postgres_exactly_once");
        group.sample_size(20);
        bench_calls(&mut group, &tokio, |kind, label| {
            tokio.block_on(pg_runtime(&url, kind, label))
        });
        let store = tokio.block_on(async {
            let url = schema_url(&url, "bench_eo_store_ops").await;
            PostgresStore::connect(&url).await.expect("store")
        });
        bench_store_ops(&mut group, &tokio, &store);
        group.finish();
    }
}

#[cfg(feature = "postgres")]
criterion_group!(benches, sqlite, postgres::postgres);
#[cfg(not(feature = "postgres"))]
criterion_group!(benches, sqlite);
criterion_main!(benches);
