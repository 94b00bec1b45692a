//! stdio's framing (newline-delimited JSON-RPC) with raw lines.

mod common;

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tool_mcp::McpServer;

use common::*;

/// rmcp's own behaviour over stdio, pinned (the README lists it under
/// limits): a line that is not JSON gets no response at all; the server
/// goes on and answers the next message.
#[tokio::test]
async fn over_stdio_a_line_that_is_not_json_gets_no_response() {
    use tokio::io::AsyncBufReadExt as _;
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(McpServer::new(runtime()).serve(server_end));
    let (reader, mut writer) = tokio::io::split(client_end);
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
    });
    writer
        .write_all(format!("{{\"jsonrpc\": \"2.0\", \"id\": 0, \n{initialize}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(reader).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("an answer")
        .unwrap()
        .expect("a line");
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(
        first["id"], 1,
        "the first answer is the initialize result: {first}"
    );
}
