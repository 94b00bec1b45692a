//! Background tools as tasks of the tasks extension (SEP-2663), for both
//! protocol eras: task handles, `tasks/get`, `tasks/update`,
//! `tasks/cancel`, and the questions a task asks its client.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientRequest, ElicitResult, ElicitationAction,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{ToolContext, ToolError, tool};
use tool_mcp::McpToolContext as _;
use tool_runtime::Runtime;

use common::client::*;
use common::*;

/// Builds a report in the background (waits until `REPORT_GATE` opens)
#[tool(background(timeout_ms = 10_000))]
pub async fn report(pages: u32) -> Result<u32, ToolError> {
    while !REPORT_GATE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(pages * 10)
}

static REPORT_GATE: AtomicBool = AtomicBool::new(false);

/// The MCP issue's tasks point: for a client that declares the tasks
/// extension, a background tool's call is a task at once; `tasks/get` says
/// it works, then gives the call's result; another server on the same store
/// answers for it too. Without the extension the request waits, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tools_are_mcp_tasks_for_clients_that_declare_the_extension() {
    use rmcp::model::{GetTaskParams, TaskPayload, TaskStatus};
    let store = Arc::new(tool_runtime::store::MemoryStore::new());
    let runtime = || {
        Runtime::builder()
            .tool(ReportTool)
            .store(Arc::clone(&store))
            .build()
            .unwrap()
    };
    for modern in [false, true] {
        REPORT_GATE.store(false, Ordering::SeqCst);
        let client = connect(
            runtime(),
            TestClient {
                tasks: true,
                ..TestClient::default()
            },
            modern,
        )
        .await;
        let params = CallToolRequestParams::new("report")
            .with_arguments(json!({ "pages": 3 }).as_object().unwrap().clone());
        let CallToolResponse::Task(created) = client.call_tool_once(params).await.unwrap() else {
            panic!("a task handle")
        };
        let task_id = created.task.task_id.clone();
        assert_eq!(created.task.status, TaskStatus::Working);
        assert!(created.task.created_at.ends_with('Z'), "{:?}", created.task);
        let working = client.get_task(GetTaskParams::new(&task_id)).await.unwrap();
        assert_eq!(working.task.status(), TaskStatus::Working);

        REPORT_GATE.store(true, Ordering::SeqCst);
        // Another server (instance) on the same store answers for the task.
        let elsewhere = connect(
            runtime(),
            TestClient {
                tasks: true,
                ..TestClient::default()
            },
            modern,
        )
        .await;
        let (elsewhere, task_id) = (&elsewhere, &task_id);
        let done = eventually(1000, |_| async move {
            let got = elsewhere
                .get_task(GetTaskParams::new(task_id))
                .await
                .unwrap();
            (got.task.status() == TaskStatus::Completed)
                .then_some(got)
                .ok_or(())
        })
        .await
        .expect("the task completed");
        let TaskPayload::Completed { result } = &done.task.payload else {
            panic!("{done:?}")
        };
        let structured = if modern {
            json!(30)
        } else {
            json!({ "result": 30 })
        };
        assert_eq!(result["structuredContent"], structured, "modern: {modern}");
        assert_eq!(result["isError"], false);

        let unknown = client.get_task(GetTaskParams::new("mcp-0-nope")).await;
        assert!(unknown.is_err(), "{unknown:?}");

        // Without the extension: the request waits for the result.
        let plain = connect(runtime(), TestClient::default(), modern).await;
        let waited = call(&plain, "report", json!({ "pages": 1 })).await.unwrap();
        assert_eq!(
            waited.structured_content,
            Some(if modern {
                json!(10)
            } else {
                json!({ "result": 10 })
            })
        );
    }
}

/// Panics in the background (a crash, not a tool's error)
#[tool(background)]
pub async fn crashing_job() -> u32 {
    panic!("crashing_job crashes")
}

/// Fails in the background (the tool's own error)
#[tool(background)]
pub async fn failing_job() -> Result<u32, ToolError> {
    Err(ToolError::new("the job failed"))
}

