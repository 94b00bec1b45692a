//! The inbox page's speed in headless Chromium, read from the browser's own
//! performance timings (`performance.measure` in the page, not a clock in
//! the test): how long until the first screen of rows is painted, from the
//! navigation's start, and how long opening an item takes to paint its
//! details, with 100, 10,000 and 100,000 items waiting (memory store).
//!
//! `cargo bench -p tool-inbox --bench page` (needs chromium and
//! chromedriver on PATH; skips with a notice otherwise).

#[path = "../tests/it/chromium.rs"]
#[allow(dead_code)]
mod chromium;

use std::time::Duration;

use chromium::Browser;
use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use tool_core::{Tool, ToolError};
use tool_inbox::{BearerTokens, Principal};
use tool_runtime::{Runtime, ToolCall};

const TOKEN: &str = "bench-token";
/// Page loads (and item openings) per size; the median is reported.
const ROUNDS: usize = 9;

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run());
}

async fn run() {
    let Some(browser) = Browser::start("tool-inbox-page-bench-").await else {
        return;
    };
    let client = &browser.client;
    println!(
        "| waiting items | first screen (median of {ROUNDS}) | open an item (median of {ROUNDS}) |"
    );
    println!("|---:|---:|---:|");
    for waiting in [100, 10_000, 100_000] {
        let address = serve(waiting).await;
        client
            .goto(&format!("http://{address}/inbox"))
            .await
            .unwrap();
        client
            .execute(
                "sessionStorage.setItem('tool-inbox-token', arguments[0]);",
                vec![json!(TOKEN)],
            )
            .await
            .unwrap();
        let (mut first, mut open) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            client.refresh().await.unwrap();
            first.push(measured(client, "inbox:first-screen").await);
            client
                .find(Locator::Css("#items > li button.summary"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            open.push(measured(client, "inbox:open").await);
        }
        println!(
            "| {waiting} | {:.0} ms | {:.1} ms |",
            median(&mut first),
            median(&mut open)
        );
    }
    client.clone().close().await.unwrap();
}

/// An inbox with `waiting` calls of a tool needing approval, served on a
/// loopback port.
async fn serve(waiting: usize) -> std::net::SocketAddr {
    let transfer = Tool::builder("transfer")
        .description("Moves money between accounts")
        .require_approval(true)
        .execute(|_input: Value, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(transfer).build().unwrap();
    for n in 0..waiting {
        let call = ToolCall::new(
            format!("call-{n:05}"),
            "transfer",
            json!({ "amount": n + 1, "to": "DE89 3704 0044 0532 0130 00" }),
        )
        .with_requester("alice");
        runtime.call(call).await;
    }
    let inbox = tool_inbox::router(
        runtime,
        BearerTokens::new().token(TOKEN, Principal::new("ops")),
    );
    let app = axum::Router::new().nest("/inbox", inbox);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// The duration of the page's measure `name`, in milliseconds, once the
/// page has taken it.
async fn measured(client: &Client, name: &str) -> f64 {
    for _ in 0..600 {
        let found = client
            .execute(
                "const e = performance.getEntriesByName(arguments[0]); return e.length ? e[e.length - 1].duration : null;",
                vec![json!(name)],
            )
            .await
            .unwrap();
        if let Some(ms) = found.as_f64() {
            return ms;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the page took no {name} measure within 30 s");
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
