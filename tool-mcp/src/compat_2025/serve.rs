//! Serving the 2025-11-25 task requests rmcp hands over as they came
//! (`on_custom_request`): a `tools/call` with a `task` param of a deferred
//! background tool answers with a `CreateTaskResult` (`{"task": Task}`);
//! `tasks/get`, `tasks/result` (waits until the task ends, then gives the
//! call's result), `tasks/list` (this session's tasks) and `tasks/cancel`
//! read the same stored call as SEP-2663's `tasks/get`
//! ([`tasks::detailed`]), answered in 2025-11-25's shapes;
//! `notifications/tasks/status` tells the session that created a task of
//! each status change it sees.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tool_core::Excerpt;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomNotification, CustomRequest, CustomResult,
    DetailedTask, ElicitRequestParams, ErrorCode, InputRequest, ServerNotification, Task,
    TaskPayload, TaskStatus,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use super::wire::{RENAMED, peer_declared};
use crate::dispatch;
use crate::generation::{self, Protocol};
use crate::logging::SessionLog;
use crate::shared::Shared;
use crate::tasks;

/// The `_meta` key tying a message to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Tasks per `tasks/list` page.
const PAGE: usize = 50;

/// Task ids a session remembers for `tasks/list` (the oldest go first).
const MAX_SESSION_TASKS: usize = 10_000;

/// How long `tasks/cancel` waits for the task to wind down before it says
/// what became of it.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// How often `tasks/result`, and a task's watcher, read again a task the
/// runtime cannot tell them about.
const RESULT_POLL: Duration = Duration::from_millis(500);

/// The task ids a session created, for `tasks/list`; their states are read
/// from the store. Only this session lists them (a session lives on one
/// instance, and ends with its connection).
#[derive(Debug, Default)]
pub(crate) struct SessionTasks(Mutex<VecDeque<String>>);

impl SessionTasks {
    fn add(&self, task_id: &str) {
        let mut ids = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if ids.len() >= MAX_SESSION_TASKS {
            ids.pop_front();
        }
        ids.push_back(task_id.to_owned());
    }

    /// The ids from `start` on, up to a page, and where the next page starts.
    fn page(&self, start: usize) -> (Vec<String>, Option<usize>) {
        let ids = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let page: Vec<String> = ids.iter().skip(start).take(PAGE).cloned().collect();
        let next = start + page.len();
        (page, (next < ids.len()).then_some(next))
    }
}

/// A request rmcp does not know (`on_custom_request`): 2025-11-25's task
/// requests ([renamed](super::wire::rename) ones, `tasks/result`, `tasks/list`) from a client
/// that declared `capabilities.tasks`, in that protocol's shapes; for any
/// other client, or method, method not found (as SEP-2663 wants of
/// `tasks/result` and `tasks/list`).
pub(crate) async fn custom(
    shared: &Arc<Shared>,
    session: &Arc<SessionLog>,
    session_tasks: &SessionTasks,
    request: CustomRequest,
    context: RequestContext<RoleServer>,
) -> Result<CustomResult, ErrorData> {
    let CustomRequest { method, params, .. } = request;
    let not_found = || ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method.clone(), None);
    if !peer_declared(&context) {
        return Err(not_found());
    }
    let task_id = || task_id_param(&method, params.as_ref());
    let answer = match method.strip_prefix(RENAMED).unwrap_or(&method) {
        "tools/call" if method.starts_with(RENAMED) => {
            call(shared, session, session_tasks, params, context).await
        }
        "tools/list" if method.starts_with(RENAMED) => list_tools(shared, &context),
        "tasks/get" if method.starts_with(RENAMED) => get(shared, &task_id()?).await.map(task_json),
        "tasks/cancel" if method.starts_with(RENAMED) => cancel(shared, &task_id()?).await,
        "tasks/result" => result(shared, &task_id()?, &context).await,
        "tasks/list" => list(shared, session_tasks, params.as_ref()).await,
        _ => Err(not_found()),
    };
    answer.map(CustomResult::new)
}