/// Polls `tasks/get` until the task leaves `working`.
async fn settled(client: &Client, task_id: &str) -> rmcp::model::DetailedTask {
    use rmcp::model::{GetTaskParams, TaskStatus};
    eventually(500, |_| async move {
        let got = client.get_task(GetTaskParams::new(task_id)).await.unwrap();
        (got.task.status() != TaskStatus::Working)
            .then_some(got.task)
            .ok_or(())
    })
    .await
    .unwrap_or_else(|()| panic!("task {task_id} did not settle"))
}

/// Answers task `task_id`'s question `key` with `answer` (`tasks/update`).
async fn answer_task(
    client: &Client,
    task_id: &str,
    key: &str,
    answer: Value,
) -> Result<(), ServiceError> {
    let answers = [(key.to_owned(), answer)].into();
    let params = rmcp::model::UpdateTaskParams::new(task_id.to_owned(), answers);
    client.update_task(params).await.map(drop)
}

/// The result of task `task_id` once it settled, completed.
async fn completed(client: &Client, task_id: &str) -> rmcp::model::JsonObject {
    let done = settled(client, task_id).await;
    let rmcp::model::TaskPayload::Completed { result } = done.payload else {
        panic!("a completed task: {done:?}")
    };
    result
}

/// SEP-2663's error semantics: a tool that reports an error completes with
/// an `isError` result; a tool that crashed (a panic: an internal error,
/// not the tool's answer) fails, with a JSON-RPC error and no result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_tool_panics_fails_and_one_whose_tool_errs_completes_with_is_error() {
    use rmcp::model::TaskPayload;
    let runtime = Runtime::builder()
        .tool(CrashingJobTool)
        .tool(FailingJobTool)
        .build()
        .unwrap();
    for modern in [false, true] {
        let client = connect(
            runtime.clone(),
            TestClient {
                tasks: true,
                ..TestClient::default()
            },
            modern,
        )
        .await;
        let start = |name: &'static str| {
            let client = &client;
            async move {
                let params = CallToolRequestParams::new(name);
                let CallToolResponse::Task(created) = client.call_tool_once(params).await.unwrap()
                else {
                    panic!("a task handle for {name}")
                };
                created.task.task_id
            }
        };
        let crashed = settled(&client, &start("crashing_job").await).await;
        let TaskPayload::Failed { error } = &crashed.payload else {
            panic!("a failed task: {crashed:?}")
        };
        assert_eq!(error["code"], -32603, "{error:?}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("crashing_job crashes"),
            "{error:?}"
        );
        let value = serde_json::to_value(&crashed).unwrap();
        assert_eq!(value["status"], "failed");
        assert!(value.get("result").is_none(), "{value}");

        let errored = settled(&client, &start("failing_job").await).await;
        let TaskPayload::Completed { result } = &errored.payload else {
            panic!("a completed task: {errored:?}")
        };
        assert_eq!(result["isError"], true, "{result:?}");
    }
}

/// SEP-2663's `ttlMs`: how long from its creation a task stays readable.
/// The store keeps a settled call for the runtime's settled retention, so
/// a task lives at least that long past its last update: `ttlMs` says so,
/// rather than `null` (unlimited), which the store's purge would belie.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_says_how_long_it_stays_readable() {
    let retention = Duration::from_secs(3_600);
    let runtime = Runtime::builder()
        .tool(FailingJobTool)
        .settled_retention(retention)
        .build()
        .unwrap();
    let client = connect(
        runtime,
        TestClient {
            tasks: true,
            ..TestClient::default()
        },
        true,
    )
    .await;
    let before = std::time::Instant::now();
    let params = CallToolRequestParams::new("failing_job");
    let CallToolResponse::Task(created) = client.call_tool_once(params).await.unwrap() else {
        panic!("a task handle")
    };
    // Counted from the task's creation: the handle, made a moment later,
    // says the retention plus that moment.
    let handed = u64::try_from(before.elapsed().as_millis()).unwrap();
    let wire = serde_json::to_value(&created).unwrap();
    let ttl = wire["ttlMs"].as_u64().expect("a ttlMs");
    assert!(
        (3_600_000..=3_600_000 + handed + 1).contains(&ttl),
        "{wire}"
    );
    let done = settled(&client, &created.task.task_id).await;
    let elapsed = u64::try_from(before.elapsed().as_millis()).unwrap();
    let ttl = done.task.ttl_ms.expect("a ttlMs");
    assert!(
        (3_600_000..=3_600_000 + elapsed + 1).contains(&ttl),
        "{ttl} after {elapsed} ms"
    );
}

