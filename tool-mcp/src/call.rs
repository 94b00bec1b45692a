//! One `tools/call` over MCP: run it through the runtime with the request's
//! cancellation and progress token wired in, then settle what it ended in.
//! A call that waits for approval or resume data is asked about through
//! elicitation (an `elicitation/create` request, or an `input_required`
//! result on protocol 2026-07-28), or reported as pending.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, InputRequest, InputRequiredResult, InputResponses, MetaObject,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tool_core::{ErrorKind, Tool};

use crate::context::{ElicitFuture, Elicitation, Elicitor, RootsFuture, SampleFuture};
use crate::request_state::RequestStates;
use tool_runtime::{CallOutcome, CallState};

use crate::convert::{self, ServedTool};
use crate::elicit::{self, APPROVAL_KEY, Answer, ApprovalAnswer, Form, RESUME_KEY};
use crate::generation::Elicit;
use crate::input_rounds::{Ending, Round};
use crate::logging::SessionLog;
use tool_runtime::{Notice, PendingKind, Runtime, RuntimeError};

/// How many times one request may ask the user before it reports the call
/// as pending (approval, then suspensions, then corrections).
const MAX_ROUNDS: usize = 8;

/// The `_meta` key of a result that reports a pending call:
/// `{"callId", "kind": "approval" | "suspended", "payload", "resumeSchema"}`.
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::Runtime;
/// use rmcp::model::CallToolRequestParams;
/// use rmcp::ServiceExt as _;
/// use tool_mcp::{McpServer, PENDING_META};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let delete = Tool::builder("delete").description("Deletes").require_approval(true)
///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("deleted")) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(delete).build().unwrap();
/// let (server_end, client_end) = tokio::io::duplex(64 * 1024);
/// tokio::spawn(McpServer::new(runtime.clone()).serve(server_end));
/// let client = ().serve(client_end).await.unwrap(); // no elicitation support
///
/// let result = client.call_tool(CallToolRequestParams::new("delete")).await.unwrap();
/// assert_eq!(result.is_error, Some(true));
/// let pending = &result.meta.unwrap()[PENDING_META];
/// assert_eq!(pending["kind"], "approval");
/// // The application decides.
/// let outcome = runtime.approve(pending["callId"].as_str().unwrap()).await.unwrap();
/// assert_eq!(outcome.output(), Some(&json!("deleted")));
/// # });
/// ```
pub const PENDING_META: &str = "tool-runtime/pending";

type OutcomeFuture<'a> = Pin<Box<dyn Future<Output = CallOutcome> + Send + 'a>>;

/// A suspended call, kept to ask again when its answer was rejected.
#[derive(Debug, Clone)]
pub(crate) struct Suspension {
    payload: Value,
    resume_schema: Option<Value>,
}

/// What to do after a pause.
enum Step<'a> {
    /// Run this next (approve, decline, resume) and settle its outcome.
    Next(OutcomeFuture<'a>, Option<Suspension>),
    /// Answer the request with this.
    Respond(CallToolResponse),
}

/// One `tools/call` request.
pub(crate) struct Call {
    pub(crate) runtime: Runtime,
    /// The tool called, with its MCP declaration.
    pub(crate) served: Arc<ServedTool>,
    pub(crate) call_id: String,
    pub(crate) ct: CancellationToken,
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) progress: Option<ProgressToken>,
    /// Where the call's log messages go, when the peer takes them.
    pub(crate) log: Option<Arc<SessionLog>>,
    /// Whether results wrap the output in `{"result": ...}` (every peer
    /// before 2026-07-28, for an output schema that is not an object).
    pub(crate) wraps_output: bool,
    pub(crate) elicit: Elicit,
    pub(crate) states: RequestStates,
    /// The request's client declared the tasks extension.
    pub(crate) tasks: bool,
    /// The protocol version the request speaks (for errors naming it).
    pub(crate) protocol_version: String,
}

impl Call {
    fn tool(&self) -> &Tool {
        &self.served.tool
    }

    /// Runs `first` (the runtime call) and settles it, forwarding progress.
    pub(crate) async fn run(
        &self,
        first: OutcomeFuture<'_>,
        suspension: Option<Suspension>,
    ) -> CallToolResponse {
        // Boxed, as the pauses below: an async fn's state holds every
        // future it awaits side by side, and the request's future is moved
        // whole (rmcp spawns it); a box moves as one pointer.
        self.forwarding_events(Box::pin(self.settle(first, suspension)))
            .await
    }