/// Whether the tool `name` is served as a 2025-11-25 task: `Some(true)`
/// when only as one (`mcp(task_required)`), `Some(false)` when the client
/// may ask for one (a deferred background tool), `None` when it is not.
fn task_support(shared: &Shared, name: &str) -> Option<bool> {
    let definition = shared.runtime.tool(name)?.definition();
    let background = definition.background.as_ref().filter(|b| b.enabled)?;
    if background.disposition != tool_core::Disposition::Deferred {
        return None;
    }
    Some(definition.mcp.as_ref().is_some_and(|mcp| mcp.task_required))
}

/// `tools/list`, each task tool with its `execution.taskSupport`.
fn list_tools(shared: &Shared, context: &RequestContext<RoleServer>) -> Result<Value, ErrorData> {
    let listed = shared.list_tools(generation::modern(context));
    let mut value = serde_json::to_value(&listed)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    if let Some(listed) = value.as_object_mut() {
        // Not a field of 2025-11-25's results (rmcp drops it for older peers).
        listed.remove("resultType");
    }
    let tools = value.get_mut("tools").and_then(Value::as_array_mut);
    for tool in tools.into_iter().flatten() {
        let support = tool
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| task_support(shared, name));
        if let (Some(required), Some(tool)) = (support, tool.as_object_mut()) {
            let support = if required { "required" } else { "optional" };
            tool.insert("execution".to_owned(), json!({ "taskSupport": support }));
        }
    }
    Ok(value)
}

/// A `tools/call` with a `task` param: a task, for a tool served as one.
async fn call(
    shared: &Arc<Shared>,
    session: &Arc<SessionLog>,
    session_tasks: &SessionTasks,
    params: Option<Value>,
    context: RequestContext<RoleServer>,
) -> Result<Value, ErrorData> {
    let params: CallToolRequestParams = serde_json::from_value(params.unwrap_or_default())
        .map_err(|e| ErrorData::invalid_params(format!("tools/call params: {e}"), None))?;
    if task_support(shared, &params.name).is_none() {
        return Err(if shared.served(&params.name).is_some() {
            ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "tool {:?} does not run as a task: call it without a `task` param (it declares no execution.taskSupport)",
                    Excerpt::of(&params.name)
                ),
                None,
            )
        } else {
            let unknown = shared.unknown_tool(&params.name);
            ErrorData::invalid_params(unknown.message().to_owned(), None)
        });
    }
    let peer = context.peer.clone();
    let protocol = Protocol::of_task_2025(&context, shared.elicitation);
    let response = dispatch::call(shared, session, params, context, protocol).await?;
    match response {
        CallToolResponse::Task(created) => {
            let task_id = created.task.task_id.clone();
            session_tasks.add(&task_id);
            watch(Arc::clone(shared), peer, task_id);
            Ok(json!({ "task": legacy_task(&created.task) }))
        }
        // The call ended before it became a task (an approval declined...).
        CallToolResponse::Complete(result) => {
            let mut result = serde_json::to_value(result)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            if let Some(result) = result.as_object_mut() {
                // SEP-2322's, not a field of 2025-11-25 results.
                result.remove("resultType");
            }
            Ok(result)
        }
        // Asked only of 2026-07-28 peers.
        _ => Err(ErrorData::internal_error(
            "an input_required result for a 2025-11-25 client",
            None,
        )),
    }
}

/// The task `task_id` from the store (results as for 2025-11-25 peers).
async fn get(shared: &Shared, task_id: &str) -> Result<DetailedTask, ErrorData> {
    tasks::detailed(shared, task_id, false).await
}

/// A task in 2025-11-25's shape: `ttl` and `pollInterval` (SEP-2663 has
/// `ttlMs` and `pollIntervalMs`).
fn legacy_task(task: &Task) -> Value {
    let mut value = json!({
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttl": task.ttl_ms,
    });
    if let Some(poll) = task.poll_interval_ms {
        value["pollInterval"] = json!(poll);
    }
    if let Some(message) = &task.status_message {
        value["statusMessage"] = json!(message);
    }
    value
}

fn task_json(task: DetailedTask) -> Value {
    legacy_task(&task.task)
}

