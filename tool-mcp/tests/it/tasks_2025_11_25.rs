//! The 2025-11-25 protocol's tasks (SEP-1686), over streamable HTTP with
//! raw requests and over stdio's framing: `capabilities.tasks`,
//! `execution.taskSupport`, `tasks/get`, `tasks/result`, `tasks/list`,
//! `tasks/cancel` and `notifications/tasks/status`.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tool_core::{ToolContext, ToolError, tool};
use tool_mcp::{HttpOptions, McpServer};
use tool_runtime::Runtime;

use common::client::*;
use common::http::*;
use common::lines::*;
use common::*;

static SLOW_JOB_GATE: AtomicBool = AtomicBool::new(false);

/// A slow job in the background (ends once `SLOW_JOB_GATE` opens)
#[tool(id = "slow-job", background(timeout_ms = 20_000))]
pub async fn slow_job(label: String) -> Result<String, ToolError> {
    while !SLOW_JOB_GATE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(format!("done: {label}"))
}

/// A quick job in the background
#[tool(id = "quick-job", background(timeout_ms = 20_000))]
pub async fn quick_job(label: String) -> Result<String, ToolError> {
    Ok(format!("done: {label}"))
}

/// Runs in the background until aborted
#[tool(id = "endless-job", background(timeout_ms = 20_000))]
pub async fn endless_job(ctx: ToolContext) -> Result<String, ToolError> {
    ctx.abort_signal().aborted().await;
    Ok("stopped".to_owned())
}

/// Polls `tasks/get` until the task has `status` (10 s at most).
async fn task_reaches(session: &Session2025, task_id: &str, status: &str) -> Value {
    eventually(1000, |n| async move {
        let got = session
            .request(1000 + n, "tasks/get", json!({ "taskId": task_id }))
            .await;
        if got["result"]["status"] == status {
            Ok(got["result"].clone())
        } else {
            Err(got)
        }
    })
    .await
    .unwrap_or_else(|last| panic!("task {task_id} did not reach {status}: {last}"))
}

