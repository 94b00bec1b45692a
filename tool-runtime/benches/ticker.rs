//! How late a 1 ms ticker on the async runtime gets while 32 concurrent
//! SQLite approvals run (create, approve, execute, each an fsync'd commit),
//! against the same ticker while 32 tasks do the same SQLite writes directly
//! on the async worker threads (what a synchronous store inside the call
//! path did). Both in one run, on a 2-worker multi-thread runtime.
//!
//! With feature `postgres` and `DATABASE_URL` set, each round also runs the
//! approvals through a runtime on a PostgreSQL store.
//!
//! Run: `cargo bench -p tool-runtime --bench ticker [--features postgres]`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::{Runtime, ToolCall};

const CALLS: usize = 32;

/// Ticks every millisecond until `stop`; returns the worst lateness.
async fn ticker(stop: Arc<AtomicBool>) -> Duration {
    let mut interval = tokio::time::interval(Duration::from_millis(1));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut worst = Duration::ZERO;
    let mut expected = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        interval.tick().await;
        let now = Instant::now();
        worst = worst.max(now.saturating_duration_since(expected));
        expected = now + Duration::from_millis(1);
    }
    worst
}

fn temp_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-runtime-ticker-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

async fn approvals_through_the_runtime() -> (Duration, Duration) {
    approvals_through(Runtime::builder().sqlite_store(temp_file("runtime.sqlite"))).await
}

/// The same through a runtime on a PostgreSQL store (`DATABASE_URL`), its
/// tables fresh.
#[cfg(feature = "postgres")]
async fn approvals_through_postgres(url: &str) -> (Duration, Duration) {
    let store = tool_runtime::store::PostgresStore::connect(url)
        .await
        .expect("PostgreSQL store");
    approvals_through(Runtime::builder().store(store)).await
}

async fn approvals_through(builder: tool_runtime::RuntimeBuilder) -> (Duration, Duration) {
    let tool = Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(input)
        })
        .build()
        .expect("tool");
    let runtime = builder.tool(tool).build().expect("runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let tick = tokio::spawn(ticker(Arc::clone(&stop)));
    let started = Instant::now();
    let calls: Vec<_> = (0..CALLS)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                let call_id = format!("c{i}");
                runtime
                    .call(ToolCall::new(call_id.as_str(), "pay", json!({ "n": i })))
                    .await;
                runtime.approve(&call_id).await.expect("approved")
            })
        })
        .collect();
    for call in calls {
        assert!(call.await.expect("task").output().is_some());
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    (tick.await.expect("ticker"), elapsed)
}

async fn writes_on_the_async_workers() -> (Duration, Duration) {
    let path = temp_file("direct.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
             CREATE TABLE pending (call_id TEXT PRIMARY KEY, record TEXT NOT NULL);",
        )
        .expect("layout");
    }
    let conn = Arc::new(std::sync::Mutex::new(
        rusqlite::Connection::open(&path).expect("open"),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let tick = tokio::spawn(ticker(Arc::clone(&stop)));
    let started = Instant::now();
    let writers: Vec<_> = (0..CALLS)
        .map(|i| {
            let conn = Arc::clone(&conn);
            tokio::spawn(async move {
                // Insert, then take: the two commits of a create + approve.
                let conn = conn.lock().expect("connection");
                conn.execute(
                    "INSERT INTO pending (call_id, record) VALUES (?1, '{}')",
                    [format!("c{i}")],
                )
                .expect("insert");
                conn.execute("DELETE FROM pending WHERE call_id = ?1", [format!("c{i}")])
                    .expect("take");
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("task");
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    (tick.await.expect("ticker"), elapsed)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        for round in 1..=3 {
            let (late, took) = approvals_through_the_runtime().await;
            println!(
                "round {round}: {CALLS} concurrent SQLite approvals through the runtime: ticker at most {:.2} ms late ({:.1} ms in all)",
                late.as_secs_f64() * 1e3,
                took.as_secs_f64() * 1e3
            );
            #[cfg(feature = "postgres")]
            if let Ok(url) = std::env::var("DATABASE_URL") {
                let (late, took) = approvals_through_postgres(&url).await;
                println!(
                    "round {round}: {CALLS} concurrent PostgreSQL approvals through the runtime: ticker at most {:.2} ms late ({:.1} ms in all)",
                    late.as_secs_f64() * 1e3,
                    took.as_secs_f64() * 1e3
                );
            }
            let (late, took) = writes_on_the_async_workers().await;
            println!(
                "round {round}: {CALLS} concurrent SQLite insert+delete on the async workers: ticker at most {:.2} ms late ({:.1} ms in all)",
                late.as_secs_f64() * 1e3,
                took.as_secs_f64() * 1e3
            );
        }
    });
}
