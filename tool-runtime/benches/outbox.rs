//! What the outbox adds to a decision: a durable approval round (create,
//! stored for approval; approve; execute; settle) through a runtime with
//! notifications off, next to the same round with notifications on (an
//! `approval.requested` written with the call, a `call.decided` with the
//! decision, each in the same transaction as its change), on SQLite and
//! PostgreSQL (feature `postgres`, with `DATABASE_URL` set), measured
//! side by side in one run and paired (each iteration a round of each
//! side, in turn), sequentially and 32 at once. Then the
//! dispatcher's notifications per second to a sink that takes each at once
//! (the dispatcher's and the outbox's own cost: claim, deliver, settle).
//!
//! Run: `cargo bench -p tool-runtime --bench outbox`, and for PostgreSQL
//! `source .ci/postgres start && cargo bench -p tool-runtime --features postgres --bench outbox`
//! (criterion's "thrpt" is rounds, or notifications, per second).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::store::{IntoStore, Notification, SqliteStore};
use tool_runtime::{CallOutcome, NotificationSink, Runtime, SinkError, ToolCall};

const CONCURRENT: u64 = 32;

fn temp_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-runtime-outbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

fn runtime_with(store: impl IntoStore, notifications: bool) -> Runtime {
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
        .notifications(notifications)
        .build()
        .expect("runtime")
}

/// One durable approval round.
async fn round(runtime: &Runtime, n: u64) {
    let call_id = format!("c{n}");
    let waiting = runtime
        .call(ToolCall::new(call_id.as_str(), "pay", json!({ "n": n })))
        .await;
    assert!(matches!(waiting, CallOutcome::ApprovalRequired { .. }));
    let done = runtime.approve(&call_id).await.expect("approve");
    assert!(done.output().is_some());
}

/// [`CONCURRENT`] rounds at once, as spawned tasks.
async fn rounds_at_once(rt: &Runtime, next: &AtomicU64) {
    let tasks: Vec<_> = (0..CONCURRENT)
        .map(|_| {
            let (rt, n) = (rt.clone(), next.fetch_add(1, Ordering::Relaxed));
            tokio::spawn(async move { round(&rt, n).await })
        })
        .collect();
    for task in tasks {
        task.await.expect("round");
    }
}

/// The group `{store}_decision_outbox`: rounds with notifications off and
/// on, on runtimes `open` makes (by name and whether notifications are on).
///
/// Paired: every iteration runs one round (or one burst) on each runtime,
/// in turn, the order alternating, and a function times only its own. So
/// the database's background work that one side's writes cause
/// (checkpoints, autovacuum, WAL growth) falls on both alike; measured one
/// after the other, the side measured second paid for the first, and the
/// ratio varied from 1.11 to 1.36 between runs of the same code.
fn off_and_on(
    c: &mut Criterion,
    tokio: &tokio::runtime::Runtime,
    store: &str,
    open: impl Fn(&str, bool) -> Runtime,
) {
    let next = Arc::new(AtomicU64::new(0));
    let sequential = [open("off-sequential", false), open("on-sequential", true)];
    let concurrent = [open("off-concurrent", false), open("on-concurrent", true)];
    let mut group = c.benchmark_group(format!("{store}_decision_outbox"));
    group.sample_size(20);
    for (timed, label) in ["off", "on"].into_iter().enumerate() {
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("notifications_{label}/sequential"), |b| {
            b.to_async(tokio).iter_custom(|iters| {
                paired(iters, timed, |side| {
                    round(&sequential[side], next.fetch_add(1, Ordering::Relaxed))
                })
            });
        });
        group.throughput(Throughput::Elements(CONCURRENT));
        group.bench_function(format!("notifications_{label}/32_concurrent"), |b| {
            b.to_async(tokio).iter_custom(|iters| {
                paired(iters, timed, |side| {
                    rounds_at_once(&concurrent[side], &next)
                })
            });
        });
    }
    group.finish();
}

/// `iters` times, the work of both sides (`work(0)`, `work(1)`) in turn,
/// the one first alternating; the time spent in side `timed`'s.
async fn paired<F: Future<Output = ()>>(
    iters: u64,
    timed: usize,
    work: impl Fn(usize) -> F,
) -> Duration {
    let mut spent = Duration::ZERO;
    for i in 0..iters {
        let first = usize::from(i % 2 == 1);
        for side in [first, 1 - first] {
            let started = std::time::Instant::now();
            work(side).await;
            if side == timed {
                spent += started.elapsed();
            }
        }
    }
    spent
}

/// A sink that takes every notification at once.
struct Takes;

impl NotificationSink for Takes {
    fn name(&self) -> &str {
        "takes"
    }

    async fn deliver(&self, _notification: &Notification) -> Result<(), SinkError> {
        Ok(())
    }
}

/// The group `{store}_dispatch`: a batch of 256 notifications (128 rounds)
/// written, then delivered by one dispatcher (`dispatch_once` until the
/// outbox has none due); throughput in notifications.
fn dispatch(c: &mut Criterion, tokio: &tokio::runtime::Runtime, store: &str, rt: &Runtime) {
    const ROUNDS: u64 = 128;
    let next = AtomicU64::new(0);
    let dispatcher = rt
        .dispatcher()
        .sink(Takes)
        .concurrency(64)
        .lease(Duration::from_secs(60))
        .build()
        .expect("dispatcher");
    let mut group = c.benchmark_group(format!("{store}_dispatch"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(2 * ROUNDS));
    group.bench_function("256_notifications", |b| {
        b.to_async(tokio).iter_custom(|iters| {
            let (rt, dispatcher, next) = (rt.clone(), dispatcher.clone(), &next);
            async move {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    for _ in 0..ROUNDS {
                        round(&rt, next.fetch_add(1, Ordering::Relaxed)).await;
                    }
                    let started = std::time::Instant::now();
                    let mut delivered = 0;
                    while delivered < 2 * ROUNDS as usize {
                        delivered += dispatcher
                            .dispatch_once()
                            .await
                            .expect("dispatch")
                            .delivered;
                    }
                    spent += started.elapsed();
                }
                spent
            }
        });
    });
    group.finish();
}

fn sqlite(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let open = |name: &str, on: bool| {
        let store = SqliteStore::open(temp_file(&format!("{name}.sqlite"))).expect("store");
        runtime_with(store, on)
    };
    off_and_on(c, &tokio, "sqlite", open);
    dispatch(c, &tokio, "sqlite", &open("dispatch", true));
}

#[cfg(feature = "postgres")]
#[path = "pg/mod.rs"]
mod pg;

#[cfg(feature = "postgres")]
fn postgres(c: &mut Criterion) {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!("skipping the PostgreSQL benchmarks: DATABASE_URL is not set");
        return;
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let open = |name: &str, on: bool| {
        tokio.block_on(async {
            let schema = format!("bench_outbox_{}", name.replace('-', "_"));
            let url = pg::fresh_schema(&url, &schema, "").await;
            let store = tool_runtime::store::PostgresStore::connect(&url)
                .await
                .expect("store");
            runtime_with(store, on)
        })
    };
    off_and_on(c, &tokio, "postgres", open);
    dispatch(c, &tokio, "postgres", &open("dispatch", true));
}

#[cfg(feature = "postgres")]
criterion_group!(benches, sqlite, postgres);
#[cfg(not(feature = "postgres"))]
criterion_group!(benches, sqlite);
criterion_main!(benches);
