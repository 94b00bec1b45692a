//! Streamable HTTP with raw requests: sessions, host and origin checks,
//! paths, JSON-RPC errors, and stream resumption.

use crate::common;

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;
use tool_mcp::{HttpOptions, McpServer};

use common::http::*;
use common::*;

/// The hardening issue: rmcp answered malformed JSON with HTTP 415 and
/// malformed `tools/call` params with -32601 (method not found).
#[tokio::test]
async fn malformed_messages_over_http_get_the_json_rpc_errors_the_specification_names() {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let (addr, host) = (server.local_addr(), server.local_addr().to_string());
    let (status, _, message) =
        post_text(addr, &host, &[], "{\"jsonrpc\": \"2.0\", \"id\": 1, ").await;
    assert!(status.contains("400"), "{status}");
    let message = message.expect("a JSON-RPC error");
    assert_eq!(message["error"]["code"], -32700, "{message}");
    assert_eq!(message["id"], Value::Null);
    for (n, params) in [
        json!({ "arguments": {} }),
        json!({ "name": 5 }),
        Value::Null,
        json!({ "name": "weather-tool", "arguments": [1] }),
        json!("weather-tool"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut request = json!({ "jsonrpc": "2.0", "id": n, "method": "tools/call" });
        if !params.is_null() {
            request["params"] = params.clone();
        }
        let (status, _, message) = post(addr, &host, &[], request).await;
        assert!(status.contains("200"), "{params}: {status}");
        let message = message.expect("a JSON-RPC error");
        assert_eq!(message["error"]["code"], -32602, "{params}: {message}");
        assert_eq!(message["id"], n, "{params}");
    }
    server.shutdown();
}

#[tokio::test]
async fn streamable_http_on_loopback() {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let addr = server.local_addr();
    assert_eq!(server.url(), format!("http://{addr}/mcp"));
    let host = addr.to_string();

    let (status, head, init) = post(
        addr,
        &host,
        &[],
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
        }),
    )
    .await;
    assert!(status.contains("200"), "{status}");
    let init = init.unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "tool-runtime");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    let session = header(&head, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let session_headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];

    let (status, _, _) = post(
        addr,
        &host,
        &session_headers,
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    assert!(status.contains("202"), "{status}");

    let (_, _, listed) = post(
        addr,
        &host,
        &session_headers,
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    )
    .await;
    assert_eq!(
        listed.unwrap()["result"]["tools"][0]["name"],
        "weather-tool"
    );

    let (_, _, called) = post(
        addr,
        &host,
        &session_headers,
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "weather-tool", "arguments": { "location": "Rome" } } }),
    )
    .await;
    let called = called.unwrap();
    assert_eq!(called["result"]["structuredContent"]["location"], "Rome");
    assert_eq!(called["result"]["isError"], false);

    // Only loopback host names are served (DNS rebinding protection).
    let (status, _, _) = post(
        addr,
        "evil.example.com",
        &[],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    )
    .await;
    assert!(status.contains("403"), "{status}");

    // Only loopback origins (the hardening issue: a page of any origin was
    // served); a request without an Origin (not from a browser) passes.
    let list = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list" });
    let session_and = |origin: &'static str| {
        let mut headers = session_headers.to_vec();
        headers.push(("Origin", origin));
        headers
    };
    let (status, _, _) = post(
        addr,
        &host,
        &session_and("http://evil.example.com"),
        list.clone(),
    )
    .await;
    assert!(status.contains("403"), "{status}");
    let (status, _, listed) = post(
        addr,
        &host,
        &session_and("http://localhost:5173"),
        list.clone(),
    )
    .await;
    assert!(status.contains("200") && listed.is_some(), "{status}");

    server.shutdown();
    tokio::time::timeout(Duration::from_secs(5), server.wait())
        .await
        .expect("the server did not stop")
        .unwrap();
}

#[tokio::test]
async fn http_serves_the_origins_it_is_told_to() {
    let server = McpServer::new(runtime())
        .serve_http(
            HttpOptions::new(([127, 0, 0, 1], 0).into())
                .allowed_origins(["https://app.example.com:443"]),
        )
        .await
        .unwrap();
    let addr = server.local_addr();
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
    });
    let host = addr.to_string();
    let (status, _, _) = post(
        addr,
        &host,
        &[("Origin", "https://app.example.com")],
        init.clone(),
    )
    .await;
    assert!(status.contains("200"), "{status}");
    let (status, _, _) = post(addr, &host, &[("Origin", "http://localhost:3000")], init).await;
    assert!(
        status.contains("403"),
        "the list replaces the loopback default: {status}"
    );
    server.shutdown();
}

