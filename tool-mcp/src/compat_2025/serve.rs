//! The 2025-11-25 protocol's tasks (SEP-1686, "experimental tasks"), for its
//! clients that declare `capabilities.tasks`: a `tools/call` with a `task`
//! param of a deferred background tool answers with a `CreateTaskResult`
//! (`{"task": Task}`); `tasks/get`, `tasks/result` (waits until the task
//! ends, then gives the call's result), `tasks/list` (this session's tasks)
//! and `tasks/cancel` read the same stored call as SEP-2663's `tasks/get`
//! ([`tasks::detailed`]); `notifications/tasks/status` tells the session
//! that created a task of each status change it sees.
//!
//! rmcp 3.11 models SEP-2663 only: its types drop the client's
//! `capabilities.tasks`, the `task` param and tools' `execution`, and its
//! `tasks/get` and `tasks/cancel` answer SEP-2663's shapes to SEP-2663
//! clients alone. So the transport edge keeps the client's declaration
//! where rmcp keeps it ([`inbound`]), adds the server's `capabilities.tasks`
//! to the `initialize` result ([`outbound_initialize`]), and, for a session
//! that declared tasks, renames the requests rmcp would answer in other
//! shapes ([`rename`]) to methods rmcp hands over as they came
//! (`on_custom_request`), served here ([`custom`]).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomNotification, CustomRequest, CustomResult,
    DetailedTask, ElicitRequestParams, ErrorCode, InputRequest, ProtocolVersion,
    ServerNotification, Task, TaskPayload, TaskStatus,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use super::dispatch;
use super::generation::{self, Protocol};
use super::logging::SessionLog;
use super::shared::Shared;
use super::tasks;

/// Where [`inbound`] keeps a 2025-11-25 client's `capabilities.tasks`:
/// under `capabilities.experimental`, which rmcp keeps.
const CLIENT_TASKS_KEY: &str = "tool-runtime/tasks-2025-11-25";

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

// --- the transport edge ----------------------------------------------------------

/// What [`inbound`] did to a message (or batch).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Inbound {
    /// It changed: serialize it again.
    pub(crate) changed: bool,
    /// It holds a 2025-11-25 `initialize` that declares `capabilities.tasks`:
    /// its result gets the server's ([`outbound_initialize`]).
    pub(crate) declares_tasks: bool,
}

/// Keeps what rmcp's types would drop from a client's `initialize` (or a
/// batch holding one): a 2025-11-25 `initialize`'s `capabilities.tasks`,
/// copied under `experimental`. An entry a client sent under that key
/// itself is removed: only the protocol's own field counts.
pub(crate) fn inbound(message: &mut Value) -> Inbound {
    let mut seen = Inbound::default();
    match message {
        Value::Array(batch) => batch.iter_mut().for_each(|m| inbound_one(m, &mut seen)),
        message => inbound_one(message, &mut seen),
    }
    seen
}

fn inbound_one(message: &mut Value, seen: &mut Inbound) {
    if message.get("method").and_then(Value::as_str) != Some("initialize") {
        return;
    }
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
        return;
    };
    let version = params.get("protocolVersion").and_then(Value::as_str);
    let legacy = version == Some(ProtocolVersion::V_2025_11_25.as_str());
    let Some(capabilities) = params
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let tasks = capabilities.get("tasks").filter(|t| t.is_object()).cloned();
    let experimental = capabilities
        .entry("experimental")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(experimental) = experimental.as_object_mut() else {
        return;
    };
    seen.changed |= experimental.remove(CLIENT_TASKS_KEY).is_some();
    if let (true, Some(tasks)) = (legacy, tasks) {
        experimental.insert(CLIENT_TASKS_KEY.to_owned(), tasks);
        seen.changed = true;
        seen.declares_tasks = true;
    }
}

/// The method a request of a session that declared 2025-11-25 tasks is
/// renamed to: one rmcp hands to `on_custom_request` as it came.
const RENAMED: &str = "tool-runtime/2025-11-25/";