/// The MCP issue's tasks point (tasks-required-task-error): a tool served
/// only as a task refuses a client without the tasks extension with
/// -32021, naming the extension; a client with it gets a task.
#[tokio::test]
async fn a_task_only_tool_refuses_clients_without_the_tasks_extension() {
    let runtime = || Runtime::builder().tool(ArchiveTool).build().unwrap();
    let plain = connect(runtime(), TestClient::default(), false).await;
    let refused = call(&plain, "archive", json!({})).await.unwrap_err();
    let ServiceError::McpError(error) = refused else {
        panic!("a JSON-RPC error: {refused:?}")
    };
    assert_eq!(error.code.0, -32021, "{error:?}");
    let data = error.data.expect("the required capabilities");
    assert!(
        data["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{data}"
    );
    let tasks = connect(
        runtime(),
        TestClient {
            tasks: true,
            ..TestClient::default()
        },
        false,
    )
    .await;
    let response = tasks
        .call_tool_once(CallToolRequestParams::new("archive"))
        .await
        .unwrap();
    assert!(
        matches!(response, CallToolResponse::Task(_)),
        "{response:?}"
    );
}

// --- tasks that ask their client (SEP-2663 in-task input) ------------------------

/// An accepted form with `content`, as `inputResponses` carry it.
fn accepted(content: Value) -> Value {
    serde_json::to_value(accept(content)).unwrap()
}

/// A tasks client that shows forms (it declares elicitation) and records
/// any elicitation request sent to it: a task's questions must go in the
/// task instead.
fn task_client() -> TestClient {
    TestClient {
        tasks: true,
        ..TestClient::answering(|_, _| ElicitResult::new(ElicitationAction::Decline))
    }
}

/// Starts `tool` with `arguments` as a task: its id.
async fn start_task(client: &Client, tool: &str, arguments: Value) -> String {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone());
    let response = client.call_tool_once(params).await.unwrap();
    let CallToolResponse::Task(created) = response else {
        panic!("a task handle for {tool}: {response:?}")
    };
    created.task.task_id
}

/// Polls `tasks/get` until the task is `input_required` with at least
/// `questions` questions; its questions, as JSON.
async fn questions(
    client: &Client,
    task_id: &str,
    questions: usize,
) -> serde_json::Map<String, Value> {
    use rmcp::model::{GetTaskParams, TaskPayload};
    eventually(500, |_| async move {
        let got = client.get_task(GetTaskParams::new(task_id)).await.unwrap();
        match &got.task.payload {
            TaskPayload::InputRequired { input_requests } if input_requests.len() >= questions => {
                let Value::Object(asked) = serde_json::to_value(input_requests).unwrap() else {
                    panic!("a map")
                };
                Ok(asked)
            }
            _ => Err(()),
        }
    })
    .await
    .unwrap_or_else(|()| panic!("task {task_id} did not ask {questions} question(s)"))
}

/// The JSON-RPC error code and message of a refused request.
fn refusal<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> (i32, String) {
    match result {
        Err(ServiceError::McpError(error)) => (error.code.0, error.message.to_string()),
        other => panic!("a JSON-RPC error: {other:?}"),
    }
}

