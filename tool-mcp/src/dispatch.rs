//! `tools/call`, dispatched on the request's [`Generation`]: one handler
//! per generation sets the call up as its clients expect (how the tool may
//! ask them, whether the call is a task), then [`Call`] runs and settles
//! it. The retry of an `input_required` result is served alike in every
//! generation.

use std::collections::BTreeMap;
use std::sync::Arc;
use tool_core::Excerpt;

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use tool_core::{BackgroundConfig, Disposition};
use tool_runtime::{CallOutcome, ToolCall};

use crate::call::{Call, PeerElicitor};
use crate::context::McpContext;
use crate::convert::ServedTool;
use crate::generation::{Elicit, Generation, Protocol};
use crate::input_rounds::Round;
use crate::logging::SessionLog;
use crate::shared::Shared;
use crate::task_input::TaskElicitor;
use crate::tasks;

/// Serves one `tools/call` under `protocol`.
pub(crate) async fn call(
    shared: &Shared,
    session: &Arc<SessionLog>,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
    protocol: Protocol,
) -> Result<CallToolResponse, ErrorData> {
    let name = request.name.as_ref();
    let Some(served) = shared.served(name) else {
        let unknown = shared.unknown_tool(name);
        return Err(ErrorData::invalid_params(
            unknown.message().to_owned(),
            None,
        ));
    };
    let mut this = ToolsCall {
        shared,
        session,
        name,
        served,
        context,
        protocol,
        given: BTreeMap::new(),
    };
    // Answers to a running tool's questions (2026-07-28): those of the
    // earlier rounds, carried by the state, before this retry's.
    if let Some(state) = &request.request_state {
        if let Some(call_id) = shared.states.verify(name, state) {
            let responses = request.input_responses.unwrap_or_default();
            return this.answered(call_id, responses).await;
        }
        this.given = shared.states.verify_answers(name, state).ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "requestState {:?} does not name a call of tool {:?} this server asked about: it was never issued, is for another tool, or expired",
                    Excerpt::of(state),
                    Excerpt::of(name)
                ),
                None,
            )
        })?;
    }
    if protocol.modern {
        for (key, answer) in request.input_responses.unwrap_or_default() {
            this.given.entry(key).or_insert(answer);
        }
    }
    let input = request.arguments.map_or(Value::Null, Value::Object);
    match protocol.generation {
        Generation::Handshake { declared_tasks } => this.handshake(input, declared_tasks).await,
        Generation::Stateless2026 => this.stateless_2026(input).await,
        Generation::Sep2663 => this.sep2663(input).await,
        Generation::Tasks2025 => Ok(this.tasks_2025(input).await),
    }
}

/// One `tools/call` request whose tool is served here.
struct ToolsCall<'a> {
    shared: &'a Shared,
    session: &'a Arc<SessionLog>,
    name: &'a str,
    served: &'a Arc<ServedTool>,
    context: RequestContext<RoleServer>,
    protocol: Protocol,
    /// The answers a running tool's questions got, by key (2026-07-28).
    given: BTreeMap<String, Value>,
}