/// Renames, in a message (or batch) of a session that declared 2025-11-25
/// tasks, the requests rmcp would answer in other shapes: `tools/list`
/// (tools get `execution`), a `tools/call` with a `task` param, `tasks/get`
/// and `tasks/cancel`. Whether any was.
pub(crate) fn rename(message: &mut Value) -> bool {
    match message {
        Value::Array(batch) => batch
            .iter_mut()
            .fold(false, |renamed, m| rename_one(m) | renamed),
        message => rename_one(message),
    }
}

fn rename_one(message: &mut Value) -> bool {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return false;
    };
    let renamed = match method {
        "tools/list" | "tasks/get" | "tasks/cancel" => true,
        "tools/call" => message
            .get("params")
            .and_then(|p| p.get("task"))
            .is_some_and(Value::is_object),
        _ => false,
    };
    if renamed {
        message["method"] = Value::String(format!("{RENAMED}{method}"));
    }
    renamed
}

/// Adds the server's `capabilities.tasks` to a 2025-11-25 `initialize`
/// result (for a client that declared its own); whether it changed.
pub(crate) fn outbound_initialize(message: &mut Value) -> bool {
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return false;
    };
    if result.get("protocolVersion").and_then(Value::as_str)
        != Some(ProtocolVersion::V_2025_11_25.as_str())
    {
        return false;
    }
    let Some(capabilities) = result
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    capabilities.insert(
        "tasks".to_owned(),
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
    );
    true
}

/// Longest line the stdio edge reads as a message to look into (longer
/// ones pass unchanged).
const MAX_LINE: usize = 4 * 1024 * 1024;

/// Reads the next line into `line` (cleared first); false at the end of
/// the input or on a read error.
async fn next_line<R>(reader: &mut R, line: &mut Vec<u8>) -> bool
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    use tokio::io::AsyncBufReadExt as _;
    line.clear();
    matches!(reader.read_until(b'\n', line).await, Ok(read) if read > 0)
}