/// The 2025-11-25 point: a client of that version that declares
/// `capabilities.tasks` gets, for a deferred background tool's call with a
/// `task` param, a task at once (`CreateTaskResult`); `tasks/get` says it
/// works, then that it completed; `tasks/result` waits for it and gives
/// the tool's result; `tasks/list` lists it; a status notification says it
/// completed; `tasks/cancel` cancels a running one. The server declares
/// `capabilities.tasks` and each task tool's `execution.taskSupport`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_client_that_declares_tasks_gets_tasks_for_background_tools() {
    let runtime = Runtime::builder()
        .tool(SlowJobTool)
        .tool(EndlessJobTool)
        .tool(WeatherTool)
        .tool(ArchiveTool)
        .build()
        .unwrap();
    let server = McpServer::new(runtime)
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let session =
        Session2025::open(&server, json!({ "tasks": { "list": {}, "cancel": {} } })).await;
    assert_eq!(
        session.init["result"]["capabilities"]["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
        "{}",
        session.init
    );
    let notifications = Arc::new(Mutex::new(String::new()));
    session.listen(Arc::clone(&notifications)).await;

    let listed = session.request(1, "tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().expect("tools").clone();
    let support = |name: &str| {
        let tool = tools.iter().find(|t| t["name"] == name).expect(name);
        tool["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("slow-job"), "optional", "{listed}");
    assert_eq!(support("weather-tool"), Value::Null, "{listed}");
    assert_eq!(support("archive"), "required", "{listed}");
    assert!(listed["result"].get("resultType").is_none(), "{listed}");

    SLOW_JOB_GATE.store(false, Ordering::SeqCst);
    let created = session
        .request(
            2,
            "tools/call",
            json!({ "name": "slow-job", "arguments": { "label": "a" }, "task": { "ttl": 60_000 } }),
        )
        .await;
    let task = &created["result"]["task"];
    let task_id = task["taskId"].as_str().expect("a task id").to_owned();
    assert_eq!(task["status"], "working", "{created}");
    assert!(task["ttl"].as_u64().is_some(), "{created}");
    assert!(task["pollInterval"].as_u64().is_some(), "{created}");
    assert!(
        task["createdAt"].as_str().unwrap().ends_with('Z'),
        "{created}"
    );
    assert!(task.get("ttlMs").is_none() && created["result"].get("resultType").is_none());

    let working = session
        .request(3, "tasks/get", json!({ "taskId": task_id }))
        .await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert_eq!(working["result"]["taskId"], task_id.as_str());
    assert!(working["result"].get("result").is_none(), "{working}");

    // tasks/result waits until the task ends.
    let result = session
        .result_when_released(4, &task_id, Duration::from_millis(300), &SLOW_JOB_GATE)
        .await;
    assert_eq!(
        result["result"]["content"][0]["text"], "done: a",
        "{result}"
    );
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert!(result["result"].get("resultType").is_none(), "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );

    let completed = task_reaches(&session, &task_id, "completed").await;
    assert!(completed.get("result").is_none(), "{completed}");
    let listed = session.request(5, "tasks/list", json!({})).await;
    let ids: Vec<&Value> = listed["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| &t["taskId"])
        .collect();
    assert_eq!(ids, [&json!(task_id)], "{listed}");
    assert_eq!(listed["result"]["tasks"][0]["status"], "completed");
    let bad_cursor = session
        .request(6, "tasks/list", json!({ "cursor": "nope" }))
        .await;
    assert_eq!(bad_cursor["error"]["code"], -32602, "{bad_cursor}");
    // Another session lists its own tasks only (none), and reads this one's by id.
    let other = Session2025::open(&server, json!({ "tasks": {} })).await;
    let theirs = other.request(1, "tasks/list", json!({})).await;
    assert_eq!(theirs["result"]["tasks"], json!([]), "{theirs}");
    let by_id = other
        .request(2, "tasks/get", json!({ "taskId": task_id }))
        .await;
    assert_eq!(by_id["result"]["status"], "completed", "{by_id}");

    // The session heard that the task completed.
    let (notifications, task_id) = (&notifications, &task_id);
    let heard = eventually(500, |_| async move {
        let seen = notifications.lock().unwrap().clone();
        let heard = seen.lines().any(|line| {
            line.contains("notifications/tasks/status")
                && line.contains(task_id.as_str())
                && line.contains("\"completed\"")
        });
        heard.then_some(()).ok_or(())
    })
    .await
    .is_ok();
    assert!(
        heard,
        "no status notification: {}",
        notifications.lock().unwrap()
    );

    // tasks/cancel cancels a running task, and refuses an ended one.
    let endless_id = session.start_task(7, "endless-job").await;
    let cancelled = session
        .request(8, "tasks/cancel", json!({ "taskId": endless_id }))
        .await;
    assert_eq!(
        cancelled["result"]["taskId"],
        endless_id.as_str(),
        "{cancelled}"
    );
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    task_reaches(&session, &endless_id, "cancelled").await;
    let again = session
        .request(9, "tasks/cancel", json!({ "taskId": endless_id }))
        .await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    let no_result = session
        .request(10, "tasks/result", json!({ "taskId": endless_id }))
        .await;
    assert_eq!(no_result["error"]["code"], -32602, "{no_result}");

    // A call without a `task` param waits for the result, as before; a
    // `task` param on a tool that is no task is refused.
    let waited = session
        .request(
            11,
            "tools/call",
            json!({ "name": "slow-job", "arguments": { "label": "b" } }),
        )
        .await;
    assert_eq!(
        waited["result"]["content"][0]["text"], "done: b",
        "{waited}"
    );
    let refused = session
        .request(
            12,
            "tools/call",
            json!({ "name": "weather-tool", "arguments": { "location": "Rome" }, "task": {} }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    let unknown = session
        .request(13, "tasks/get", json!({ "taskId": "mcp-task-0-nope" }))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // A task-required tool: a task, and method not found without `task`.
    let archived = session
        .request(
            14,
            "tools/call",
            json!({ "name": "archive", "arguments": {}, "task": {} }),
        )
        .await;
    assert!(
        archived["result"]["task"]["taskId"].is_string(),
        "{archived}"
    );
    let refused = session
        .request(
            15,
            "tools/call",
            json!({ "name": "archive", "arguments": {} }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    server.shutdown();
}

/// Without `capabilities.tasks`, a 2025-11-25 client keeps today's
/// behaviour: no tasks declared, a `task` param ignored (the request waits
/// for the result), `tasks/result` and `tasks/list` not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_client_without_tasks_waits_for_results() {
    let runtime = Runtime::builder().tool(QuickJobTool).build().unwrap();
    let server = McpServer::new(runtime)
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let session = Session2025::open(&server, json!({})).await;
    assert!(
        session.init["result"]["capabilities"]
            .get("tasks")
            .is_none(),
        "{}",
        session.init
    );
    let listed = session.request(1, "tools/list", json!({})).await;
    assert!(
        listed["result"]["tools"][0].get("execution").is_none(),
        "{listed}"
    );
    let called = session
        .request(
            2,
            "tools/call",
            json!({ "name": "quick-job", "arguments": { "label": "c" }, "task": {} }),
        )
        .await;
    assert_eq!(
        called["result"]["content"][0]["text"], "done: c",
        "{called}"
    );
    for method in ["tasks/result", "tasks/list"] {
        let refused = session.request(3, method, json!({ "taskId": "x" })).await;
        assert_eq!(refused["error"]["code"], -32601, "{method}: {refused}");
    }
    server.shutdown();
}

/// Over stdio's framing (`serve_lines`, which `serve_stdio` uses), a
/// 2025-11-25 client that declares `capabilities.tasks` gets them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_a_2025_11_25_client_that_declares_tasks_gets_tasks() {
    use tokio::io::AsyncBufReadExt as _;
    let runtime = Runtime::builder().tool(QuickJobTool).build().unwrap();
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let (server_reader, server_writer) = tokio::io::split(server_end);
    let serving = tokio::spawn(McpServer::new(runtime).serve_lines(server_reader, server_writer));
    let (reader, mut writer) = tokio::io::split(client_end);
    let mut lines = tokio::io::BufReader::new(reader).lines();
    let mut exchange = async |message: Value| -> Option<Value> {
        writer
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        let id = message.get("id")?.clone();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("an answer")
                .unwrap()
                .expect("a line");
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer.get("id") == Some(&id) {
                return Some(answer);
            }
        }
    };
    let init = exchange(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": { "tasks": {} },
            "clientInfo": { "name": "raw", "version": "0" } }
    }))
    .await
    .unwrap();
    assert!(
        init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(),
        "{init}"
    );
    exchange(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    let listed = exchange(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }))
        .await
        .unwrap();
    assert_eq!(
        listed["result"]["tools"][0]["execution"]["taskSupport"], "optional",
        "{listed}"
    );
    let created = exchange(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "quick-job", "arguments": { "label": "d" }, "task": {} }
    }))
    .await
    .unwrap();
    let task_id = created["result"]["task"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    let result = exchange(json!({
        "jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": { "taskId": task_id }
    }))
    .await
    .unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"], "done: d",
        "{result}"
    );
    writer.shutdown().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server ends when its input does")
        .unwrap()
        .unwrap();
}