/// The MCP issue's in-task input (tasks-mrtr-input), the durable way: a
/// background tool that suspends is an `input_required` task whose question
/// (its resume form) any instance sharing the store shows, and whose answer
/// any instance takes (`tasks/update`): the call resumes and the task
/// completes with the tool's result. Resume data the schema rejects, or an
/// answer of the wrong shape, is refused saying why, the question staying;
/// keys no question has are ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_task_asks_through_tasks_get_and_resumes_with_tasks_update() {
    use rmcp::model::{TaskPayload, UpdateTaskParams};
    let store = Arc::new(tool_runtime::store::MemoryStore::new());
    let runtime = || {
        Runtime::builder()
            .tool(BookLaterTool)
            .store(Arc::clone(&store))
            .build()
            .unwrap()
    };
    for modern in [false, true] {
        let handler = task_client();
        let sent = Arc::clone(&handler.asked);
        let client = connect(runtime(), handler, modern).await;
        let task_id = start_task(&client, "book-later", json!({ "flight": "AF123" })).await;

        // Another instance on the same store shows the stored question.
        let elsewhere = connect(runtime(), task_client(), modern).await;
        let asked = questions(&elsewhere, &task_id, 1).await;
        assert_eq!(asked.len(), 1, "{asked:?}");
        let key = asked.keys().next().unwrap().clone();
        assert!(key.starts_with("resume-"), "{key}");
        // Both instances name it alike (it comes from the store).
        let here = questions(&client, &task_id, 1).await;
        assert_eq!(here.keys().collect::<Vec<_>>(), [&key]);
        let question = &asked[&key];
        assert_eq!(question["method"], "elicitation/create", "{question}");
        let message: Value =
            serde_json::from_str(question["params"]["message"].as_str().unwrap()).unwrap();
        assert_eq!(message["question"], "Book AF123 for 249 EUR?");
        let schema = &question["params"]["requestedSchema"];
        assert_eq!(schema["properties"]["seats"]["minimum"], 1, "{schema}");
        assert!(
            sent.lock().unwrap().is_empty(),
            "no elicitation request: the task asks"
        );

        let update = |answer: Value| {
            let elsewhere = &elsewhere;
            let task_id = task_id.clone();
            let answers = [(key.clone(), answer)].into();
            async move {
                elsewhere
                    .update_task(UpdateTaskParams::new(task_id, answers))
                    .await
            }
        };
        // Not an elicitation result: refused, naming the key.
        let (code, message) = refusal(update(json!("yes please")).await);
        assert_eq!(code, -32602, "{message}");
        assert!(
            message.contains(&format!("{key:?}")) && message.contains("elicitation result"),
            "{message}"
        );
        // Resume data the resume schema rejects (seats >= 1): refused, saying why.
        let (code, message) = refusal(
            update(json!({ "action": "accept", "content": { "confirmed": true, "seats": 0 } }))
                .await,
        );
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains("seats"), "{message}");
        assert!(message.len() < 1_000, "bounded: {message}");
        // A key no question has: ignored (acked); the question stays.
        elsewhere
            .update_task(UpdateTaskParams::new(
                task_id.clone(),
                [("nope".to_owned(), json!({ "action": "accept" }))].into(),
            ))
            .await
            .unwrap();
        let still = questions(&client, &task_id, 1).await;
        assert_eq!(still.keys().collect::<Vec<_>>(), [&key]);

        update(json!({ "action": "accept", "content": { "confirmed": true, "seats": 2 } }))
            .await
            .unwrap();
        let done = settled(&client, &task_id).await;
        let TaskPayload::Completed { result } = &done.payload else {
            panic!("a completed task: {done:?}")
        };
        assert_eq!(
            result["content"][0]["text"], "booked 2 seat(s) on AF123",
            "{result:?}"
        );
        assert_eq!(result["isError"], false);
    }
}

/// Asks the user for two seats at once while it runs
#[tool(background, id = "two-seats")]
pub async fn two_seats(flight: String, ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = ctx.mcp().ok_or_else(|| ToolError::new("nobody to ask"))?;
    let (first, second) = tokio::join!(
        mcp.elicit_as::<SeatChoice>(format!("First seat on {flight}?")),
        mcp.elicit_as::<SeatChoice>(format!("Second seat on {flight}?"))
    );
    let seat = |choice: Option<SeatChoice>| choice.map_or_else(|| "none".to_owned(), |c| c.seat);
    Ok(format!("{flight}: {} and {}", seat(first?), seat(second?)))
}