    /// Runs `first` (the runtime call of a tool that asks its 2026-07-28
    /// client through `round`) and settles it: an `input_required` result
    /// when the run asked questions without answers (its state carrying
    /// the answers read so far); an error for an answer of the wrong shape,
    /// or for a run that failed for want of a capability the client did
    /// not declare; otherwise as [`run`](Self::run).
    pub(crate) async fn run_round(
        &self,
        first: OutcomeFuture<'_>,
        round: &Round,
    ) -> Result<CallToolResponse, ErrorData> {
        let settled = async {
            let stop = || {
                // The run is over: its pending questions fail, and a tool
                // that goes on anyway is aborted.
                if let Err(error) = self.runtime.cancel(&self.call_id) {
                    tracing::debug!(call_id = %self.call_id, %error, "asked: the call had ended");
                }
            };
            let asking = Box::pin(round.until_asked(first, stop));
            let outcome = self.until_cancelled(asking).await;
            let failed = match &outcome {
                CallOutcome::Failed { error } => Some(error.message().to_owned()),
                _ => None,
            };
            match round.ending(failed.is_some()) {
                Ending::Settled => {
                    Ok(Box::pin(self.settle(Box::pin(std::future::ready(outcome)), None)).await)
                }
                Ending::Asked { questions, answers } => {
                    let tool_id = self.tool().id();
                    Ok(match self.states.issue_answers(tool_id, &answers) {
                        Ok(state) => InputRequiredResult::new(Some(questions), Some(state)).into(),
                        Err(why) => convert::error_result(format!(
                            "{tool_id} asked its client again, but {why}"
                        ))
                        .into(),
                    })
                }
                Ending::BadAnswer { key, why } => Err(ErrorData::invalid_params(
                    format!(
                        "inputResponses[{key:?}] of tool {:?}: {why}",
                        self.tool().id()
                    ),
                    None,
                )),
                Ending::Missing(capabilities) => {
                    let mut error = ErrorData::missing_required_client_capability(capabilities);
                    error.message = format!(
                        "tool {:?} failed for want of a client capability: {}",
                        self.tool().id(),
                        failed.unwrap_or_default()
                    )
                    .into();
                    Err(error)
                }
            }
        };
        self.forwarding_events(settled).await
    }