/// `tasks/result`: once the task ended, what the call answered (its
/// `CallToolResult`, tied to the task by `_meta`), or the error it failed
/// with. Waits until then, or until the request is cancelled. While the
/// task is `input_required`, its questions go to the client as requests of
/// their own ([`ask`]).
async fn result(
    shared: &Shared,
    task_id: &str,
    context: &RequestContext<RoleServer>,
) -> Result<Value, ErrorData> {
    let mut asked = HashSet::new();
    let mut last = None;
    loop {
        let task = get(shared, task_id).await?;
        let status = task.status();
        match task.payload {
            TaskPayload::Completed { mut result } => {
                // SEP-2322's, not a field of 2025-11-25 results.
                result.remove("resultType");
                let meta = result
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(RELATED_TASK.to_owned(), json!({ "taskId": task_id }));
                }
                return Ok(Value::Object(result));
            }
            TaskPayload::Failed { error } => {
                return Err(
                    serde_json::from_value(Value::Object(error)).unwrap_or_else(|_| {
                        ErrorData::internal_error(
                            format!("task {:?} failed", Excerpt::of(task_id)),
                            None,
                        )
                    }),
                );
            }
            TaskPayload::Cancelled => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "task {:?} was cancelled: it has no result",
                        Excerpt::of(task_id)
                    ),
                    None,
                ));
            }
            TaskPayload::InputRequired { input_requests }
                if ask(shared, task_id, &input_requests, &mut asked, context).await? =>
            {
                continue;
            }
            _ => {}
        }
        // Watched where it runs (until it settles or pauses); read from the
        // store otherwise, or again when nothing changed since last time.
        let watched = status == TaskStatus::Working
            && last != Some(status)
            && tokio::select! {
                waited = shared.runtime.wait(task_id) => waited.is_ok(),
                () = context.ct.cancelled() => return Err(cancelled()),
            };
        if !watched {
            tokio::select! {
                () = tokio::time::sleep(RESULT_POLL) => {}
                () = context.ct.cancelled() => return Err(cancelled()),
            }
        }
        last = Some(status);
    }
}

