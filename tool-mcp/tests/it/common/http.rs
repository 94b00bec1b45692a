//! Raw streamable HTTP requests, and a 2025-11-25 client's session made of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// One HTTP/1.0 POST (the body ends when the server closes the
/// connection), returning the status line, the headers and the JSON-RPC
/// message with `id` from the JSON or SSE body.
pub async fn post(
    addr: std::net::SocketAddr,
    host: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (String, String, Option<Value>) {
    post_text(addr, host, headers, &body.to_string()).await
}

/// [`post`] with any body text.
pub async fn post_text(
    addr: std::net::SocketAddr,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String, Option<Value>) {
    let (head, body) = exchange(addr, "POST", host, headers, body).await;
    let status = head.lines().next().unwrap_or_default().to_owned();
    let message = body
        .lines()
        .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|m| m.get("id").is_some());
    (status, head, message)
}

/// One HTTP/1.0 request with a JSON body (empty: none), read until the
/// server closes the connection: the response's head and body.
pub async fn exchange(
    addr: std::net::SocketAddr,
    method: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String) {
    let mut stream = send(addr, method, host, headers, body).await;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .expect("the response did not end")
        .unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.to_owned(), body.to_owned())
}

/// Sends one HTTP/1.0 request with a JSON body (empty: none); the
/// connection, to read the response from.
pub async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// A streamable HTTP session of a 2025-11-25 client (`capabilities` as
/// given): the server's address, host, and the session's headers.
#[derive(Clone)]
pub struct Session2025 {
    addr: std::net::SocketAddr,
    host: String,
    session: String,
    pub init: Value,
}

impl Session2025 {
    pub async fn open(server: &tool_mcp::HttpServer, capabilities: Value) -> Session2025 {
        let (addr, host) = (server.local_addr(), server.local_addr().to_string());
        let (status, head, init) = post(
            addr,
            &host,
            &[],
            json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": { "protocolVersion": "2025-11-25", "capabilities": capabilities,
                    "clientInfo": { "name": "raw", "version": "0" } }
            }),
        )
        .await;
        assert!(status.contains("200"), "{status}");
        let session = header(&head, "mcp-session-id")
            .expect("a session")
            .to_owned();
        let opened = Session2025 {
            addr,
            host,
            session,
            init: init.expect("an initialize result"),
        };
        let (status, _, _) = post(
            addr,
            &opened.host,
            &opened.headers(),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        )
        .await;
        assert!(status.contains("202"), "{status}");
        opened
    }

    pub fn headers(&self) -> [(&str, &str); 2] {
        [
            ("Mcp-Session-Id", self.session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]
    }

    /// One request; its JSON-RPC response.
    pub async fn request(&self, id: u32, method: &str, params: Value) -> Value {
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let (_, _, message) = post(self.addr, &self.host, &self.headers(), body).await;
        message.unwrap_or_else(|| panic!("no response to {method}"))
    }

    /// Calls the background tool `name` (no arguments) as a task: the
    /// task's id.
    pub async fn start_task(&self, id: u32, name: &str) -> String {
        let created = self
            .request(
                id,
                "tools/call",
                json!({ "name": name, "arguments": {}, "task": {} }),
            )
            .await;
        created["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_owned()
    }

    /// [`request`](Self::request) on a task of its own, for a request that
    /// waits (`tasks/result`): its response, once it comes.
    pub fn request_later(
        &self,
        id: u32,
        method: &str,
        params: Value,
    ) -> tokio::task::JoinHandle<Value> {
        let (session, method) = (self.clone(), method.to_owned());
        tokio::spawn(async move { session.request(id, &method, params).await })
    }

    /// `tasks/result` of a task its tool holds until `gate` opens: the
    /// request must still wait after `held`; then the gate opens and its
    /// response comes.
    pub async fn result_when_released(
        &self,
        id: u32,
        task_id: &str,
        held: Duration,
        gate: &AtomicBool,
    ) -> Value {
        let waiting = self.request_later(id, "tasks/result", json!({ "taskId": task_id }));
        tokio::time::sleep(held).await;
        assert!(
            !waiting.is_finished(),
            "tasks/result answered before the task ended"
        );
        gate.store(true, Ordering::SeqCst);
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("tasks/result did not answer")
            .expect("a response")
    }

    /// The session's standalone SSE stream, read into `into` line by line.
    pub async fn listen(&self, into: Arc<Mutex<String>>) {
        use tokio::io::AsyncBufReadExt as _;
        let stream = send(self.addr, "GET", &self.host, &self.headers(), "").await;
        let mut lines = tokio::io::BufReader::new(stream).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut seen = into.lock().unwrap();
                seen.push_str(&line);
                seen.push('\n');
            }
        });
    }
}