impl ToolsCall<'_> {
    /// [`Generation::Handshake`]: the request waits; the tool may ask the
    /// client's user, or its model, with requests on the session.
    async fn handshake(
        &self,
        input: Value,
        declared_tasks: bool,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = self.call(tasks::new_call_id(false));
        let tool_call = self.peer_asks(self.tool_call(&call, input), &call);
        if self.task_required() && declared_tasks {
            // 2025-11-25: a tool whose taskSupport is "required" called
            // without a `task` param is method not found.
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "tool {:?} runs only as a task: call it with a `task` param (its execution.taskSupport is \"required\")",
                    Excerpt::of(self.name)
                ),
                None,
            ));
        }
        if self.task_required() {
            return Err(tasks_extension_required());
        }
        Ok(waited(&call, tool_call).await)
    }

    /// [`Generation::Stateless2026`]: the request waits; its client takes
    /// no requests, so a pause, or a question of the tool's, becomes an
    /// `input_required` result.
    async fn stateless_2026(&self, input: Value) -> Result<CallToolResponse, ErrorData> {
        let call = self.call(tasks::new_call_id(false));
        let tool_call = self.tool_call(&call, input);
        if self.task_required() {
            return Err(tasks_extension_required());
        }
        self.waited_in_rounds(&call, tool_call).await
    }

    /// Runs `tool_call` and waits for its outcome; on 2026-07-28 the tool
    /// may ask its client, each question ending the request with an
    /// `input_required` result, its retry running the tool again with the
    /// answers (`input_rounds.rs`); before, with requests on the session.
    async fn waited_in_rounds(
        &self,
        call: &Call,
        tool_call: ToolCall,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.protocol.modern {
            return Ok(waited(call, self.peer_asks(tool_call, call)).await);
        }
        let round = Round::new(
            call.protocol_version.clone(),
            self.given.clone(),
            self.protocol.asks,
        );
        let tool_call = tool_call.with_extension(McpContext::new(round.elicitor()));
        let runtime = call.runtime.clone();
        call.run_round(
            Box::pin(async move { runtime.call(tool_call).await }),
            &round,
        )
        .await
    }

    /// [`Generation::Sep2663`]: a deferred background tool's call is a
    /// task, whose questions wait for `tasks/update`; any other call is
    /// waited for (a background one becomes a task once its client
    /// answered a question on the way).
    async fn sep2663(&self, input: Value) -> Result<CallToolResponse, ErrorData> {
        let background = self.background();
        let call = self.call(tasks::new_call_id(background.is_some()));
        let tool_call = self.tool_call(&call, input);
        let as_task = deferred(background);
        let roots = self.protocol.asks.roots;
        if as_task && (call.elicit != Elicit::Unsupported || self.protocol.sampling || roots) {
            // A task's questions wait for `tasks/update` (no request is open).
            let asker = TaskElicitor {
                inputs: self.shared.inputs.clone(),
                task_id: call.call_id.clone(),
                forms: call.elicit != Elicit::Unsupported,
                sampling: self.protocol.sampling,
                roots,
                protocol: call.protocol_version.clone(),
            };
            return Ok(started(&call, tool_call.with_extension(McpContext::new(asker))).await);
        }
        if as_task {
            Ok(started(&call, self.peer_asks(tool_call, &call)).await)
        } else {
            self.waited_in_rounds(&call, tool_call).await
        }
    }

    /// [`Generation::Tasks2025`]: a deferred background tool's call is a
    /// task; the tool asks with requests on the session, as in
    /// [`Generation::Handshake`].
    async fn tasks_2025(&self, input: Value) -> CallToolResponse {
        let background = self.background();
        let call = self.call(tasks::new_call_id(background.is_some()));
        let tool_call = self.peer_asks(self.tool_call(&call, input), &call);
        if deferred(background) {
            started(&call, tool_call).await
        } else {
            waited(&call, tool_call).await
        }
    }

    /// The retry of an `input_required` result about the pending call
    /// `call_id` (its state signed by a server with this key): `responses`
    /// carry the user's answer.
    async fn answered(
        &self,
        call_id: String,
        responses: InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = self.call(call_id);
        tracing::debug!(call_id = %call.call_id, "MCP input responses for a pending call");
        call.answered(responses).await
    }

    /// The call `call_id` of this request, as its protocol has it settled.
    fn call(&self, call_id: String) -> Call {
        let modern = self.protocol.modern;
        Call {
            runtime: self.shared.runtime.clone(),
            served: Arc::clone(self.served),
            call_id,
            ct: self.context.ct.clone(),
            peer: self.context.peer.clone(),
            progress: self.context.meta.get_progress_token(),
            // Logging is not part of the 2026-07-28 protocol (SEP-2577).
            log: (!modern).then(|| Arc::clone(self.session)),
            wraps_output: self.served.wraps_output_for(modern),
            elicit: self.protocol.elicit,
            states: self.shared.states.clone(),
            tasks: self.protocol.tasks(),
            protocol_version: self
                .context
                .protocol_version()
                .map_or_else(|| "unknown".to_owned(), |v| v.as_str().to_owned()),
        }
    }

    /// The runtime's call for `call`, with the request context the
    /// application builds from this request.
    fn tool_call(&self, call: &Call, input: Value) -> ToolCall {
        let request_context = self
            .shared
            .request_context
            .as_ref()
            .map(|from_request| from_request(&self.context))
            .unwrap_or_default();
        ToolCall::new(call.call_id.clone(), self.name, input).with_request_context(request_context)
    }

    /// `tool_call`, letting the tool ask this client's user, its model or
    /// its roots (`ToolContext::mcp`), with requests on the session, as far
    /// as the client takes them.
    fn peer_asks(&self, tool_call: ToolCall, call: &Call) -> ToolCall {
        let (sampling, roots) = (self.protocol.sampling, self.protocol.roots);
        if call.elicit == Elicit::Request || sampling || roots {
            tool_call.with_extension(McpContext::new(PeerElicitor::new(call, sampling, roots)))
        } else {
            tool_call
        }
    }

    /// The tool runs in the background (a call of it may be a task).
    fn background(&self) -> Option<&BackgroundConfig> {
        let definition = self.served.tool.definition();
        definition.background.as_ref().filter(|b| b.enabled)
    }

    /// The tool is served only as a task (`mcp(task_required)`).
    fn task_required(&self) -> bool {
        let definition = self.served.tool.definition();
        definition.mcp.as_ref().is_some_and(|mcp| mcp.task_required)
    }
}

/// A background tool that starts deferred: its call is a task at once.
fn deferred(background: Option<&BackgroundConfig>) -> bool {
    background.is_some_and(|b| b.disposition == Disposition::Deferred)
}

/// The refusal of a task-only tool to a client without a task protocol
/// (SEP-2663, "Required Capabilities").
fn tasks_extension_required() -> ErrorData {
    ErrorData::missing_required_client_capability(
        rmcp::model::ClientCapabilities::builder()
            .enable_tasks()
            .build(),
    )
}

/// Runs `tool_call` and waits for its outcome, settled as `call`'s.
async fn waited(call: &Call, tool_call: ToolCall) -> CallToolResponse {
    let runtime = call.runtime.clone();
    call.run(Box::pin(async move { runtime.call(tool_call).await }), None)
        .await
}

/// Runs `tool_call` as a task: its handle once it started; a pause on the
/// way (an approval) is settled as usual.
async fn started(call: &Call, tool_call: ToolCall) -> CallToolResponse {
    let outcome = call.runtime.call(tool_call).await;
    if let CallOutcome::BackgroundStarted { task_id } = &outcome {
        return tasks::started(&call.runtime, task_id);
    }
    call.run(Box::pin(std::future::ready(outcome)), None).await
}