/// 2025-11-25's input for a task: each of its questions (elicitation forms;
/// a client that declared form elicitation) is sent to the client as an
/// `elicitation/create` request tied to the task by `_meta`, once per
/// `tasks/result`; the answer goes where SEP-2663's `tasks/update` takes
/// it (a suspended task resumes). Whether any was answered. An answer
/// refused (resume data the resume schema rejects) ends `tasks/result`
/// with the reason; the question stays.
async fn ask(
    shared: &Shared,
    task_id: &str,
    requests: &rmcp::model::InputRequests,
    asked: &mut HashSet<String>,
    context: &RequestContext<RoleServer>,
) -> Result<bool, ErrorData> {
    let forms = context
        .client_capabilities()
        .and_then(|caps| caps.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    let mut answered = false;
    for (key, request) in requests {
        let InputRequest::Elicitation(request) = request else {
            continue;
        };
        if !forms || !asked.insert(key.clone()) {
            continue;
        }
        let mut params = request.params.clone();
        if let ElicitRequestParams::FormElicitationParams { meta, .. }
        | ElicitRequestParams::UrlElicitationParams { meta, .. } = &mut params
        {
            meta.get_or_insert_with(Default::default)
                .insert(RELATED_TASK.to_owned(), json!({ "taskId": task_id }));
        }
        let answer = tokio::select! {
            answer = context.peer.create_elicitation(params) => answer,
            () = context.ct.cancelled() => return Err(cancelled()),
        };
        match answer {
            Ok(answer) => {
                let answer = serde_json::to_value(answer)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let responses = rmcp::model::InputResponses::from([(key.clone(), answer)]);
                tasks::update(&shared.runtime, &shared.inputs, task_id, &responses).await?;
                answered = true;
            }
            Err(error) => {
                tracing::warn!(task_id, %error, "the client did not answer the task's question");
            }
        }
    }
    Ok(answered)
}

fn cancelled() -> ErrorData {
    ErrorData::invalid_request("the request was cancelled", None)
}

/// `tasks/cancel`: fires the task's abort signal, waits a little for it to
/// wind down, and answers the task as it then is. A task that ended
/// already is refused, as 2025-11-25 says.
async fn cancel(shared: &Shared, task_id: &str) -> Result<Value, ErrorData> {
    let before = get(shared, task_id).await?;
    if before.status().is_terminal() {
        return Err(ErrorData::invalid_params(
            format!(
                "task {:?} cannot be cancelled: it is {} already",
                Excerpt::of(task_id),
                status_name(&before.task)
            ),
            None,
        ));
    }
    tasks::cancel(&shared.runtime, task_id).await?;
    let _ = tokio::time::timeout(CANCEL_WAIT, shared.runtime.wait(task_id)).await;
    get(shared, task_id).await.map(task_json)
}

fn status_name(task: &Task) -> String {
    serde_json::to_value(task.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `tasks/list`: this session's tasks still in the store, a page at a time
/// (the cursor is where the next page starts).
async fn list(
    shared: &Shared,
    session_tasks: &SessionTasks,
    params: Option<&Value>,
) -> Result<Value, ErrorData> {
    let cursor = params.and_then(|p| p.get("cursor"));
    let start = match cursor {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => cursor.parse::<usize>().map_err(|_| {
            ErrorData::invalid_params(
                format!(
                    "cursor {:?} is not one tasks/list gave",
                    Excerpt::of(cursor)
                ),
                None,
            )
        })?,
        Some(_) => return Err(ErrorData::invalid_params("cursor must be a string", None)),
    };
    let (ids, next) = session_tasks.page(start);
    let mut listed = Vec::with_capacity(ids.len());
    for task_id in ids {
        // Forgotten by the store (its retention passed): not listed.
        if let Ok(task) = get(shared, &task_id).await {
            listed.push(task_json(task));
        }
    }
    let mut page = json!({ "tasks": listed });
    if let Some(next) = next {
        page["nextCursor"] = json!(next.to_string());
    }
    Ok(page)
}

/// The `taskId` param of a `method` request.
fn task_id_param(method: &str, params: Option<&Value>) -> Result<String, ErrorData> {
    params
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            let method = method.strip_prefix(RENAMED).unwrap_or(method);
            ErrorData::invalid_params(format!("{method} needs a string taskId"), None)
        })
}

/// Sends `notifications/tasks/status` to the session that created the task
/// each time its status changes (`input_required`, `working` again, the
/// end), while the session is connected: the runtime says when the task
/// ends where it runs here; the store, read every poll interval, says the
/// rest (and what another instance did).
fn watch(shared: Arc<Shared>, peer: Peer<RoleServer>, task_id: String) {
    tokio::spawn(async move {
        let mut last = TaskStatus::Working;
        // Whether to wait on the runtime too: not once its wait returned
        // without a change (a paused task), until the task works again.
        let mut waiting = true;
        while !peer.is_transport_closed() {
            let waited = async {
                if waiting {
                    let _ = shared.runtime.wait(&task_id).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            let woken = tokio::select! {
                () = waited => true,
                () = tokio::time::sleep(RESULT_POLL) => false,
            };
            let Ok(task) = get(&shared, &task_id).await else {
                // Forgotten by the store.
                return;
            };
            let status = task.status();
            if status == last {
                waiting &= !woken;
                continue;
            }
            last = status;
            waiting = status == TaskStatus::Working;
            let params = legacy_task(&task.task);
            let notification = CustomNotification::new("notifications/tasks/status", Some(params));
            if let Err(error) = peer
                .send_notification(ServerNotification::CustomNotification(notification))
                .await
            {
                tracing::debug!(task_id, %error, "the task's session is gone: no status notification");
                return;
            }
            if status.is_terminal() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_task_list_pages_and_stays_bounded() {
        let tasks = SessionTasks::default();
        for n in 0..(PAGE + 3) {
            tasks.add(&n.to_string());
        }
        let (first, next) = tasks.page(0);
        assert_eq!((first.len(), next), (PAGE, Some(PAGE)));
        let (rest, next) = tasks.page(PAGE);
        assert_eq!((rest.len(), next), (3, None));
        assert_eq!(tasks.page(10 * PAGE), (Vec::new(), None));
    }
}
