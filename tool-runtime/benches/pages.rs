//! A page of 50 waiting calls, at 1,000, 10,000 and 100,000 waiting, on
//! each store (issue 35: the time grows with the page, not with all that
//! wait): `CallStore::list_page` from the middle of the calls, every call
//! selected (`all`), one in ten (`sparse`, a requester filter the store
//! applies after reading), and every call the longest waiting first
//! (`oldest`, `PendingOrder::Asked`, from the middle call's position).
//!
//! Run: `cargo bench -p tool-runtime --bench pages` (`DATABASE_URL` adds
//! PostgreSQL; `WAITING=1000,10000` picks the sizes). Filling a store is
//! not measured; 100,000 inserts take minutes on a durable store.

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use tool_runtime::store::{CallStore, MemoryStore, PendingOrder, PendingQuery, SqliteStore};
use tool_runtime::{PendingCall, PendingKind};

#[cfg(feature = "postgres")]
#[path = "pg/mod.rs"]
mod pg;

const PAGE: usize = 50;

fn sizes() -> Vec<usize> {
    std::env::var("WAITING")
        .ok()
        .map(|sizes| {
            sizes
                .split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect()
        })
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000])
}

/// `n` waiting calls, one in ten asked for by carol; asked for in the
/// reverse of their ids' order.
async fn fill(store: &impl CallStore, n: usize) {
    for i in 0..n {
        let mut call = PendingCall::new(
            format!("c{i:06}"),
            "pay",
            PendingKind::Approval,
            json!({ "n": i }),
        );
        if i % 10 == 0 {
            call.head.requester = Some("carol".into());
        }
        call.asked_at_ms = Some(asked_at(n, i));
        store.insert(call).await.expect("insert");
    }
}

/// When the `i`th of `n` calls was asked for.
fn asked_at(n: usize, i: usize) -> u64 {
    1_000_000 + u64::try_from(n - i).unwrap_or(u64::MAX)
}

/// `make` makes an empty store; `filled` runs once it holds the calls (a
/// database's statistics brought up to date, as autovacuum would).
fn pages_of<S: CallStore>(
    c: &mut Criterion,
    store_name: &str,
    tokio: &tokio::runtime::Runtime,
    make: impl Fn() -> S,
    filled: impl Fn(usize),
) {
    let mut group = c.benchmark_group(format!("page_of_50/{store_name}"));
    for n in sizes() {
        let store = Arc::new(make());
        tokio.block_on(fill(store.as_ref(), n));
        filled(n);
        let middle = format!("c{:06}", n / 2);
        let all = PendingQuery::waiting_for_people()
            .after(middle.as_str())
            .limit(PAGE);
        let sparse = all.clone().requester("carol");
        let oldest = PendingQuery::waiting_for_people()
            .order(PendingOrder::Asked)
            .after_position(asked_at(n, n / 2), middle.as_str())
            .limit(PAGE);
        for (filter, query) in [("all", all), ("sparse", sparse), ("oldest", oldest)] {
            let page = tokio
                .block_on(store.list_page(query.clone()))
                .expect("page");
            assert!(
                !page.is_empty() && page.len() <= PAGE,
                "{filter}: {}",
                page.len()
            );
            group.bench_with_input(BenchmarkId::new(filter, n), &query, |b, query| {
                b.iter(|| {
                    tokio
                        .block_on(store.list_page(query.clone()))
                        .expect("page")
                })
            });
        }
    }
    group.finish();
}

fn pages(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    pages_of(c, "memory", &tokio, MemoryStore::new, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let files = std::sync::atomic::AtomicUsize::new(0);
    pages_of(
        c,
        "sqlite",
        &tokio,
        || {
            let n = files.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            SqliteStore::open(dir.path().join(format!("pages-{n}.sqlite"))).unwrap()
        },
        |_| {},
    );
    #[cfg(feature = "postgres")]
    if let Ok(url) = std::env::var("DATABASE_URL") {
        let schemas = std::sync::atomic::AtomicUsize::new(0);
        let made = std::sync::atomic::AtomicUsize::new(0);
        pages_of(
            c,
            "postgres",
            &tokio,
            || {
                let n = schemas.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio.block_on(fresh_postgres(&url, &format!("bench_pages_{n}")))
            },
            |_| {
                let n = made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio.block_on(analyze(&url, &format!("bench_pages_{n}")));
            },
        );
    } else {
        println!("skipping PostgreSQL: DATABASE_URL is not set");
    }
}

/// A store on a fresh schema `schema` of the database at `url`.
#[cfg(feature = "postgres")]
async fn fresh_postgres(url: &str, schema: &str) -> tool_runtime::store::PostgresStore {
    let url = pg::fresh_schema(url, schema, "").await;
    tool_runtime::store::PostgresStore::connect(&url)
        .await
        .expect("store")
}

/// Brings the statistics of schema `schema`'s calls up to date.
#[cfg(feature = "postgres")]
async fn analyze(url: &str, schema: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("ANALYZE {schema}.tool_runtime_calls"))
        .await
        .expect("analyze");
}

criterion_group!(benches, pages);
criterion_main!(benches);