/// The MCP issue's in-task input, the tool asking while it runs (the
/// partial fulfillment of tasks-mrtr-input): two questions open at once,
/// each with a key of its own; an answer of the wrong shape is refused and
/// delivers nothing; each answer closes its question; the task completes
/// with the answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_task_asks_several_questions_and_each_answer_closes_its_own() {
    use rmcp::model::{TaskPayload, UpdateTaskParams};
    let runtime = Runtime::builder().tool(TwoSeatsTool).build().unwrap();
    for modern in [false, true] {
        let handler = task_client();
        let sent = Arc::clone(&handler.asked);
        let client = connect(runtime.clone(), handler, modern).await;
        let task_id = start_task(&client, "two-seats", json!({ "flight": "AF123" })).await;
        let asked = questions(&client, &task_id, 2).await;
        let mut messages: Vec<&str> = asked
            .values()
            .map(|q| {
                assert_eq!(q["method"], "elicitation/create", "{q}");
                q["params"]["message"].as_str().unwrap()
            })
            .collect();
        messages.sort_unstable();
        assert_eq!(messages, ["First seat on AF123?", "Second seat on AF123?"]);
        assert!(
            sent.lock().unwrap().is_empty(),
            "no elicitation request: the task asks"
        );
        let key_of = |message: &str| {
            asked
                .iter()
                .find(|(_, q)| q["params"]["message"] == message)
                .map(|(key, _)| key.clone())
                .unwrap()
        };
        let (first, second) = (
            key_of("First seat on AF123?"),
            key_of("Second seat on AF123?"),
        );
        let update = |answers: Vec<(&String, Value)>| {
            let client = &client;
            let task_id = task_id.clone();
            let answers = answers.into_iter().map(|(k, v)| (k.clone(), v)).collect();
            async move {
                client
                    .update_task(UpdateTaskParams::new(task_id, answers))
                    .await
            }
        };

        // One answer of the wrong shape: nothing is delivered.
        let (code, message) = refusal(
            update(vec![
                (&first, accepted(json!({ "seat": "12A", "window": true }))),
                (&second, json!(42)),
            ])
            .await,
        );
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains(&format!("{second:?}")), "{message}");
        assert_eq!(questions(&client, &task_id, 2).await.len(), 2);

        update(vec![(
            &first,
            accepted(json!({ "seat": "12A", "window": true })),
        )])
        .await
        .unwrap();
        let left = questions(&client, &task_id, 1).await;
        assert_eq!(left.keys().collect::<Vec<_>>(), [&second], "{left:?}");

        update(vec![(
            &second,
            accepted(json!({ "seat": "12B", "window": false })),
        )])
        .await
        .unwrap();
        let done = settled(&client, &task_id).await;
        let TaskPayload::Completed { result } = &done.payload else {
            panic!("a completed task: {done:?}")
        };
        assert_eq!(
            result["content"][0]["text"], "AF123: 12A and 12B",
            "{result:?}"
        );
    }
}

/// `tasks/cancel` of a task waiting on its questions: the questions end
/// and the task is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_that_waits_for_answers_cancels_it() {
    use rmcp::model::{CancelTaskParams, TaskPayload};
    let runtime = Runtime::builder().tool(TwoSeatsTool).build().unwrap();
    let client = connect(runtime, task_client(), true).await;
    let task_id = start_task(&client, "two-seats", json!({ "flight": "AF123" })).await;
    questions(&client, &task_id, 2).await;
    client
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .unwrap();
    let done = settled(&client, &task_id).await;
    assert_eq!(done.payload, TaskPayload::Cancelled, "{done:?}");
}

/// Greets the user, asking their name first (a background tool waited for)
#[tool(background(disposition = "foreground"), id = "greet-later")]
pub async fn greet_later(ctx: ToolContext<String, GreetName>) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend("What is your name?".to_owned()),
        Some(GreetName { name }) => Ok(format!("Hello, {name}!")),
    }
}

