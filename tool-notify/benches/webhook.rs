//! The dispatcher's notifications per second to a webhook receiver on
//! 127.0.0.1 (axum, verifying each signature with `Verifier`), through
//! `WebhookSink`: 256 notifications (requests of 256 calls on a memory
//! store) delivered by `dispatch_once` rounds, 32 at once.
//!
//! Run: `cargo bench -p tool-notify --bench webhook` (criterion's "thrpt"
//! is notifications per second).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use tool_core::{Tool, ToolError};
use tool_notify::webhook::{Verifier, WebhookSink};
use tool_runtime::{Runtime, ToolCall};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const NOTIFICATIONS: u64 = 256;

async fn receive(
    State(verifier): State<Arc<Verifier>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    match verifier.verify(&headers, &body) {
        Ok(_) => StatusCode::NO_CONTENT,
        Err(_) => StatusCode::UNAUTHORIZED,
    }
}

fn webhook(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let refund = Tool::builder("refund")
        .description("Refunds an order")
        .require_approval(true)
        .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
        .expect("tool");
    let runtime = Runtime::builder()
        .tool(refund)
        .notifications(true)
        .build()
        .expect("runtime");
    let url = tokio.block_on(async {
        let verifier = Arc::new(Verifier::new([SECRET]).expect("verifier"));
        let app = Router::new()
            .route("/hooks", post(receive))
            .with_state(verifier);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{address}/hooks")
    });
    let sink = WebhookSink::new("ops", &url, [SECRET]).expect("sink");
    let dispatcher = runtime
        .dispatcher()
        .sink_with(sink, tool_runtime::SinkLimits::default().concurrency(32))
        .concurrency(32)
        .build()
        .expect("dispatcher");
    let next = AtomicU64::new(0);
    let mut group = c.benchmark_group("webhook_dispatch");
    group.sample_size(10);
    group.throughput(Throughput::Elements(NOTIFICATIONS));
    group.bench_function("256_notifications_verified", |b| {
        b.to_async(&tokio).iter_custom(|iters| {
            let (runtime, dispatcher, next) = (runtime.clone(), dispatcher.clone(), &next);
            async move {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    for _ in 0..NOTIFICATIONS {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        runtime
                            .call(ToolCall::new(format!("c{n}"), "refund", json!({ "n": n })))
                            .await;
                    }
                    let started = Instant::now();
                    let mut delivered = 0;
                    while delivered < NOTIFICATIONS as usize {
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

criterion_group!(benches, webhook);
criterion_main!(benches);