#[tokio::test]
async fn http_other_paths_are_not_found() {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()).path("/tools"))
        .await
        .unwrap();
    let (status, _, _) = post(
        server.local_addr(),
        "127.0.0.1",
        &[],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    )
    .await;
    assert!(status.contains("404"), "{status}");
    server.shutdown();
}

/// The hardening issue: after a stream resumption with `Last-Event-ID`,
/// rmcp sent the event the client had received last again.
#[tokio::test]
async fn a_resumed_stream_starts_after_the_event_received_last() {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let (addr, host) = (server.local_addr(), server.local_addr().to_string());
    let (_, head, _) = post(
        addr,
        &host,
        &[],
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
        }),
    )
    .await;
    let session = header(&head, "mcp-session-id").expect("a session id");
    let session = [
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    post(
        addr,
        &host,
        &session,
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;

    // A call reporting progress 100 times; the client reads two progress
    // events, then its connection breaks.
    let call = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "count", "arguments": { "steps": 100 }, "_meta": { "progressToken": "p" } }
    })
    .to_string();
    let mut stream = send(addr, "POST", &host, &session, &call).await;
    let (mut received, mut buffer) = (String::new(), [0u8; 4096]);
    let last_id = loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .expect("progress events")
            .unwrap();
        assert!(n > 0, "the stream ended early: {received}");
        received.push_str(std::str::from_utf8(&buffer[..n]).unwrap());
        let progress_ids = sse_ids(&received, "notifications/progress");
        if progress_ids.len() >= 2 {
            break progress_ids[1].clone();
        }
    };
    drop(stream);

    let mut headers = session.to_vec();
    headers.push(("Last-Event-ID", last_id.as_str()));
    let (head, replay) = exchange(addr, "GET", &host, &headers, "").await;
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    let replayed = sse_ids(&replay, "");
    assert!(
        !replayed.contains(&last_id),
        "the event received last ({last_id}) is not sent again: {replayed:?}"
    );
    // The replay goes on from the next event to the call's result.
    let next = |id: &str| {
        let (index, request) = id.split_once('/').unwrap();
        format!("{}/{request}", index.parse::<u64>().unwrap() + 1)
    };
    assert_eq!(replayed.first(), Some(&next(&last_id)), "{replay}");
    assert!(
        replay.contains("\"result\""),
        "the replay ends with the result"
    );
    server.shutdown();
}

/// The ids of the SSE events in `body` whose data contains `containing`.
fn sse_ids(body: &str, containing: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|event| {
            event
                .lines()
                .any(|line| line.starts_with("data: {") && line.contains(containing))
        })
        .filter_map(|event| {
            event
                .lines()
                .find_map(|line| line.strip_prefix("id: "))
                .map(str::to_owned)
        })
        .collect()
}

/// An `initialize` that opens a session: its id.
async fn open_session(addr: std::net::SocketAddr, host: &str) -> Result<String, String> {
    let (status, head, _) = post(
        addr,
        host,
        &[],
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
        }),
    )
    .await;
    match header(&head, "mcp-session-id") {
        Some(session) if status.contains("200") => Ok(session.to_owned()),
        _ => Err(head),
    }
}

#[tokio::test]
async fn sessions_past_the_cap_are_refused_with_503_naming_the_setting_and_a_delete_frees_one_with_204()
 {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()).max_sessions(2))
        .await
        .unwrap();
    let (addr, host) = (server.local_addr(), server.local_addr().to_string());
    let first = open_session(addr, &host).await.unwrap();
    open_session(addr, &host).await.unwrap();
    let refused = open_session(addr, &host).await.unwrap_err();
    assert!(
        refused.lines().next().unwrap_or_default().contains(" 503 "),
        "{refused}"
    );
    let (_, body) = exchange(addr, "POST", &host, &[], &json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
    }).to_string())
    .await;
    assert!(body.contains("HttpOptions::max_sessions"), "{body}");
    let (head, _) = exchange(
        addr,
        "DELETE",
        &host,
        &[
            ("Mcp-Session-Id", &first),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        "",
    )
    .await;
    assert!(
        head.lines().next().unwrap_or_default().contains(" 204 "),
        "{head}"
    );
    open_session(addr, &host)
        .await
        .expect("a deleted session frees its place");
    server.shutdown();
}