/// The answer `greet-later` asks for.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct GreetName {
    /// Your name
    name: String,
}

/// The MCP issue's tasks-mrtr-composition: a background call that asks
/// before its task runs gets an `input_required` result (no task yet);
/// the retry with the answer gets a task handle, and the task completes
/// with the answer in its result. A client without the tasks extension
/// gets the result itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_asks_first_becomes_a_task_once_answered() {
    use rmcp::model::TaskPayload;
    let runtime = Runtime::builder().tool(GreetLaterTool).build().unwrap();
    for tasks in [true, false] {
        let client = connect(
            runtime.clone(),
            TestClient {
                tasks,
                ..TestClient::answering(|_, _| ElicitResult::new(ElicitationAction::Decline))
            },
            true,
        )
        .await;
        let response = client
            .call_tool_once(CallToolRequestParams::new("greet-later"))
            .await
            .unwrap();
        let CallToolResponse::InputRequired(asked) = response else {
            panic!("input_required first: {response:?}")
        };
        let requests = asked.input_requests.expect("a question");
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["resume"]);
        let retry = CallToolRequestParams::new("greet-later")
            .with_request_state(asked.request_state.expect("a request state"))
            .with_input_responses(
                [("resume".to_owned(), accepted(json!({ "name": "Alice" })))].into(),
            );
        let response = client.call_tool_once(retry).await.unwrap();
        if !tasks {
            let CallToolResponse::Complete(result) = response else {
                panic!("the result itself without the extension: {response:?}")
            };
            assert_eq!(text(&result), "Hello, Alice!");
            continue;
        }
        let CallToolResponse::Task(created) = response else {
            panic!("a task handle once answered: {response:?}")
        };
        let wire = serde_json::to_value(&created).unwrap();
        assert!(wire.get("requestState").is_none(), "{wire}");
        let done = settled(&client, &created.task.task_id).await;
        let TaskPayload::Completed { result } = &done.payload else {
            panic!("a completed task: {done:?}")
        };
        assert_eq!(result["content"][0]["text"], "Hello, Alice!", "{result:?}");
    }
}

/// Summarizes a text in the background with the client's model
#[tool(background)]
pub async fn summarize(text: String, ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = ctx.mcp().ok_or_else(|| ToolError::new("nobody to ask"))?;
    mcp.sample(format!("Summarize: {text}"), 50).await
}

/// A task's question for the client's model (sampling, before 2026-07-28)
/// is an input request too: `sampling/createMessage`, answered by a
/// `CreateMessageResult`; anything else is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_asks_the_clients_model_through_its_input_requests() {
    let runtime = Runtime::builder().tool(SummarizeTool).build().unwrap();
    let client = connect(
        runtime,
        TestClient {
            tasks: true,
            sampling: true,
            ..TestClient::default()
        },
        false,
    )
    .await;
    let task_id = start_task(&client, "summarize", json!({ "text": "a long story" })).await;
    let asked = questions(&client, &task_id, 1).await;
    let (key, question) = asked.iter().next().unwrap();
    assert_eq!(question["method"], "sampling/createMessage", "{question}");
    assert_eq!(
        question["params"]["messages"][0]["content"]["text"],
        "Summarize: a long story"
    );
    assert_eq!(question["params"]["maxTokens"], 50);
    let not_sampled = accepted(json!({ "text": "short" }));
    let (code, message) = refusal(answer_task(&client, &task_id, key, not_sampled).await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("sampling result"), "{message}");
    let sampled = json!({
        "role": "assistant",
        "content": { "type": "text", "text": "short" },
        "model": "test-model"
    });
    answer_task(&client, &task_id, key, sampled).await.unwrap();
    let result = completed(&client, &task_id).await;
    assert_eq!(result["content"][0]["text"], "short", "{result:?}");
}

