//! What reaches the client while a call runs: progress, log messages
//! (`notifications/message`), and cancellation.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::json;
use tool_core::{ToolContext, tool};
use tool_runtime::{EventKind, Runtime};

use common::client::*;
use common::*;

#[tokio::test]
async fn progress_reaches_the_client() {
    for modern in [false, true] {
        let client_handler = TestClient::default();
        let progress = Arc::clone(&client_handler.progress);
        let client = connect(runtime(), client_handler, modern).await;
        let result = call(&client, "count", json!({ "steps": 5 })).await.unwrap();
        let structured = if modern {
            json!(5)
        } else {
            json!({ "result": 5 })
        };
        assert_eq!(result.structured_content, Some(structured));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let seen: Vec<(f64, Option<f64>)> = progress
            .lock()
            .unwrap()
            .iter()
            .map(|p| (p.progress, p.total))
            .collect();
        assert_eq!(
            seen,
            (1..=5)
                .map(|i| (f64::from(i), Some(5.0)))
                .collect::<Vec<_>>(),
            "modern: {modern}"
        );
    }
}

#[tokio::test]
async fn concurrent_calls_each_get_their_own_progress_only() {
    let client_handler = TestClient::default();
    let progress = Arc::clone(&client_handler.progress);
    let client = connect(runtime(), client_handler, false).await;
    let (three, six) = tokio::join!(
        call(&client, "count", json!({ "steps": 3 })),
        call(&client, "count", json!({ "steps": 6 })),
    );
    assert_eq!(
        three.unwrap().structured_content,
        Some(json!({ "result": 3 }))
    );
    assert_eq!(
        six.unwrap().structured_content,
        Some(json!({ "result": 6 }))
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut by_token: HashMap<String, Vec<(f64, Option<f64>)>> = HashMap::new();
    for p in progress.lock().unwrap().iter() {
        by_token
            .entry(format!("{:?}", p.progress_token))
            .or_default()
            .push((p.progress, p.total));
    }
    let mut seen: Vec<_> = by_token.into_values().collect();
    seen.sort_by_key(Vec::len);
    let expected = |steps: u32| {
        (1..=steps)
            .map(|i| (f64::from(i), Some(f64::from(steps))))
            .collect::<Vec<_>>()
    };
    assert_eq!(seen, [expected(3), expected(6)], "one sequence per request");
}

/// Logs at two levels through `ctx.observe()` and through `tracing`
#[tool]
pub async fn chatty(ctx: ToolContext) -> &'static str {
    ctx.observe().debug("observed debug");
    ctx.observe().info("observed info");
    tracing::warn!(disk = 93, "traced warning");
    tracing::debug!("traced debug");
    "done"
}

/// The issue's logging point: `observe()` logs and `tracing` events inside
/// a call reach the client as `notifications/message`, at the level the
/// client set (info until it sets one), once each; peers of the 2026-07-28
/// protocol (which has no logging) get none.
#[tokio::test]
async fn a_calls_logs_reach_the_client_at_the_level_it_set() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let runtime = Runtime::builder().tool(ChattyTool).build().unwrap();
    // This test runs on one thread: the layer sees every event of the call.
    // Callsite interest is cached globally; while this test's subscriber is
    // the only one, tracing computes the interest of a callsite first hit
    // on another thread (a test running beside this one) from that thread's
    // subscriber alone: none, so the call's spans would stay disabled here
    // too. With the global one as well, every subscriber has its say.
    let _ = logs();
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(runtime.log_layer()));
    for modern in [false, true] {
        let handler = TestClient::default();
        let logged = Arc::clone(&handler.logged);
        let client = connect(runtime.clone(), handler, modern).await;
        call(&client, "chatty", json!({})).await.unwrap();
        // Notifications are handled as they arrive: wait for those expected.
        let arrived = |n: usize| {
            let logged = &logged;
            async move {
                let _ = eventually(100, |_| async move {
                    (logged.lock().unwrap().len() >= n).then_some(()).ok_or(())
                })
                .await;
            }
        };
        arrived(if modern { 1 } else { 2 }).await;
        let seen = || {
            let mut seen = logged.lock().unwrap().clone();
            seen.sort_by_key(|(level, logger, data)| {
                (level.clone(), logger.clone(), data.to_string())
            });
            std::mem::take(&mut *logged.lock().unwrap());
            seen
        };
        if modern {
            assert!(seen().is_empty(), "no logging in 2026-07-28");
            continue;
        }
        assert_eq!(
            seen(),
            [
                (
                    "info".to_owned(),
                    "chatty".to_owned(),
                    json!("observed info")
                ),
                (
                    "warning".to_owned(),
                    "chatty".to_owned(),
                    json!("traced warning disk=93")
                ),
            ]
        );
        #[allow(deprecated, reason = "MCP logging (SEP-2577 deprecates it)")]
        client
            .set_level(rmcp::model::SetLevelRequestParams::new(
                rmcp::model::LoggingLevel::Debug,
            ))
            .await
            .unwrap();
        call(&client, "chatty", json!({})).await.unwrap();
        arrived(4).await;
        let levels: Vec<String> = seen()
            .into_iter()
            .map(|(level, _, data)| format!("{level} {data}"))
            .collect();
        assert_eq!(
            levels,
            [
                r#"debug "observed debug""#,
                r#"debug "traced debug""#,
                r#"info "observed info""#,
                r#"warning "traced warning disk=93""#,
            ]
        );
    }
}