    /// The retry of an `input_required` result for the pending call
    /// `self.call_id`: apply the user's answer, then settle as usual.
    pub(crate) async fn answered(
        &self,
        responses: InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let unknown = || {
            ErrorData::invalid_params(
                format!(
                    "requestState {:?} does not name a call of tool {:?} this server asked about: it was already answered, or never asked",
                    self.call_id,
                    self.tool().id()
                ),
                None,
            )
        };
        let stored = self
            .runtime
            .inbox()
            .stored(&self.call_id)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .filter(|stored| stored.call.head.tool_id == self.tool().id())
            .ok_or_else(unknown)?;
        let pending = match stored.state {
            CallState::Pending => stored.call,
            // Answered before (a retry whose response was lost): its outcome.
            CallState::Settled { outcome, .. } => {
                let outcome = CallOutcome::from(outcome);
                return Ok(self.run(Box::pin(async move { outcome }), None).await);
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "call {:?} was already answered and is running; retry later for its result",
                        self.call_id
                    ),
                    None,
                ));
            }
        };
        let answer = |key: &str| {
            responses
                .get(key)
                .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
        };
        let step = match pending.kind {
            // Never asked about: a task waits for a runtime, an output
            // call (a tool not served) for the application.
            PendingKind::Task | PendingKind::Output => return Err(unknown()),
            PendingKind::Approval => match answer(APPROVAL_KEY) {
                // Not answered: ask again.
                None => self.replay(CallOutcome::ApprovalRequired {
                    call_id: pending.head.call_id.clone(),
                    input: pending.input.clone(),
                    resume_schema: None,
                }),
                Some(result) => self.decide(Form::decision(&result)),
            },
            PendingKind::Suspended => {
                let suspension = Suspension {
                    payload: pending.payload.clone().unwrap_or(Value::Null),
                    resume_schema: self.tool().definition().resume_schema.clone(),
                };
                let form = elicit::resume_form(
                    &suspension.payload,
                    suspension.resume_schema.as_ref(),
                    None,
                );
                match (form, answer(RESUME_KEY)) {
                    (Some(form), Some(result)) if self.escalates() => {
                        if let Answer::Data(data) = form.answer(&result) {
                            return Ok(self.escalate(data, suspension).await);
                        }
                        self.resume_with(&form, &result, suspension)
                    }
                    (Some(form), Some(result)) => self.resume_with(&form, &result, suspension),
                    (_, None) => self.replay(CallOutcome::Suspended {
                        call_id: pending.head.call_id.clone(),
                        input: pending.input.clone(),
                        payload: suspension.payload,
                        resume_schema: suspension.resume_schema,
                    }),
                    (None, Some(_)) => Step::Respond(
                        self.pending_suspended(
                            &suspension,
                            "its resume data cannot be asked for in a form",
                        )
                        .into(),
                    ),
                }
            }
        };
        Ok(match step {
            Step::Next(next, suspension) => self.run(next, suspension).await,
            Step::Respond(response) => response,
        })
    }

    /// Whether what is left of this call, once its client answered, runs as
    /// a task the client polls: a background tool's call (its id says so)
    /// for a client of the tasks extension (SEP-2663's input rounds, then
    /// a task).
    fn escalates(&self) -> bool {
        self.tasks && crate::tasks::is_task_id(&self.call_id)
    }

    /// Resumes the call with the client's `data` as a task: its handle once
    /// the call is claimed; the usual answer (asking again, saying why) when
    /// the data was refused.
    async fn escalate(&self, data: Value, suspension: Suspension) -> CallToolResponse {
        match crate::tasks::resume_detached(&self.runtime, &self.call_id, data).await {
            Ok(()) => crate::tasks::started(&self.runtime, &self.call_id),
            Err(refused) => {
                self.run(Box::pin(std::future::ready(refused)), Some(suspension))
                    .await
            }
        }
    }

    /// Settles `first` and whatever the pauses it ends in lead to.
    async fn settle(
        &self,
        first: OutcomeFuture<'_>,
        mut suspension: Option<Suspension>,
    ) -> CallToolResponse {
        let mut outcome = self.until_cancelled(first).await;
        let mut note: Option<String> = None;
        for _ in 0..MAX_ROUNDS {
            let step = match outcome {
                CallOutcome::Completed {
                    output,
                    model_output,
                    ..
                } => {
                    return convert::completed(
                        output,
                        model_output.as_ref(),
                        Some(&self.served),
                        self.wraps_output,
                    )
                    .into();
                }
                CallOutcome::BackgroundStarted { task_id } if self.escalates() => {
                    // Approved on the way to a task: the client polls it now.
                    return crate::tasks::started(&self.runtime, &task_id);
                }
                CallOutcome::BackgroundStarted { task_id } => {
                    // MCP requests wait for their result: wait for the task
                    // (cancellation still reaches it by call id).
                    let runtime = self.runtime.clone();
                    Step::Next(
                        Box::pin(async move { or_failed(runtime.wait(&task_id).await) }),
                        None,
                    )
                }
                CallOutcome::ApprovalRequired { input, .. } => {
                    Box::pin(self.ask_approval(&input)).await
                }
                CallOutcome::Suspended {
                    payload,
                    resume_schema,
                    ..
                } => {
                    let asked = Suspension {
                        payload,
                        resume_schema,
                    };
                    Box::pin(self.ask_resume(asked, note.take())).await
                }
                CallOutcome::Failed { error }
                    if error.kind() == ErrorKind::ResumeValidation && suspension.is_some() =>
                {
                    // The answer did not fit the resume schema; the call is
                    // still suspended: ask again, saying why.
                    let Some(asked) = suspension.take() else {
                        return convert::error_result(error.message()).into();
                    };
                    note = Some(error.message().to_owned());
                    Box::pin(self.ask_resume(asked, note.take())).await
                }
                other => return convert::not_completed(&other).into(),
            };
            match step {
                Step::Next(next, asked) => {
                    suspension = asked;
                    outcome = self.until_cancelled(next).await;
                }
                Step::Respond(response) => return response,
            }
        }
        match outcome {
            CallOutcome::ApprovalRequired { .. } => {
                self.pending_approval("it was asked too many times").into()
            }
            CallOutcome::Suspended {
                payload,
                resume_schema,
                ..
            } => self
                .pending_suspended(
                    &Suspension {
                        payload,
                        resume_schema,
                    },
                    "it was asked too many times",
                )
                .into(),
            other => convert::not_completed(&other).into(),
        }
    }

    /// A call waits for approval: ask the user, or report it pending.
    async fn ask_approval(&self, input: &Value) -> Step<'_> {
        let title = self
            .served
            .declaration
            .title
            .as_deref()
            .unwrap_or(self.tool().id());
        let form = elicit::approval_form(title, self.tool().id(), input);
        match self.elicit {
            Elicit::Unsupported => Step::Respond(
                self.pending_approval(
                    "this client cannot ask the user (it does not support form elicitation)",
                )
                .into(),
            ),
            Elicit::InputRequired => Step::Respond(self.input_required(APPROVAL_KEY, form)),
            Elicit::Request => match self.elicit_request(form).await {
                Ok(result) => self.decide(Form::decision(&result)),
                Err(why) => Step::Respond(self.pending_approval(&why).into()),
            },
        }
    }

    /// Applies an approval decision.
    fn decide(&self, decision: ApprovalAnswer) -> Step<'_> {
        let runtime = self.runtime.clone();
        let call_id = self.call_id.clone();
        match decision {
            ApprovalAnswer::Approve => Step::Next(
                Box::pin(async move { or_failed(runtime.approve(&call_id).await) }),
                None,
            ),
            ApprovalAnswer::Decline(reason) => Step::Next(
                Box::pin(
                    async move { or_failed(runtime.decline(&call_id, reason.as_deref()).await) },
                ),
                None,
            ),
            ApprovalAnswer::Dismissed => Step::Respond(
                self.pending_approval("the user dismissed the approval request")
                    .into(),
            ),
        }
    }

    /// A call is suspended: ask the user for its resume data, or report it pending.
    async fn ask_resume(&self, suspension: Suspension, note: Option<String>) -> Step<'_> {
        let Some(form) = elicit::resume_form(
            &suspension.payload,
            suspension.resume_schema.as_ref(),
            note.as_deref(),
        ) else {
            return Step::Respond(
                self.pending_suspended(
                    &suspension,
                    "its resume data cannot be asked for in a form (only flat objects of strings, numbers, integers, booleans and enums can)",
                )
                .into(),
            );
        };
        match self.elicit {
            Elicit::Unsupported => Step::Respond(
                self.pending_suspended(
                    &suspension,
                    "this client cannot ask the user (it does not support form elicitation)",
                )
                .into(),
            ),
            Elicit::InputRequired => Step::Respond(self.input_required(RESUME_KEY, form)),
            Elicit::Request => match self.elicit_request(form.clone()).await {
                Ok(result) => self.resume_with(&form, &result, suspension),
                Err(why) => Step::Respond(self.pending_suspended(&suspension, &why).into()),
            },
        }
    }

    /// Applies the answer to a resume form.
    fn resume_with(&self, form: &Form, result: &ElicitResult, suspension: Suspension) -> Step<'_> {
        match form.answer(result) {
            Answer::Data(data) => {
                let runtime = self.runtime.clone();
                let call_id = self.call_id.clone();
                Step::Next(
                    Box::pin(async move { or_failed(runtime.resume(&call_id, data).await) }),
                    Some(suspension),
                )
            }
            Answer::Refused(action) => {
                let why = format!("the user did not provide it ({action:?})").to_lowercase();
                Step::Respond(self.pending_suspended(&suspension, &why).into())
            }
        }
    }

    /// Settles an outcome read back from the store (a question not yet answered).
    fn replay(&self, outcome: CallOutcome) -> Step<'_> {
        Step::Next(Box::pin(std::future::ready(outcome)), None)
    }

    /// Sends `form` to the client and waits for the answer (or the
    /// request's cancellation). `Err` says why there is no answer.
    async fn elicit_request(&self, form: Form) -> Result<ElicitResult, String> {
        ask(&self.peer, &self.ct, &self.call_id, form).await
    }

    /// An `input_required` result asking `form`; the client retries with
    /// the answer under `key` and `requestState` = the call id.
    fn input_required(&self, key: &str, form: Form) -> CallToolResponse {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: form.message,
            requested_schema: form.schema,
        };
        let requests = BTreeMap::from([(
            key.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        )]);
        let state = self.states.issue(self.tool().id(), &self.call_id);
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }

    /// Runs `future`; when the request is cancelled, fires the call's abort
    /// signal and lets the call wind down (the runtime logs the abort).
    async fn until_cancelled(&self, mut future: OutcomeFuture<'_>) -> CallOutcome {
        tokio::select! {
            biased;
            outcome = &mut future => return outcome,
            () = self.ct.cancelled() => {}
        }
        match self.runtime.cancel(&self.call_id) {
            Ok(()) => {
                tracing::info!(call_id = %self.call_id, "MCP request cancelled: abort signal fired")
            }
            Err(error) => tracing::debug!(call_id = %self.call_id, %error, "MCP request cancelled"),
        }
        future.await
    }

    /// Runs `work` while forwarding the call's progress as
    /// `notifications/progress` (when the client sent a progress token), and
    /// its log messages and custom chunks (`{"custom": chunk}`) as
    /// `notifications/message` (when the peer takes them).
    async fn forwarding_events<T, F: Future<Output = T>>(&self, work: F) -> T {
        if self.progress.is_none() && self.log.is_none() {
            return work.await;
        }
        // This call's notices only: other calls' events are not built for it.
        let mut notices = self.runtime.watch(&self.call_id);
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                biased;
                response = &mut work => {
                    // What was reported just before the end is still sent.
                    while let Some(notice) = notices.try_next() {
                        Box::pin(self.forward(notice)).await;
                    }
                    return response;
                }
                notice = notices.next() => Box::pin(self.forward(notice)).await,
            }
        }
    }

    async fn forward(&self, notice: Notice) {
        let sent = match (notice, &self.progress, &self.log) {
            (Notice::Progress(progress), Some(token), _) => {
                let mut params = ProgressNotificationParam::new(token.clone(), progress.value);
                params.total = progress.total;
                params.message = progress.message;
                self.peer.notify_progress(params).await
            }
            (notice @ (Notice::Log(_) | Notice::Custom(_)), _, Some(log)) => {
                let message = match &notice {
                    Notice::Log(record) => log.message(self.tool().id(), record),
                    Notice::Custom(chunk) => log.custom(self.tool().id(), chunk),
                    _ => None,
                };
                let Some(message) = message else {
                    return;
                };
                #[allow(
                    deprecated,
                    reason = "MCP logging (SEP-2577 deprecates it; older peers use it)"
                )]
                self.peer.notify_logging_message(message).await
            }
            _ => return,
        };
        if let Err(error) = sent {
            tracing::debug!(%error, "could not send a notification to the client");
        }
    }

    fn pending_approval(&self, why: &str) -> CallToolResult {
        let call_id = &self.call_id;
        let text = CallOutcome::approval_notice(self.tool().id(), call_id, why);
        self.pending(text, json!({ "callId": call_id, "kind": "approval" }))
    }

    fn pending_suspended(&self, suspension: &Suspension, why: &str) -> CallToolResult {
        let call_id = &self.call_id;
        let text = CallOutcome::suspension_notice(
            self.tool().id(),
            call_id,
            &suspension.payload,
            suspension.resume_schema.as_ref(),
            why,
        );
        self.pending(
            text,
            json!({
                "callId": call_id,
                "kind": "suspended",
                "payload": suspension.payload,
                "resumeSchema": suspension.resume_schema,
            }),
        )
    }

    /// An `isError` result (the tool produced no output) saying what is
    /// pending, with the details under `_meta`.
    fn pending(&self, text: String, details: Value) -> CallToolResult {
        tracing::info!(call_id = %self.call_id, tool_id = self.tool().id(), "tool call left pending");
        let mut meta = MetaObject::new();
        meta.insert(PENDING_META.to_owned(), details);
        convert::error_result(text).with_meta(Some(meta))
    }
}

