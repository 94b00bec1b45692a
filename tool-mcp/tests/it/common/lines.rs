//! A raw client of stdio's framing (`McpServer::serve_lines`).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tool_mcp::McpServer;
use tool_runtime::Runtime;

/// A raw client of `serve_lines`: one JSON-RPC message a line.
pub struct LineClient {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    /// The task statuses notified so far.
    pub statuses: Vec<Value>,
}

impl LineClient {
    pub fn serve(runtime: Runtime) -> LineClient {
        use tokio::io::AsyncBufReadExt as _;
        let (server_end, client_end) = tokio::io::duplex(1 << 16);
        let (reader, writer) = tokio::io::split(server_end);
        tokio::spawn(McpServer::new(runtime).serve_lines(reader, writer));
        let (reader, writer) = tokio::io::split(client_end);
        LineClient {
            lines: tokio::io::BufReader::new(reader).lines(),
            writer,
            statuses: Vec::new(),
        }
    }

    pub async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a message")
            .unwrap()
            .expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "notifications/tasks/status" {
            self.statuses.push(message["params"]["status"].clone());
        }
        message
    }

    /// Polls `tasks/get` (ids from 10) until the task has `status`, 1,000
    /// times at most; the task's last status either way.
    pub async fn task_status(&mut self, task_id: &Value, status: &str) -> Value {
        let mut last = Value::Null;
        for n in 0..1000 {
            let got = self
                .request(10 + n, "tasks/get", json!({ "taskId": task_id }))
                .await;
            last = got["result"]["status"].clone();
            if last == status {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        last
    }

    /// Sends a request and returns its response (skipping notifications).
    pub async fn request(&mut self, id: u32, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let message = self.next().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}