/// Every log line of this test binary (the runtime logs through `tracing`).
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    Arc::clone(LOGS.get_or_init(|| {
        let logs: Arc<Mutex<Vec<u8>>> = Arc::default();
        let sink = Arc::clone(&logs);
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || LogWriter(Arc::clone(&sink)))
            .init();
        logs
    }))
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn cancellation_fires_the_abort_signal_and_the_runtime_logs_it() {
    let logs = logs();
    let runtime = runtime();
    let mut events = runtime.events();
    let client = connect(runtime, TestClient::default(), false).await;
    let request =
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("sleeper")));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    handle
        .cancel(Some("the user pressed stop".into()))
        .await
        .unwrap();

    let aborted = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(event) = events.next().await {
            if event.tool_id == "sleeper" && event.kind == EventKind::Aborted {
                return event.call_id;
            }
        }
        panic!("the event stream ended")
    })
    .await
    .expect("the call was not aborted");
    assert!(aborted.starts_with("mcp-"));
    assert!(
        SLEEPER_ABORTED.load(Ordering::SeqCst),
        "the tool saw its abort signal"
    );
    let logged = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        logged
            .lines()
            .any(|l| l.contains("tool call aborted") && l.contains(&aborted)),
        "{logged}"
    );
    // Still serving.
    let ok = call(&client, "letters", json!({ "word": "ok" }))
        .await
        .unwrap();
    assert_eq!(ok.structured_content, Some(json!({ "result": 2 })));
}

/// Writes two custom chunks around a log message.
#[tool]
pub async fn rows(ctx: ToolContext) -> Result<&'static str, tool_core::ToolError> {
    ctx.writer().write(&json!({ "row": 1 }))?;
    ctx.observe().info("halfway");
    ctx.writer().write(&json!({ "row": 2 }))?;
    Ok("done")
}

/// A tool's custom chunks (`ctx.writer()`) reach the client as
/// `notifications/message` at level info, `{"custom": chunk}`, beside its
/// log messages; a client that set a level above info gets neither, and
/// peers of the 2026-07-28 protocol (which has no logging) none.
#[tokio::test]
async fn a_calls_custom_chunks_reach_the_client_as_log_notifications() {
    let runtime = Runtime::builder().tool(RowsTool).build().unwrap();
    for modern in [false, true] {
        let handler = TestClient::default();
        let logged = Arc::clone(&handler.logged);
        let client = connect(runtime.clone(), handler, modern).await;
        call(&client, "rows", json!({})).await.unwrap();
        let expected = if modern { 0 } else { 3 };
        let _ = eventually(100, |_| {
            let logged = &logged;
            async move {
                (logged.lock().unwrap().len() >= expected)
                    .then_some(())
                    .ok_or(())
            }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut seen = std::mem::take(&mut *logged.lock().unwrap());
        seen.sort_by_key(|(_, _, data)| data.to_string());
        if modern {
            assert!(seen.is_empty(), "no logging in 2026-07-28: {seen:?}");
            continue;
        }
        let info = |data| ("info".to_owned(), "rows".to_owned(), data);
        assert_eq!(
            seen,
            [
                info(json!("halfway")),
                info(json!({ "custom": { "row": 1 } })),
                info(json!({ "custom": { "row": 2 } })),
            ]
        );
        #[allow(deprecated, reason = "MCP logging (SEP-2577 deprecates it)")]
        client
            .set_level(rmcp::model::SetLevelRequestParams::new(
                rmcp::model::LoggingLevel::Warning,
            ))
            .await
            .unwrap();
        call(&client, "rows", json!({})).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(logged.lock().unwrap().is_empty(), "above info: none");
    }
}
