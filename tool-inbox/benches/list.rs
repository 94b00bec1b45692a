//! The inbox's list endpoint with 100,000 calls waiting for approval on
//! PostgreSQL: the first page, a page from the middle (a cursor), and a
//! page filtered by tool, each a `GET /api/items?limit=50` through the
//! router as a client sends it (authentication, the store's page, the
//! display view of each item). The goal: a page in under 50 ms.
//!
//! Run: `source .ci/postgres start && cargo bench -p tool-inbox --bench list`
//! (skipped without `DATABASE_URL`). The 100,000 rows are written once
//! with one `INSERT ... SELECT generate_series` into a schema of their own.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tool_core::{Tool, ToolError};
use tool_inbox::{BearerTokens, Principal};
use tool_runtime::Runtime;
use tool_runtime::store::PostgresStore;
use tower::ServiceExt as _;

const ITEMS: u32 = 100_000;
const TOKEN: &str = "bench-token";

/// A schema holding `ITEMS` calls waiting for approval; its URL.
async fn filled_schema(url: &str) -> String {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    let schema = "bench_inbox_list";
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await
        .expect("schema");
    let separator = if url.contains('?') { '&' } else { '?' };
    let schema_url = format!("{url}{separator}options=-csearch_path%3D{schema}");
    drop(PostgresStore::connect(&schema_url).await.expect("tables"));
    client
        .batch_execute(&format!(
            "INSERT INTO {schema}.tool_runtime_calls
                 (call_id, kind, tool_id, state, attempt, input, request_context, messages)
             SELECT 'c' || lpad(n::text, 6, '0'), 'approval',
                    CASE WHEN n % 10 = 0 THEN 'wire' ELSE 'transfer' END,
                    'pending', 0, '{{\"amount\": ' || n || '}}', '{{}}', '[]'
             FROM generate_series(1, {ITEMS}) AS n;
             ANALYZE {schema}.tool_runtime_calls;"
        ))
        .await
        .expect("rows");
    schema_url
}

fn tool(id: &str) -> Tool {
    Tool::builder(id)
        .description("Moves money")
        .require_approval(true)
        .execute(|_input: Value, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
        .build()
        .expect("tool")
}

async fn page(router: &Router, uri: &str) -> usize {
    let request = Request::get(uri)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .expect("request");
    let response = router.clone().oneshot(request).await.expect("answer");
    assert_eq!(response.status(), StatusCode::OK);
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let page: Value = serde_json::from_slice(&body).expect("json");
    page["items"].as_array().map_or(0, Vec::len)
}

fn list(c: &mut Criterion) {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!("skipping the inbox list benchmark: DATABASE_URL is not set");
        return;
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let router = tokio.block_on(async {
        let store = PostgresStore::connect(&filled_schema(&url).await)
            .await
            .expect("store");
        let runtime = Runtime::builder()
            .tools([tool("transfer"), tool("wire")])
            .store(store)
            .build()
            .expect("runtime");
        tool_inbox::router(
            runtime,
            BearerTokens::new().token(TOKEN, Principal::new("ops")),
        )
    });
    let mut group = c.benchmark_group("inbox_list_100k_postgres");
    for (name, uri) in [
        ("first_page", "/api/items?limit=50"),
        ("middle_page", "/api/items?limit=50&after=c050000"),
        ("by_tool", "/api/items?limit=50&tool=wire&after=c050000"),
    ] {
        assert_eq!(tokio.block_on(page(&router, uri)), 50, "{name}");
        group.bench_function(name, |b| b.to_async(&tokio).iter(|| page(&router, uri)));
    }
    group.finish();
}

criterion_group!(benches, list);
criterion_main!(benches);