/// The outcome of an approve / decline / resume / wait, or the runtime's
/// error as a failure the model reads.
fn or_failed(result: Result<CallOutcome, RuntimeError>) -> CallOutcome {
    result.unwrap_or_else(|error| CallOutcome::Failed {
        error: tool_core::ModelError::new(ErrorKind::Execution, error.to_string()),
    })
}

/// Sends `form` to the client of a request and waits for the answer (or the
/// request's cancellation). `Err` says why there is no answer.
async fn ask(
    peer: &Peer<RoleServer>,
    ct: &CancellationToken,
    call_id: &str,
    form: Form,
) -> Result<ElicitResult, String> {
    if ct.is_cancelled() {
        return Err("the request was cancelled".to_owned());
    }
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: form.message,
        requested_schema: form.schema,
    };
    tokio::select! {
        result = peer.create_elicitation(params) => result.map_err(|e| {
            tracing::warn!(%call_id, error = %e, "elicitation failed");
            format!("asking the user failed: {e}")
        }),
        () = ct.cancelled() => Err("the request was cancelled".to_owned()),
    }
}

/// What a running tool asks its MCP client (`ToolContext::mcp`): forms sent
/// as `elicitation/create` requests, prompts for its model as
/// `sampling/createMessage`, and its roots as `roots/list`, on the call's
/// connection, as far as the client declared it takes them.
pub(crate) struct PeerElicitor {
    peer: Peer<RoleServer>,
    ct: CancellationToken,
    call_id: String,
    forms: bool,
    sampling: bool,
    roots: bool,
    protocol: String,
}

