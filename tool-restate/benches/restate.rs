//! A call through Restate next to the same call through a `Runtime` on
//! PostgreSQL, side by side in one run: a plain call, an approved call
//! (stored, then approved and run), each for a tool that is retry-safe and
//! one that is not (whose steps enter the fence), and 32 plain calls in
//! flight; and Restate's floor, a trivial handler through the ingress. Needs `RESTATE_SERVER` (the restate-server binary) and, for the
//! PostgreSQL rows, `DATABASE_URL`.
//!
//! Run: `RESTATE_SERVER=... DATABASE_URL=... cargo bench -p tool-restate --bench restate`

use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_restate::{CallRequest, DecideRequest, RestateClient, RestateTools, WireDecision};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

// The tests' server harness, of which the benchmark uses a part.
#[allow(dead_code)]
#[path = "../tests/it/server.rs"]
mod server;

const IN_FLIGHT: u64 = 32;

/// `echo` and `pay` (approval), each retry-safe or not (`-once`).
fn tools() -> Vec<Tool> {
    let mut tools = Vec::new();
    for (id, approval, retry_safe) in [
        ("echo", false, true),
        ("echo-once", false, false),
        ("pay", true, true),
        ("pay-once", true, false),
    ] {
        tools.push(
            Tool::builder(id)
                .description("Answers its input")
                .require_approval(approval)
                .retry_safe(retry_safe)
                .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
                    Ok::<_, ToolError>(input)
                })
                .build()
                .expect("tool"),
        );
    }
    tools
}

/// What a benchmark calls: the Restate client or a runtime.
#[derive(Clone)]
enum Target {
    Restate(RestateClient),
    Runtime(Runtime),
}

impl Target {
    async fn plain(&self, tool: &str, n: u64) {
        let id = format!("plain-{n}");
        let outcome = match self {
            Target::Restate(client) => client
                .call(&id, CallRequest::new(tool, json!({ "n": n })))
                .await
                .expect("call"),
            Target::Runtime(runtime) => {
                runtime
                    .call(ToolCall::new(id, tool, json!({ "n": n })))
                    .await
            }
        };
        assert!(outcome.output().is_some(), "{outcome:?}");
    }

    async fn approved(&self, tool: &str, n: u64) {
        let id = format!("approved-{n}");
        let outcome = match self {
            Target::Restate(client) => {
                let waiting = client
                    .call(&id, CallRequest::new(tool, json!({ "n": n })))
                    .await
                    .expect("call");
                assert!(matches!(waiting, CallOutcome::ApprovalRequired { .. }));
                client
                    .decide(&id, DecideRequest::new(WireDecision::Approve))
                    .await
                    .expect("approve")
            }
            Target::Runtime(runtime) => {
                let waiting = runtime
                    .call(ToolCall::new(id.as_str(), tool, json!({ "n": n })))
                    .await;
                assert!(matches!(waiting, CallOutcome::ApprovalRequired { .. }));
                runtime.approve(&id).await.expect("approve")
            }
        };
        assert!(outcome.output().is_some(), "{outcome:?}");
    }
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let Some(server) = tokio.block_on(server::Restate::start()) else {
        return;
    };
    let tools_on_restate =
        RestateTools::new(&server.ingress, || Runtime::builder().tools(tools())).expect("tools");
    tokio.block_on(server.serve(&tools_on_restate));
    let mut targets = vec![(
        "restate",
        Target::Restate(RestateClient::new(&server.ingress)),
    )];
    if let Ok(url) = std::env::var("DATABASE_URL") {
        let runtime = tokio.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect");
            tokio::spawn(connection);
            client
                .batch_execute(
                    "DROP SCHEMA IF EXISTS bench_restate CASCADE; CREATE SCHEMA bench_restate",
                )
                .await
                .expect("schema");
            let sep = if url.contains('?') { '&' } else { '?' };
            let url = format!("{url}{sep}options=-csearch_path%3Dbench_restate");
            let store = tool_runtime::store::PostgresStore::connect(&url)
                .await
                .expect("store");
            Runtime::builder()
                .tools(tools())
                .store(store)
                .build()
                .expect("runtime")
        });
        targets.push(("runtime_postgres", Target::Runtime(runtime)));
    } else {
        println!("no PostgreSQL rows: DATABASE_URL is not set");
    }

    // Ids of calls never made before, across every benchmark of the run.
    let next = AtomicU64::new(std::process::id() as u64 * 1_000_000_000);
    let mut group = c.benchmark_group("restate");
    group.sample_size(20);
    // Restate's floor: a trivial handler (a fence's entry: one state read
    // and write) through the ingress, what every step costs at least.
    let http = reqwest::Client::new();
    group.throughput(Throughput::Elements(1));
    group.bench_function("trivial_handler/restate", |b| {
        b.to_async(&tokio).iter(|| async {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let url = format!("{}/ToolCallFences/floor-{n}/enter", server.ingress);
            let entered: u32 = http
                .post(url)
                .json(&"step")
                .send()
                .await
                .expect("enter")
                .json()
                .await
                .expect("count");
            assert_eq!(entered, 1);
        });
    });
    for (name, target) in &targets {
        group.throughput(Throughput::Elements(1));
        for tool in ["echo", "echo-once"] {
            group.bench_function(format!("plain_{tool}/{name}"), |b| {
                b.to_async(&tokio)
                    .iter(|| target.plain(tool, next.fetch_add(1, Ordering::Relaxed)));
            });
        }
        for tool in ["pay", "pay-once"] {
            group.bench_function(format!("approved_{tool}/{name}"), |b| {
                b.to_async(&tokio)
                    .iter(|| target.approved(tool, next.fetch_add(1, Ordering::Relaxed)));
            });
        }
        group.throughput(Throughput::Elements(IN_FLIGHT));
        group.bench_function(format!("plain_echo_32_in_flight/{name}"), |b| {
            b.to_async(&tokio).iter(|| async {
                let calls: Vec<_> = (0..IN_FLIGHT)
                    .map(|_| {
                        let (target, n) = (target.clone(), next.fetch_add(1, Ordering::Relaxed));
                        tokio::spawn(async move { target.plain("echo", n).await })
                    })
                    .collect();
                for call in calls {
                    call.await.expect("call");
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