/// The edge for newline-delimited JSON-RPC (stdio's framing) between the
/// client's `reader` / `writer` and the server's end of `server`: what
/// [`inbound`], [`rename`] and [`outbound_initialize`] do over HTTP, for
/// the one session of the connection. Runs until both directions close.
pub(crate) async fn line_edge<R, W>(reader: R, writer: W, server: tokio::io::DuplexStream)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use tokio::io::AsyncWriteExt as _;
    let (from_server, mut to_server) = tokio::io::split(server);
    // The id of the `initialize` that declared tasks, until its result passed.
    let initialize: Arc<Mutex<Option<Value>>> = Arc::default();
    let declared = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (asked, told) = (Arc::clone(&initialize), Arc::clone(&declared));
    let inward = async move {
        let mut reader = tokio::io::BufReader::new(reader);
        let mut line = Vec::new();
        // Whether the session's `initialize` passed: a session has one, and
        // the lines after it are not searched for another.
        let mut initialized = false;
        while next_line(&mut reader, &mut line).await {
            // Only an `initialize` or a message of a session that declared
            // tasks can need a rewrite: any other line passes unparsed (the
            // method's name, unescaped as every client writes it, tells).
            let declared_tasks = told.load(std::sync::atomic::Ordering::SeqCst);
            let may_initialize = || {
                !initialized
                    && std::str::from_utf8(&line).is_ok_and(|text| text.contains("\"initialize\""))
            };
            let parsed = (line.len() <= MAX_LINE && (declared_tasks || may_initialize()))
                .then(|| serde_json::from_slice::<Value>(&line).ok())
                .flatten();
            let rewritten = parsed.and_then(|mut message| {
                if message.get("method").and_then(Value::as_str) == Some("initialize") {
                    initialized = true;
                }
                let seen = inbound(&mut message);
                if seen.declares_tasks {
                    *asked.lock().unwrap_or_else(|e| e.into_inner()) = message.get("id").cloned();
                    told.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                let renamed = told.load(std::sync::atomic::Ordering::SeqCst)
                    && !seen.declares_tasks
                    && rename(&mut message);
                (seen.changed || renamed).then(|| format!("{message}\n").into_bytes())
            });
            let out = rewritten.as_deref().unwrap_or(&line);
            if to_server.write_all(out).await.is_err() {
                break;
            }
        }
        // The client closed its end: so does the server's.
        let _ = to_server.shutdown().await;
    };
    let outward = async move {
        let mut reader = tokio::io::BufReader::new(from_server);
        let mut writer = writer;
        let mut line = Vec::new();
        while next_line(&mut reader, &mut line).await {
            let mut rewritten = None;
            let pending = initialize.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(id) = pending
                && let Ok(mut message) = serde_json::from_slice::<Value>(&line)
                && message.get("id") == Some(&id)
            {
                *initialize.lock().unwrap_or_else(|e| e.into_inner()) = None;
                if outbound_initialize(&mut message) {
                    rewritten = Some(format!("{message}\n").into_bytes());
                }
            }
            let out = rewritten.as_deref().unwrap_or(&line);
            if writer.write_all(out).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    };
    tokio::join!(inward, outward);
}

// --- serving -------------------------------------------------------------------------

/// Whether the request's peer negotiated 2025-11-25 and declared
/// `capabilities.tasks`.
pub(crate) fn peer_declared(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version() == Some(ProtocolVersion::V_2025_11_25)
        && context.peer.peer_info().is_some_and(|info| {
            info.capabilities
                .experimental
                .as_ref()
                .is_some_and(|e| e.contains_key(CLIENT_TASKS_KEY))
        })
}

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
/// requests ([`rename`]d ones, `tasks/result`, `tasks/list`) from a client
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
                    tasks::quote(&params.name)
                ),
                None,
            )
        } else {
            let unknown = shared.runtime.tools().unknown_tool(&params.name);
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
                        ErrorData::internal_error(format!("task {task_id:?} failed"), None)
                    }),
                );
            }
            TaskPayload::Cancelled => {
                return Err(ErrorData::invalid_params(
                    format!("task {task_id:?} was cancelled: it has no result"),
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
                "task {task_id:?} cannot be cancelled: it is {} already",
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
                    tasks::quote(cursor)
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
    fn the_edge_keeps_the_declaration_and_renames_what_rmcp_would_answer_otherwise() {
        let mut initialize = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": { "tasks": { "list": {} } },
                "clientInfo": { "name": "c", "version": "1" } }
        });
        let seen = inbound(&mut initialize);
        assert!(seen.changed && seen.declares_tasks);
        assert_eq!(
            initialize["params"]["capabilities"]["experimental"][CLIENT_TASKS_KEY],
            json!({ "list": {} })
        );
        // Another version's initialize, or a client's own entry, declares nothing.
        let mut older = json!({ "method": "initialize", "params": { "protocolVersion": "2025-06-18",
            "capabilities": { "tasks": {}, "experimental": { CLIENT_TASKS_KEY: {} } } } });
        let seen = inbound(&mut older);
        assert!(seen.changed && !seen.declares_tasks);
        assert_eq!(older["params"]["capabilities"]["experimental"], json!({}));
        let mut batch = json!([
            { "method": "tools/call", "params": { "name": "t", "task": { "ttl": 5 } } },
            { "method": "tools/call", "params": { "name": "t" } },
            { "method": "tasks/get", "params": { "taskId": "x" } },
            { "method": "tasks/result", "params": { "taskId": "x" } },
            { "method": "tools/list" },
        ]);
        assert!(!inbound(&mut batch).changed);
        assert!(rename(&mut batch));
        let methods: Vec<&str> = (0..5)
            .map(|i| batch[i]["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            methods,
            [
                "tool-runtime/2025-11-25/tools/call",
                "tools/call",
                "tool-runtime/2025-11-25/tasks/get",
                "tasks/result",
                "tool-runtime/2025-11-25/tools/list"
            ]
        );
        let mut plain = json!({ "method": "tools/call", "params": { "name": "t" } });
        assert!(!rename(&mut plain));

        let mut result =
            json!({ "id": 1, "result": { "protocolVersion": "2025-11-25", "capabilities": {} } });
        assert!(outbound_initialize(&mut result));
        assert_eq!(
            result["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
            json!({})
        );
        let mut newer =
            json!({ "id": 1, "result": { "protocolVersion": "2026-07-28", "capabilities": {} } });
        assert!(!outbound_initialize(&mut newer));
    }

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
