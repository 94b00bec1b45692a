//! One `tools/call`, as a client of its protocol expects it served: the
//! tool looked up, its call (a new one, or the retry of an
//! `input_required` result) set up with what the client can take
//! (elicitation, sampling, logging, tasks), then run and settled by
//! [`Call`].

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use tool_runtime::{CallOutcome, ToolCall};

use super::call::{Call, Elicit, PeerElicitor};
use super::context::McpContext;
use super::logging::SessionLog;
use super::shared::Shared;
use super::task_input::TaskElicitor;
use super::tasks;

/// One `tools/call`, served for `tasks`: a deferred background tool's
/// call is a task for a client of either task protocol (the response's
/// handle is SEP-2663's, which the 2025-11-25 path reshapes). `declared_2025`:
/// the client negotiated 2025-11-25 and declared `capabilities.tasks`.
pub(crate) async fn call(
    shared: &Shared,
    session: &Arc<SessionLog>,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
    tasks: TaskMode,
    declared_2025: bool,
) -> Result<CallToolResponse, ErrorData> {
    let name = request.name.as_ref();
    let Some(served) = shared.served(name) else {
        let message = shared
            .runtime
            .tools()
            .unknown_tool(name)
            .message()
            .to_owned();
        return Err(ErrorData::invalid_params(message, None));
    };
    let tool = &served.tool;
    let client_tasks = tasks != TaskMode::None;
    let background = tool.definition().background.as_ref().filter(|b| b.enabled);
    // A task at once (deferred), or once its client answered a question
    // on the way (foreground: waited for until then).
    let taskable = client_tasks && background.is_some();
    let as_task =
        taskable && background.is_some_and(|b| b.disposition == tool_core::Disposition::Deferred);
    let call_id = match &request.request_state {
        None => tasks::new_call_id(taskable),
        // The retry of an `input_required` result: the state names the
        // pending call, signed by a server with this key.
        Some(state) => shared.states.verify(name, state).ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "requestState {state:?} does not name a call of tool {name:?} this server asked about: it was never issued, is for another tool, or expired"
                ),
                None,
            )
        })?,
    };
    let call = Call {
        runtime: shared.runtime.clone(),
        served: Arc::clone(served),
        call_id,
        ct: context.ct.clone(),
        peer: context.peer.clone(),
        progress: context.meta.get_progress_token(),
        // Logging is not part of the 2026-07-28 protocol (SEP-2577).
        log: (!modern(&context)).then(|| Arc::clone(session)),
        wraps_output: served.wraps_output_for(modern(&context)),
        elicit: elicit_mode(shared, &context),
        states: shared.states.clone(),
        tasks: client_tasks,
    };
    if request.request_state.is_some() {
        // The responses carry the user's answer.
        tracing::debug!(call_id = %call.call_id, "MCP input responses for a pending call");
        return call
            .answered(request.input_responses.unwrap_or_default())
            .await;
    }
    let request_context = shared
        .request_context
        .as_ref()
        .map(|from_request| from_request(&context))
        .unwrap_or_default();
    let input = request.arguments.map_or(Value::Null, Value::Object);
    let mut tool_call =
        ToolCall::new(call.call_id.clone(), name, input).with_request_context(request_context);
    // Sampling is not part of the 2026-07-28 protocol.
    let sampling = !modern(&context)
        && context
            .client_capabilities()
            .is_some_and(|caps| caps.sampling.is_some());
    if as_task && tasks == TaskMode::Extension && (call.elicit != Elicit::Unsupported || sampling) {
        // A task's questions wait for `tasks/update` (no request is open).
        let asker = TaskElicitor {
            inputs: shared.inputs.clone(),
            task_id: call.call_id.clone(),
            forms: call.elicit != Elicit::Unsupported,
            sampling,
        };
        tool_call = tool_call.with_extension(McpContext::new(asker));
    } else if call.elicit == Elicit::Request || sampling {
        // The tool itself may ask this client's user, or its model (`ToolContext::mcp`).
        let asker = PeerElicitor::new(&call, sampling);
        tool_call = tool_call.with_extension(McpContext::new(asker));
    }
    let runtime = shared.runtime.clone();
    let task_required = tool
        .definition()
        .mcp
        .as_ref()
        .is_some_and(|mcp| mcp.task_required);
    if task_required && !client_tasks && declared_2025 {
        // 2025-11-25: a tool whose taskSupport is "required" called
        // without a `task` param is method not found.
        return Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!(
                "tool {:?} runs only as a task: call it with a `task` param (its execution.taskSupport is \"required\")",
                tasks::quote(name)
            ),
            None,
        ));
    }
    if task_required && !client_tasks {
        // Served only as a task (SEP-2663, "Required Capabilities").
        return Err(ErrorData::missing_required_client_capability(
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build(),
        ));
    }
    if as_task {
        // A task handle at once; a pause (approval) is settled as usual.
        let outcome = runtime.call(tool_call).await;
        if let CallOutcome::BackgroundStarted { task_id } = &outcome {
            return Ok(tasks::started(&runtime, task_id));
        }
        return Ok(call.run(Box::pin(std::future::ready(outcome)), None).await);
    }
    Ok(call
        .run(Box::pin(async move { runtime.call(tool_call).await }), None)
        .await)
}

/// How this request's client can be asked for input.
fn elicit_mode(shared: &Shared, context: &RequestContext<RoleServer>) -> Elicit {
    if !shared.elicitation {
        return Elicit::Unsupported;
    }
    let form = context
        .client_capabilities()
        .and_then(|caps| caps.elicitation)
        // No mode named means form (2025-06-18).
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    if !form {
        return Elicit::Unsupported;
    }
    if modern(context) {
        Elicit::InputRequired
    } else {
        Elicit::Request
    }
}

/// Which task protocol a `tools/call` is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskMode {
    /// No tasks: the request waits for the call's outcome.
    None,
    /// The tasks extension (SEP-2663): questions wait for `tasks/update`.
    Extension,
    /// 2025-11-25's experimental tasks (SEP-1686), asked for by the
    /// request's `task` param: questions are requests to the client.
    Experimental,
}

/// Whether the request's peer speaks the 2026-07-28 protocol or newer.
pub(crate) fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}
