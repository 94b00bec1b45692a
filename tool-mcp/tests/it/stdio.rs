//! stdio's framing (newline-delimited JSON-RPC) with raw lines: through
//! `serve_lines` (as `serve_stdio`), each malformed line gets the JSON-RPC
//! answer HTTP gives, a line over the message limit is answered and the
//! server goes on; through rmcp's bare transport (`serve`), rmcp's own
//! behaviour.

use crate::common;

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tool_mcp::McpServer;

use common::*;

/// rmcp's own behaviour over its bare transport (`McpServer::serve`),
/// pinned: a line that is not JSON gets no response at all; the server
/// goes on and answers the next message. `serve_stdio` and `serve_lines`
/// answer it (below).
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

/// Writes `lines` to a `serve_lines` server with a 1 KiB message limit and
/// reads one answer per line.
async fn answers(lines: &[String]) -> Vec<Value> {
    use tokio::io::AsyncBufReadExt as _;
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let (server_reader, server_writer) = tokio::io::split(server_end);
    let server = McpServer::builder(runtime()).max_message_size(1024).build();
    tokio::spawn(server.serve_lines(server_reader, server_writer));
    let (reader, mut writer) = tokio::io::split(client_end);
    let mut read = tokio::io::BufReader::new(reader).lines();
    let mut answers = Vec::new();
    for line in lines {
        writer.write_all(line.as_bytes()).await.unwrap();
        writer.write_all(b"\n").await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(10), read.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer to {line:.80}"))
            .unwrap()
            .expect("a line");
        answers.push(serde_json::from_str(&answer).unwrap());
    }
    answers
}

fn error_of(answer: &Value) -> (Value, i64) {
    (
        answer["id"].clone(),
        answer["error"]["code"].as_i64().unwrap_or(0),
    )
}

#[tokio::test]
async fn over_stdio_each_malformed_line_gets_the_answer_http_gives_and_the_server_goes_on() {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
    });
    let lines = [
        "{\"jsonrpc\": \"2.0\", \"id\": 0, ".to_owned(),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "arguments": {} } }).to_string(),
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": 7 } }).to_string(),
        json!({ "jsonrpc": "2.0", "id": "four", "method": "tools/call", "params": { "name": "echo", "arguments": [1] } }).to_string(),
        json!({ "id": 5, "method": "ping" }).to_string(),
        json!({ "jsonrpc": "2.0", "id": 6 }).to_string(),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}", "x".repeat(2048)),
        initialize.to_string(),
    ];
    let answers = answers(&lines).await;
    let errors: Vec<(Value, i64)> = answers[..7].iter().map(error_of).collect();
    assert_eq!(
        errors,
        [
            (Value::Null, -32700),
            (json!(2), -32602),
            (json!(3), -32602),
            (json!("four"), -32602),
            (json!(5), -32600),
            (json!(6), -32600),
            (Value::Null, -32600),
        ],
        "{answers:#?}"
    );
    let too_large = answers[6]["error"]["message"].as_str().unwrap();
    assert!(
        too_large.contains("1024 bytes") && too_large.contains("max_message_size"),
        "{too_large}"
    );
    assert_eq!(
        answers[7]["id"], 1,
        "then initialize is served: {}",
        answers[7]
    );
    assert!(
        answers[7]["result"]["serverInfo"].is_object(),
        "{}",
        answers[7]
    );
}