/// 2025-11-25's input rounds: a task that suspends is `input_required`;
/// `tasks/result` sends its question to the client as an
/// `elicitation/create` request tied to the task, and the answer resumes
/// it; `tasks/result` then gives the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_task_that_suspends_asks_through_tasks_result() {
    let runtime = Runtime::builder().tool(BookLaterTool).build().unwrap();
    let mut client = LineClient::serve(runtime);
    let init = client
        .request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25",
                "capabilities": { "tasks": {}, "elicitation": { "form": {} } },
                "clientInfo": { "name": "raw", "version": "0" } }),
        )
        .await;
    assert!(
        init["result"]["capabilities"]["tasks"].is_object(),
        "{init}"
    );
    client
        .send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    let created = client
        .request(
            2,
            "tools/call",
            json!({ "name": "book-later", "arguments": { "flight": "AZ 610" }, "task": {} }),
        )
        .await;
    let task_id = created["result"]["task"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    let status = client.task_status(&task_id, "input_required").await;
    assert_eq!(status, "input_required");

    client
        .send(json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": task_id } }))
        .await;
    let asked = loop {
        let message = client.next().await;
        if message["method"] == "elicitation/create" {
            break message;
        }
        assert_ne!(
            message["id"], 3,
            "tasks/result answered before asking: {message}"
        );
    };
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task_id,
        "{asked}"
    );
    assert!(
        asked["params"]["message"]
            .as_str()
            .unwrap()
            .contains("249 EUR"),
        "{asked}"
    );
    client
        .send(json!({ "jsonrpc": "2.0", "id": asked["id"],
            "result": { "action": "accept", "content": { "confirmed": true, "seats": 2 } } }))
        .await;
    let result = loop {
        let message = client.next().await;
        if message["id"] == 3 {
            break message;
        }
    };
    assert_eq!(
        result["result"]["content"][0]["text"], "booked 2 seat(s) on AZ 610",
        "{result}"
    );
    // The session heard the status changes (a `working` between them only
    // if the resumed task ran longer than a poll interval).
    while !client.statuses.contains(&json!("completed")) {
        client.next().await;
    }
    let mut heard = client.statuses.clone();
    heard.retain(|status| status != "working");
    assert_eq!(
        heard,
        [json!("input_required"), json!("completed")],
        "{:?}",
        client.statuses
    );
}