impl PeerElicitor {
    pub(crate) fn new(call: &Call, sampling: bool, roots: bool) -> Self {
        PeerElicitor {
            peer: call.peer.clone(),
            ct: call.ct.clone(),
            call_id: call.call_id.clone(),
            forms: call.elicit == Elicit::Request,
            sampling,
            roots,
            protocol: call.protocol_version.clone(),
        }
    }
}

impl Elicitor for PeerElicitor {
    #[allow(
        deprecated,
        reason = "MCP roots (SEP-2577 deprecates them; older peers use them)"
    )]
    fn roots(&self) -> RootsFuture<'_> {
        Box::pin(async move {
            if !self.roots {
                return Err(elicit::undeclared("roots (`roots`)", &self.protocol));
            }
            let listed = tokio::select! {
                listed = self.peer.list_roots() => listed.map_err(|e| {
                    tracing::warn!(call_id = %self.call_id, error = %e, "roots/list failed");
                    format!("the client did not list its roots: {e}")
                })?,
                () = self.ct.cancelled() => return Err("the request was cancelled".to_owned()),
            };
            Ok(convert::listed_roots(&listed))
        })
    }

    #[allow(
        deprecated,
        reason = "MCP sampling (SEP-2577 deprecates it; older peers use it)"
    )]
    fn sample(&self, prompt: String, max_tokens: u32) -> SampleFuture<'_> {
        Box::pin(async move {
            if !self.sampling {
                return Err(elicit::undeclared("sampling (`sampling`)", &self.protocol));
            }
            let message = rmcp::model::SamplingMessage::user_text(prompt);
            let params = rmcp::model::CreateMessageRequestParams::new(vec![message], max_tokens);
            let answer = tokio::select! {
                answer = self.peer.create_message(params) => answer.map_err(|e| {
                    tracing::warn!(call_id = %self.call_id, error = %e, "sampling failed");
                    format!("the client's model did not answer: {e}")
                })?,
                () = self.ct.cancelled() => return Err("the request was cancelled".to_owned()),
            };
            Ok(convert::sampled_text(&answer))
        })
    }

    fn elicit(&self, message: String, schema: Value) -> ElicitFuture<'_> {
        Box::pin(async move {
            let form = elicit::tool_form_for(self.forms, &self.protocol, message, &schema)?;
            let result = ask(&self.peer, &self.ct, &self.call_id, form.clone()).await?;
            Ok(match form.answer(&result) {
                Answer::Data(content) => Elicitation::Accepted(content),
                Answer::Refused(ElicitationAction::Decline) => Elicitation::Declined,
                Answer::Refused(_) => Elicitation::Cancelled,
            })
        })
    }
}