/// Lists the client's roots, in the background
#[tool(background)]
pub async fn scan_roots(ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = ctx.mcp().ok_or_else(|| ToolError::new("nobody to ask"))?;
    let roots = mcp.roots().await?;
    Ok(roots
        .into_iter()
        .map(|root| root.uri)
        .collect::<Vec<_>>()
        .join(", "))
}

/// A task's question for the client's roots is an input request too:
/// `roots/list`, answered by a `ListRootsResult`; anything else is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_asks_the_clients_roots_through_its_input_requests() {
    let runtime = Runtime::builder().tool(ScanRootsTool).build().unwrap();
    let client = TestClient {
        tasks: true,
        roots: true,
        ..TestClient::default()
    };
    let client = connect(runtime, client, true).await;
    let task_id = start_task(&client, "scan_roots", json!({})).await;
    let asked = questions(&client, &task_id, 1).await;
    let (key, question) = asked.iter().next().unwrap();
    assert_eq!(question["method"], "roots/list", "{question}");
    let (code, message) = refusal(answer_task(&client, &task_id, key, accepted(json!({}))).await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("roots result"), "{message}");
    let listed = json!({ "roots": [{ "uri": "file:///a" }, { "uri": "file:///b", "name": "B" }] });
    answer_task(&client, &task_id, key, listed).await.unwrap();
    let result = completed(&client, &task_id).await;
    assert_eq!(
        result["content"][0]["text"], "file:///a, file:///b",
        "{result:?}"
    );
}

/// Purges the cache, in the background, once approved
#[tool(background, require_approval)]
pub async fn purge() -> &'static str {
    "purged"
}

/// A deferred background call that needs approval is asked about first
/// (an `input_required` result: no task yet); once approved, the client of
/// the tasks extension gets a task handle rather than a wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_background_call_is_a_task_for_a_tasks_client() {
    use rmcp::model::TaskPayload;
    let runtime = Runtime::builder().tool(PurgeTool).build().unwrap();
    let client = connect(runtime, task_client(), true).await;
    let response = client
        .call_tool_once(CallToolRequestParams::new("purge"))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(asked) = response else {
        panic!("asked for approval first: {response:?}")
    };
    let retry = CallToolRequestParams::new("purge")
        .with_request_state(asked.request_state.expect("a request state"))
        .with_input_responses(
            [("approval".to_owned(), accepted(json!({ "approved": true })))].into(),
        );
    let response = client.call_tool_once(retry).await.unwrap();
    let CallToolResponse::Task(created) = response else {
        panic!("a task handle once approved: {response:?}")
    };
    let done = settled(&client, &created.task.task_id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("a completed task: {done:?}")
    };
    assert_eq!(result["content"][0]["text"], "purged", "{result:?}");
}

/// SEP-2663 removed `tasks/result` and `tasks/list`: its clients get
/// method not found (both protocol eras).
#[tokio::test]
async fn a_client_of_the_tasks_extension_gets_no_tasks_result_or_list() {
    for modern in [false, true] {
        let client = connect(runtime(), task_client(), modern).await;
        for method in ["tasks/result", "tasks/list"] {
            let request = rmcp::model::CustomRequest::new(method, Some(json!({ "taskId": "x" })));
            let refused = client
                .send_request(ClientRequest::CustomRequest(request))
                .await;
            let (code, _) = refusal(refused);
            assert_eq!(code, -32601, "{method}, modern: {modern}");
        }
    }
}

/// A task id the client made up quotes back bounded, however long it is
/// (100 KiB here; the message stays under 1 KB and gives the length).
#[tokio::test]
async fn an_unknown_task_id_is_quoted_as_a_bounded_excerpt() {
    use rmcp::model::GetTaskParams;
    let runtime = Runtime::builder().tool(FailingJobTool).build().unwrap();
    let client = connect(runtime, task_client(), true).await;
    let huge = "t".repeat(100 * 1024);
    let (code, message) = refusal(client.get_task(GetTaskParams::new(huge.as_str())).await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.len() < 1_000, "{} bytes", message.len());
    assert!(message.contains("102400 bytes in all"), "{message}");
}
