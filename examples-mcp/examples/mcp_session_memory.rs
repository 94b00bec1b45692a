//! Measures the memory an idle streamable HTTP session takes, from which
//! `HttpOptions::max_sessions`' default is derived (BENCHMARKS.md, "Memory
//! per idle MCP session"): opens sessions in rounds (`initialize` and
//! `notifications/initialized`, then nothing) and prints the process's
//! resident memory after each round.
//!
//! ```sh
//! cargo run --release -p examples-mcp --example mcp_session_memory -- 2000
//! ```
//! (Linux: reads `/proc/self/statm`.)

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};

use serde_json::json;
use tool_mcp::{HttpOptions, McpServer};
use tool_runtime::Runtime;

/// Resident memory in bytes.
fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// One HTTP/1.0 POST; the response's head.
fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(session) = session {
        request.push_str(&format!(
            "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

fn open_session(addr: SocketAddr) -> String {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "idle", "version": "0" } }
    });
    let head = post(addr, None, &initialize.to_string());
    let session = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session: {head}"));
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    post(addr, Some(&session), &initialized.to_string());
    session
}

#[tokio::main]
async fn main() {
    let total: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let server = McpServer::new(Runtime::builder().build().unwrap())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()).max_sessions(total + 100))
        .await
        .unwrap();
    let addr = server.local_addr();
    let rounds = 4;
    let per_round = total / rounds;
    let before = tokio::task::spawn_blocking(move || {
        // Warm up: the first sessions allocate what every later one reuses.
        for _ in 0..10 {
            open_session(addr);
        }
        resident()
    })
    .await
    .unwrap();
    println!("sessions  resident  per session since start");
    for round in 1..=rounds {
        let now = tokio::task::spawn_blocking(move || {
            for _ in 0..per_round {
                open_session(addr);
            }
            resident()
        })
        .await
        .unwrap();
        let opened = round * per_round;
        println!(
            "{opened:>8}  {:>6.1} MiB  {:>6.1} KiB",
            now as f64 / (1 << 20) as f64,
            (now.saturating_sub(before)) as f64 / opened as f64 / 1024.0
        );
    }
    server.shutdown();
}