static SHARED_JOB_GATE: AtomicBool = AtomicBool::new(false);

/// A background job that ends once `SHARED_JOB_GATE` opens
#[tool(id = "shared-job", background(timeout_ms = 20_000))]
pub async fn shared_job() -> Result<String, ToolError> {
    while !SHARED_JOB_GATE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok("shared done".to_owned())
}

/// A 2025-11-25 task lives in the runtime's store: another instance sharing
/// it answers `tasks/get` and `tasks/result` for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_instance_answers_for_a_2025_11_25_task() {
    let store = Arc::new(tool_runtime::store::MemoryStore::new());
    let serve = || async {
        let runtime = Runtime::builder()
            .tool(SharedJobTool)
            .store(Arc::clone(&store))
            .build()
            .unwrap();
        McpServer::new(runtime)
            .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
            .await
            .unwrap()
    };
    let (here, there) = (serve().await, serve().await);
    let creator = Session2025::open(&here, json!({ "tasks": {} })).await;
    let reader = Session2025::open(&there, json!({ "tasks": {} })).await;
    let task_id = creator.start_task(1, "shared-job").await;
    let working = reader
        .request(1, "tasks/get", json!({ "taskId": task_id }))
        .await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    let result = reader
        .result_when_released(2, &task_id, Duration::from_millis(200), &SHARED_JOB_GATE)
        .await;
    assert_eq!(
        result["result"]["content"][0]["text"], "shared done",
        "{result}"
    );
    here.shutdown();
    there.shutdown();
}

/// `tasks/cancel` of a suspended 2025-11-25 task answers at once that it is
/// still `input_required` (nothing runs to be stopped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_suspended_2025_11_25_task_leaves_it_asking() {
    let runtime = Runtime::builder().tool(BookLaterTool).build().unwrap();
    let mut client = LineClient::serve(runtime);
    client
        .request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": { "tasks": {} },
                "clientInfo": { "name": "raw", "version": "0" } }),
        )
        .await;
    client
        .send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    let created = client
        .request(
            2,
            "tools/call",
            json!({ "name": "book-later", "arguments": { "flight": "AZ 611" }, "task": {} }),
        )
        .await;
    let task_id = created["result"]["task"]["taskId"].clone();
    client.task_status(&task_id, "input_required").await;
    let started = std::time::Instant::now();
    let cancelled = client
        .request(3, "tasks/cancel", json!({ "taskId": task_id }))
        .await;
    assert_eq!(
        cancelled["result"]["status"], "input_required",
        "{cancelled}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}
