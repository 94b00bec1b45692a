//! The call path, written once: [`CallPath`], the component every call runs
//! through, from `call`, streamed input's `finish`, and the decisions
//! (`approve`, `resume`, recovery and workers) that run a stored call.
//!
//! 1. Look up the tool.
//! 2. Admit ([`tool_core::Tool::admit`]): parse and repair the input,
//!    validate it, the request context and, on resume, the resume data.
//! 3. New calls only: `on_input_available` (the tool's, then the
//!    runtime's) and its event.
//! 4. New calls only: a call to a declaration-only tool is stored and
//!    ends here as `AwaitingOutput`; then the approval gate: a call that
//!    needs approval is stored and ends here as `ApprovalRequired`.
//! 5. Execute ([`tool_core::Admitted::run`]): in the background for
//!    background tools (not on resume), under the call's time limit,
//!    reachable by `cancel`.
//! 6. Settle: store a suspension, record the outcome of a stored call, fire
//!    `on_output`, emit the event.
//!
//! A stored call (approved, resumed or recovered) arrives claimed, under a
//! [`Lease`] that is renewed while it executes and released when it settles.
//!
//! Nothing runs before the returned future is first polled.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tool_core::hooks::{InputAvailable, OutputAvailable};
use tool_core::transform::{CallValues, OwnedCallValues, Phase};
use tool_core::{
    AbortSignal, Admitted, ApprovalRequirement, BackgroundConfig, CallContext, Disposition,
    ErrorKind, ModelError, Outcome, RequestContext, Tool,
};
use tracing::Instrument as _;

use std::collections::HashMap;

use tokio::sync::watch;
use tool_core::{AgentContext, AppState, Extensions, Hooks, ToolSet, WorkflowContext};

use crate::abort::{CancelRegistry, RunningGuard, with_limit};
use crate::approval_policy::{ApprovalCheck, decision_schema};
use crate::approval_rules::{ApprovalRules, approved_by_rule};
use crate::background::{BackgroundResult, Tasks};
use crate::call::{CallHead, ToolCall};
use crate::call_outcome::CallOutcome;
use crate::claims::{Claim, Lease, LeaseLost, NotRecorded, StoredCalls, Verdict};
use crate::error::RuntimeError;
use crate::events::{EventBus, EventKind, Notice, Payload};
use crate::hook_queue::Firing;
use crate::rule_predicates::RuleSubject;
use crate::store::{
    AuditEntry, AuditKind, PendingCall, PendingKind, RecordedOutcome, RequiredApprovals,
    Settlement, StoreTransaction, StoredHead,
};

/// The call path: admission, hooks, the approval gate, execution (in the
/// foreground, or as a background task with retries), settlement and the
/// recorded outcome of a stored call. Cheap to clone; clones share it. A
/// `Runtime` holds one, and so do the decisions and workers it hands calls to.
#[derive(Clone)]
pub(crate) struct CallPath {
    parts: Arc<PathParts>,
}

impl std::fmt::Debug for CallPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPath")
            .field("tools", &self.tool_ids())
            .finish_non_exhaustive()
    }
}

/// What the call path is made of, given by the runtime's builder.
pub(crate) struct PathParts {
    pub(crate) tools: ToolSet,
    pub(crate) hooks: Hooks,
    /// How long a hook may run (`hook_queue.rs`).
    pub(crate) hook_timeout: Duration,
    /// Whether, by whom and how a call may be approved.
    pub(crate) approval: ApprovalRules,
    pub(crate) stored: StoredCalls,
    pub(crate) events: EventBus,
    pub(crate) running: Arc<CancelRegistry>,
    pub(crate) tasks: Tasks,
    /// The runtime's time limit of a call, unless the tool has its own.
    pub(crate) timeout: Option<Duration>,
    pub(crate) tool_timeouts: HashMap<String, Duration>,
    /// Background calls are stored and left to a [`Worker`](crate::Worker).
    pub(crate) leave_tasks_to_workers: bool,
    /// The application's state, given to every call.
    pub(crate) state: AppState,
}

/// How a call reaches the pipeline, which decides the stages it goes through.
pub(crate) enum Entry {
    /// A new call: hooks and the approval gate apply.
    New,
    /// A stored call claimed to run: approved by a human, or a background
    /// task (recovered, or claimed by a worker).
    Claimed(Lease),
    /// A suspended call resumed with data, claimed to run.
    Resumed {
        /// The resume data.
        data: Value,
        /// What the call suspended with.
        payload: Option<Value>,
        /// The claim on it.
        lease: Lease,
    },
}

/// A call whose input streamed in: its abort signal (registered for
/// `cancel` since `begin`) and the span its hooks fired in.
pub(crate) struct Streamed {
    pub(crate) abort: AbortSignal,
    pub(crate) guard: RunningGuard,
    pub(crate) span: tracing::Span,
}

/// What the stages after execute need to know of a call.
pub(crate) struct CallRecord {
    pub(crate) tool: Tool,
    pub(crate) call_id: String,
    pub(crate) request_context: RequestContext,
    pub(crate) messages: Option<Arc<[Value]>>,
    /// Who asked for the call, for the approval policy.
    pub(crate) requester: Option<String>,
    pub(crate) abort: AbortSignal,
    /// The call's time limit: its own, else its tool's, else the runtime's.
    pub(crate) timeout: Option<Duration>,
    /// The call's own time limit (its head's), stored with it if it pauses.
    pub(crate) own_timeout: Option<Duration>,
    /// For a stored call, the claim it runs under.
    pub(crate) lease: Option<Lease>,
    /// For a transactional tool's call, the transaction its tool's work is
    /// in, until it commits with the outcome (or is dropped, rolled back).
    pub(crate) transaction: std::sync::Mutex<Option<Box<dyn StoreTransaction>>>,
    /// What the tool's transformers see of the call's earlier phases (kept
    /// only for a tool with a transform, which alone reads them; boxed, as
    /// the 360 bytes would be in every call's future, more than once).
    pub(crate) known: Option<Box<OwnedCallValues>>,
    /// The agent that made the call, stored with it if it pauses.
    pub(crate) agent: Option<AgentContext>,
}

impl CallRecord {
    /// The call's head as a store keeps it, when it pauses: what outlives
    /// the process (not its extensions), and its own time limit.
    fn stored_head(&self) -> StoredHead {
        let mut head = StoredHead::new(self.call_id.as_str(), self.tool.id());
        head.request_context = self.request_context.values().clone();
        head.messages = self
            .messages
            .as_deref()
            .map(<[Value]>::to_vec)
            .unwrap_or_default();
        head.agent = self.agent.clone();
        head.requester = self.requester.clone();
        head.timeout_ms = self
            .own_timeout
            .map(|limit| u64::try_from(limit.as_millis()).unwrap_or(u64::MAX));
        head
    }

    /// What the tool's transformers see of the call's earlier phases.
    fn known(&self) -> CallValues<'_> {
        self.known
            .as_deref()
            .map_or_else(CallValues::default, OwnedCallValues::values)
    }

    /// The call's transaction, taken to commit (or roll back).
    fn take_transaction(&self) -> Option<Box<dyn StoreTransaction>> {
        self.transaction
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// One execution of a call: its outcome, whether its time limit fired, and
/// whether it was stopped because its claim ended first.
pub(crate) struct Ran {
    pub(crate) outcome: Outcome,
    pub(crate) timed_out: bool,
    pub(crate) lost: Option<LeaseLost>,
}

/// The span every step of a call runs in.
pub(crate) fn call_span(step: &'static str, tool_id: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!("tool.call", step, tool_id = %tool_id, call_id = %call_id)
}

impl CallPath {
    pub(crate) fn new(parts: PathParts) -> Self {
        CallPath {
            parts: Arc::new(parts),
        }
    }

    pub(crate) fn tools(&self) -> &ToolSet {
        &self.parts.tools
    }

    pub(crate) fn tool(&self, id: &str) -> Option<&Tool> {
        self.parts.tools.get(id)
    }

    /// The ids of the tools, which the stored calls it claims must name.
    pub(crate) fn tool_ids(&self) -> Vec<String> {
        self.parts.tools.iter().map(|t| t.id().to_owned()).collect()
    }

    /// The hooks a call of `tool` fires: the tool's, then the runtime's.
    pub(crate) fn firing<'a>(&'a self, tool: Option<&'a Tool>) -> Firing<'a> {
        Firing {
            tool: tool.map(Tool::hooks),
            runtime: &self.parts.hooks,
            limit: self.parts.hook_timeout,
        }
    }

    /// The runtime-wide hooks.
    pub(crate) fn hooks(&self) -> &Hooks {
        &self.parts.hooks
    }

    pub(crate) fn stored(&self) -> &StoredCalls {
        &self.parts.stored
    }

    pub(crate) fn events(&self) -> &EventBus {
        &self.parts.events
    }

    pub(crate) fn running(&self) -> &Arc<CancelRegistry> {
        &self.parts.running
    }

    pub(crate) fn tasks(&self) -> &Tasks {
        &self.parts.tasks
    }

    /// Fires the abort signal of the call `call_id` running here
    /// ([`Runtime::cancel`](crate::Runtime::cancel)).
    pub(crate) fn cancel(&self, call_id: &str) -> Result<(), RuntimeError> {
        if self.parts.running.cancel(call_id) {
            tracing::info!(call_id, "tool call cancelled");
            Ok(())
        } else {
            Err(RuntimeError::NotRunning {
                call_id: call_id.to_owned(),
            })
        }
    }

    /// The runtime-wide time limit of a call.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.parts.timeout
    }

    /// Runs a new call to its outcome ([`Runtime::call`](crate::Runtime::call)).
    pub(crate) fn call(
        &self,
        call: ToolCall,
    ) -> impl Future<Output = CallOutcome> + Send + 'static {
        let path = self.clone();
        async move { path.run_call(call, Entry::New, None).await }
    }

    /// The pipeline (see the module docs), in the call's span and boxed:
    /// its state machine is kilobytes, and every caller's future (a
    /// spawned call, an MCP request) would otherwise carry it and copy it
    /// on each move. It is made in its box: `Box::pin(future)` copied it
    /// twice on the way there (about 8,500 instructions a call at 8 KB).
    pub(crate) fn run_call(
        &self,
        call: ToolCall,
        entry: Entry,
        streamed: Option<Streamed>,
    ) -> Pin<Box<dyn Future<Output = CallOutcome> + Send + '_>> {
        let (span, streamed) = match streamed {
            Some(Streamed { abort, guard, span }) => (span, Some((abort, guard))),
            None => (
                call_span(entry.step(), &call.head.tool_id, &call.head.call_id),
                None,
            ),
        };
        // Allocated first, so that the future is built in its box (the
        // optimizer does; measured with the `instructions` bench).
        let slot = Box::new_uninit();
        let boxed: Box<tracing::instrument::Instrumented<_>> = Box::write(
            slot,
            self.run_in_span(call, entry, streamed).instrument(span),
        );
        Box::into_pin(boxed)
    }

    async fn run_in_span(
        &self,
        call: ToolCall,
        entry: Entry,
        streamed: Option<(AbortSignal, RunningGuard)>,
    ) -> CallOutcome {
        // Taken apart in one pattern: the head is not moved as a whole
        // between the steps of this future's state.
        let ToolCall {
            head:
                CallHead {
                    call_id,
                    tool_id,
                    request_context,
                    messages,
                    timeout,
                    mut extensions,
                    requester,
                },
            input,
            workflow,
        } = call;
        let Some(tool) = self.parts.tools.get(&tool_id).cloned() else {
            let error = self.parts.tools.unknown_tool(&tool_id);
            return self
                .failed(None, &call_id, &tool_id, error, CallValues::default())
                .await;
        };
        let (abort, guard) = match streamed {
            Some((abort, guard)) => (abort, Some(guard)),
            None => (AbortSignal::new(), None),
        };
        let is_new = matches!(entry, Entry::New);
        // A resumed call finishes in the foreground: its caller waits for it.
        let may_background = !matches!(entry, Entry::Resumed { .. });
        let (lease, resume) = match entry {
            Entry::New => (None, None),
            Entry::Claimed(lease) => (Some(lease), None),
            Entry::Resumed {
                data,
                payload,
                lease,
            } => (Some(lease), Some((data, payload))),
        };
        // A transactional tool's handle, in its context from the start;
        // nothing is opened until the tool uses it.
        let transaction = tool
            .definition()
            .transactional
            .then(|| self.parts.stored.transaction())
            .flatten();
        if let Some(transaction) = &transaction {
            transaction.add_handle(&mut extensions);
        }
        let mut known: Option<Box<OwnedCallValues>> = None;
        if let Some((data, payload)) = resume.as_ref().filter(|_| !tool.transform().is_empty()) {
            let values = known.get_or_insert_default();
            values.resume_data = Some(data.clone());
            values.suspend_payload = payload.clone();
        }
        let mut record = CallRecord {
            known,
            agent: extensions.get::<AgentContext>().cloned(),
            timeout: timeout.or_else(|| self.timeout_of(&tool)),
            own_timeout: timeout,
            tool,
            call_id,
            request_context,
            messages: (!messages.is_empty()).then(|| Arc::from(messages)),
            requester,
            abort,
            lease,
            transaction: std::sync::Mutex::new(transaction),
        };
        let ctx = self.call_context(&record, extensions, resume, workflow);
        let admitted = match record.tool.admit(input, ctx) {
            Ok(admitted) => admitted,
            Err(error) => {
                let (tool, call_id) = (Some(&record.tool), record.call_id.as_str());
                let known = record.known();
                let outcome = self
                    .failed(tool, call_id, record.tool.id(), error, known)
                    .await;
                return self.record(&record, outcome).await;
            }
        };
        if !record.tool.transform().is_empty() {
            record.known.get_or_insert_default().input = Some(admitted.input().clone());
        }
        if is_new {
            self.input_available(&record, admitted.input()).await;
            // A declaration-only tool's call waits for its output: the
            // application's answer is its decision, approval included.
            if !record.tool.has_execute() {
                return self.await_output(&record, admitted.into_input()).await;
            }
            match self.approval_requirement(&record, admitted.input()).await {
                ApprovalRequirement::NotRequired => {}
                ApprovalRequirement::Refused { reason } => {
                    return self
                        .refused_by_policy(&record, admitted.into_input(), &reason)
                        .await;
                }
                required => {
                    let approvals = self
                        .parts
                        .approval
                        .required_approvals(record.tool.id(), &required);
                    if !self
                        .approved_by_rule(&record, admitted.input(), &approvals)
                        .await
                    {
                        return self
                            .request_approval(&record, admitted.into_input(), approvals)
                            .await;
                    }
                }
            }
        }
        // Registered for `cancel` until the call ends (across the attempts
        // of a background task).
        let guard = guard.unwrap_or_else(|| {
            self.parts
                .running
                .register(&record.call_id, record.abort.clone())
        });
        let definition = record.tool.definition();
        let background = definition
            .background
            .as_ref()
            .filter(|b| b.enabled && may_background)
            .cloned();
        if background.is_some() || (record.lease.is_none() && definition.transactional) {
            return Box::pin(self.execute_stored(record, admitted, guard, background)).await;
        }
        // The foreground path runs here, not in a nested async fn that
        // takes the record: each level's future is built and then copied
        // into this one's (kilobytes a call, measured with the
        // `instructions` bench).
        self.run_here(&record, admitted, guard).await
    }

    /// The context a call's tool runs with, the one place a call's head
    /// becomes it: request context, messages, extensions (the agent among
    /// them), abort signal, attempt, resume data, workflow step, progress
    /// and logs to events, the call span as parent.
    fn call_context(
        &self,
        record: &CallRecord,
        extensions: Extensions,
        resume: Option<(Value, Option<Value>)>,
        workflow: Option<WorkflowContext>,
    ) -> CallContext {
        let mut ctx = CallContext::new(record.call_id.as_str())
            .with_request_context(record.request_context.clone())
            .with_extensions(extensions)
            .with_state(self.parts.state.clone())
            .with_abort_signal(record.abort.clone())
            .with_attempt(record.lease.as_ref().map_or(1, Lease::attempt));
        if let Some((data, payload)) = resume {
            ctx = ctx.resuming(data, payload);
        }
        if let Some(workflow) = workflow {
            ctx = ctx.with_workflow(workflow);
        }
        if let Some(messages) = &record.messages {
            ctx = ctx.with_shared_messages(Arc::clone(messages));
        }
        let events = &self.parts.events;
        if events.noticed(&record.call_id) {
            // Progress, logs and custom chunks reach the subscribers and
            // the call's watchers present when the call started, in the
            // order the tool sent them.
            let events = events.clone();
            let (call_id, tool_id) = (record.call_id.clone(), record.tool.id().to_owned());
            let notify: Arc<dyn Fn(Notice) + Send + Sync> =
                Arc::new(move |notice| events.notice(&call_id, &tool_id, notice));
            let (progress, log, custom) = (Arc::clone(&notify), Arc::clone(&notify), notify);
            ctx = ctx
                .on_progress(move |value| progress(Notice::Progress(value)))
                .on_log(move |record| log(Notice::Log(record)))
                .on_custom(move |chunk| custom(Notice::Custom(chunk)));
        }
        let span = tracing::Span::current();
        if !span.is_disabled() {
            ctx = ctx.with_parent_span(span);
        }
        ctx
    }

    /// The context a stored call is checked (an edit, resume data) or
    /// reconciled with: its id and request context, the application's
    /// state.
    pub(crate) fn stored_context(&self, call: &PendingCall) -> CallContext {
        CallContext::new(call.head.call_id.as_str())
            .with_request_context(RequestContext::from(call.head.request_context.clone()))
            .with_state(self.parts.state.clone())
    }

    /// The time limit of a tool's calls: its own, else the runtime's.
    pub(crate) fn timeout_of(&self, tool: &Tool) -> Option<Duration> {
        self.parts
            .tool_timeouts
            .get(tool.id())
            .copied()
            .or(self.parts.timeout)
    }

    /// Executes an admitted call that is stored before it runs: in the
    /// background (`background`: the tool's configuration, when the call
    /// may go there), or a transactional tool's, claimed first; and settles
    /// it. Boxed by its caller: the store's futures and a background run's
    /// state are kilobytes, which every call's future would otherwise carry
    /// (and copy).
    async fn execute_stored(
        &self,
        mut record: CallRecord,
        admitted: Admitted,
        guard: RunningGuard,
        background: Option<BackgroundConfig>,
    ) -> CallOutcome {
        if let Some(config) = background {
            if record.lease.is_none() && self.parts.leave_tasks_to_workers {
                // Stored for a worker: one insert, made or not.
                return match self.store_task(&record, admitted.input(), true).await {
                    Ok(_) => self.left_to_worker(&record, &config).await,
                    Err(failed) => failed,
                };
            }
            return self.run_background(record, admitted, config, guard).await;
        }
        // Stored and claimed before it runs: a crash or a lost claim before
        // the commit leaves neither its work nor its outcome, and recovery
        // runs it again.
        match self.store_task(&record, admitted.input(), false).await {
            Ok(Some(lease)) => record.lease = Some(lease),
            // A worker claimed it between the insert and this claim.
            Ok(None) => return self.parts.tasks.outcome(&record.call_id).await,
            Err(failed) => return failed,
        }
        self.run_here(&record, admitted, guard).await
    }

    /// Runs an admitted call once, in this task, and settles it. The record
    /// is borrowed: its caller's future keeps it, and it is not copied into
    /// this one's.
    async fn run_here(
        &self,
        record: &CallRecord,
        admitted: Admitted,
        guard: RunningGuard,
    ) -> CallOutcome {
        let ran = self
            .run_once(
                admitted,
                &record.abort,
                record.timeout,
                record.lease.as_ref(),
            )
            .await;
        drop(guard);
        self.settle(record, ran).await
    }

    /// One execution of an admitted call under a time limit (and, for a
    /// stored call, holding its lease). A call whose abort signal fired ends
    /// as `Aborted`, whatever the tool returned after it.
    pub(crate) async fn run_once(
        &self,
        admitted: Admitted,
        abort: &AbortSignal,
        limit: Option<Duration>,
        lease: Option<&Lease>,
    ) -> Ran {
        // Pinned here, so that the block below holds a reference, not the
        // admitted call and its run a second time.
        let mut run = std::pin::pin!(admitted.run());
        let running = async {
            match limit {
                None => (run.as_mut().await, false),
                Some(limit) => with_limit(run.as_mut(), limit, abort).await,
            }
        };
        let mut running = std::pin::pin!(running);
        let (outcome, timed_out) = match lease {
            None => running.await,
            Some(lease) => match lease.hold(running.as_mut(), abort).await {
                Ok(ran) => ran,
                Err(lost) => {
                    return Ran {
                        outcome: Outcome::Aborted,
                        timed_out: false,
                        lost: Some(lost),
                    };
                }
            },
        };
        if abort.is_aborted() && outcome != Outcome::Aborted {
            // The tool wound down on its own after the signal fired (returned
            // early, or an error): the call was still aborted.
            return Ran {
                outcome: Outcome::Aborted,
                timed_out,
                lost: None,
            };
        }
        Ran {
            outcome,
            timed_out,
            lost: None,
        }
    }

    /// Side effects of how a call ended: store a suspension, fire
    /// `on_output`, log an abort, emit the event.
    pub(crate) async fn settle(&self, record: &CallRecord, ran: Ran) -> CallOutcome {
        let tool = &record.tool;
        let (call_id, tool_id) = (record.call_id.as_str(), tool.id());
        let known = record.known();
        let events = &self.parts.events;
        if let (Some(lost), Some(lease)) = (ran.lost, &record.lease) {
            // Stopped because the claim ended: the call is another
            // instance's (or recovery's) to settle; nothing is recorded here.
            let why = NotRecorded::Lost(lost);
            lease.mark_not_recorded(why.clone());
            events.emit(call_id, tool_id, || EventKind::Aborted);
            return CallOutcome::not_recorded(call_id, why.reason());
        }
        match &ran.outcome {
            Outcome::Completed { output, .. } => {
                let args =
                    || OutputAvailable::new(output.clone(), call_id, tool_id, record.abort.clone());
                self.firing(Some(tool))
                    .run("on_output", Hooks::has_on_output, Hooks::output, args)
                    .await;
                let shown =
                    || Payload::of(Some(tool), call_id, tool_id, Phase::Output, output, known);
                let event = |payload| EventKind::Output { payload };
                events.emit_shown(call_id, tool_id, shown, event).await;
            }
            Outcome::Suspended {
                input,
                payload: suspended,
                resume_schema,
                ..
            } => {
                if let Err(error) = Box::pin(self.store_suspension(record, input, suspended)).await
                {
                    tracing::error!(%error, "could not store the suspended call");
                    if record.lease.is_some() {
                        // The lease says why; its suspension is still offered
                        // to the store, so no other outcome is.
                        return ran.outcome.into();
                    }
                    let error = ModelError::new(
                        ErrorKind::Execution,
                        format!(
                            "Tool {tool_id} suspended, but the suspension could not be stored: {error}"
                        ),
                    );
                    let failed = self
                        .failed(Some(tool), call_id, tool_id, error, known)
                        .await;
                    return self.record(record, failed).await;
                }
                tracing::info!("tool call suspended");
                let known = CallValues {
                    input: Some(input),
                    ..known
                };
                let shown = || {
                    Payload::of(
                        Some(tool),
                        call_id,
                        tool_id,
                        Phase::Suspend,
                        suspended,
                        known,
                    )
                };
                let event = |payload| EventKind::Suspended {
                    payload,
                    resume_schema: resume_schema.clone(),
                };
                events.emit_shown(call_id, tool_id, shown, event).await;
            }
            Outcome::Failed { error } => {
                let error = error.to_json();
                let shown =
                    || Payload::of(Some(tool), call_id, tool_id, Phase::Error, &error, known);
                let event = |payload| EventKind::Error { payload };
                events.emit_shown(call_id, tool_id, shown, event).await;
            }
            Outcome::Aborted => {
                let reason = if ran.timed_out {
                    "timed out"
                } else {
                    "cancelled"
                };
                tracing::warn!(call_id, tool_id, reason, "tool call aborted");
                events.emit(call_id, tool_id, || EventKind::Aborted);
            }
        }
        self.record(record, ran.outcome.into()).await
    }

    /// Stores a suspended call: a new pending call, or, for a stored call,
    /// the transition of its claim back to pending.
    async fn store_suspension(
        &self,
        record: &CallRecord,
        input: &Value,
        payload: &Value,
    ) -> Result<(), String> {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        let known = CallValues::default().with(Phase::Input, input);
        let shown = self
            .shown_in_notifications(tool, call_id, Phase::Suspend, payload, known)
            .await;
        let notifications = self.parts.stored.notifications();
        let Some(lease) = &record.lease else {
            let pending = self.pending_call(
                record,
                PendingKind::Suspended,
                input.clone(),
                Some(payload.clone()),
            );
            let notified = notifications.waiting(tool, &pending, shown);
            return self
                .parts
                .stored
                .insert(pending, notified)
                .await
                .map_err(|e| e.to_string());
        };
        let settlement = Settlement::Suspended {
            payload: payload.clone(),
        };
        let notify = |_: &Settlement| notifications.suspended(tool, call_id, shown.clone());
        lease
            .finish(settlement, record.take_transaction(), notify)
            .await
            .map_err(|why| why.reason().to_owned())?;
        let request = AuditEntry::new(
            AuditKind::Requested,
            &record.call_id,
            record.tool.id(),
            PendingKind::Suspended.as_str(),
        );
        self.parts.stored.audit(request).await;
        Ok(())
    }

    /// Stores a new call as a task (a call that waits for a runtime to run
    /// it) and claims it, unless it is `for_workers`; `None` when it is
    /// left to workers, or a worker claimed it in between. Background calls
    /// and transactional calls are stored so.
    async fn store_task(
        &self,
        record: &CallRecord,
        input: &Value,
        for_workers: bool,
    ) -> Result<Option<Lease>, CallOutcome> {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        let not_stored = async |error: String| {
            tracing::error!(%error, "could not store the call before running it");
            let how = if tool.definition().transactional {
                "is transactional"
            } else {
                "runs in the background"
            };
            let error = ModelError::new(
                ErrorKind::Execution,
                format!(
                    "Tool {} {how}, but its call could not be stored: {error}",
                    tool.id()
                ),
            );
            let known = CallValues::default().with(Phase::Input, input);
            self.failed(Some(tool), call_id, tool.id(), error, known)
                .await
        };
        let task = self.pending_call(record, PendingKind::Task, input.clone(), None);
        let calls = &self.parts.stored;
        if let Err(error) = calls.insert(task, Vec::new()).await {
            return Err(not_stored(error.to_string()).await);
        }
        if for_workers {
            return Ok(None);
        }
        match calls
            .decide(
                call_id,
                PendingKind::Task.into(),
                Claim::Run(None),
                Vec::new(),
            )
            .await
        {
            Ok(Verdict::Claimed(_, lease)) => Ok(Some(lease)),
            Ok(_) | Err(RuntimeError::Running { .. }) => Ok(None),
            Err(error) => Err(not_stored(error.to_string()).await),
        }
    }

    /// The answer to a background call whose task a worker runs: started
    /// (deferred), or its outcome once it settles (foreground).
    async fn left_to_worker(&self, record: &CallRecord, config: &BackgroundConfig) -> CallOutcome {
        let task_id = record.call_id.clone();
        tracing::info!(
            task_id,
            "tool call stored as a background task for a worker"
        );
        self.parts
            .events
            .emit(&record.call_id, record.tool.id(), || {
                EventKind::BackgroundStarted {
                    task_id: task_id.clone(),
                }
            });
        match config.disposition {
            Disposition::Deferred => CallOutcome::BackgroundStarted { task_id },
            Disposition::Foreground => self.parts.tasks.outcome(&task_id).await,
        }
    }

    /// Records the final outcome of a stored call, so that a decision asked
    /// again (from any instance) returns it. A new call has nothing to
    /// record. When the store does not take it, the lease says why
    /// ([`Lease::not_recorded`]), and a decider answers with that instead.
    pub(crate) async fn record(&self, record: &CallRecord, outcome: CallOutcome) -> CallOutcome {
        // The lease first: copying the outcome is for stored calls only.
        let Some(lease) = &record.lease else {
            return outcome;
        };
        let Some(recorded) = RecordedOutcome::from_outcome(&outcome) else {
            return outcome;
        };
        let notifications = self.parts.stored.notifications();
        let notify = notifications.settled(&record.tool, &record.call_id);
        // Boxed: the store's future would size every call's, stored or not.
        let settlement = Settlement::Settled(recorded);
        match Box::pin(lease.finish(settlement, record.take_transaction(), notify)).await {
            // The store recorded a failure instead (the transaction's work
            // could not be committed): that is the call's outcome.
            Ok(Some(instead)) => instead.into(),
            Ok(None) => outcome,
            // Never the execution's own outcome: it is not what the store
            // has (a decider answers `RuntimeError::NotRecorded` instead).
            Err(why) => CallOutcome::not_recorded(&record.call_id, why.reason()),
        }
    }

    /// What notifications show of `value`, the call's in `phase`: the
    /// projection of `tool`'s display transform, computed only when the
    /// runtime writes notifications.
    async fn shown_in_notifications(
        &self,
        tool: &Tool,
        call_id: &str,
        phase: Phase,
        value: &Value,
        known: CallValues<'_>,
    ) -> Value {
        if !self.parts.stored.notifications().on() {
            return Value::Null;
        }
        Payload::of(Some(tool), call_id, tool.id(), phase, value, known)
            .await
            .display
    }

    /// The stored form of a call.
    pub(crate) fn pending_call(
        &self,
        record: &CallRecord,
        kind: PendingKind,
        input: Value,
        payload: Option<Value>,
    ) -> PendingCall {
        let mut pending = PendingCall::waiting(record.stored_head(), kind, input);
        pending.payload = payload;
        let now = now_ms();
        pending.asked_at_ms = Some(now);
        pending.expires_at_ms = (kind == PendingKind::Approval)
            .then(|| self.parts.approval.expires_at(record.tool.id(), now))
            .flatten();
        pending
    }

    /// The approval rules ([`ApprovalRules`]).
    pub(crate) fn approval_rules(&self) -> &ApprovalRules {
        &self.parts.approval
    }

    /// A failure before execution: emit the error event, return the outcome.
    /// `known`: what the call gave before, which the tool's transformers see.
    pub(crate) async fn failed(
        &self,
        tool: Option<&Tool>,
        call_id: &str,
        tool_id: &str,
        error: ModelError,
        known: CallValues<'_>,
    ) -> CallOutcome {
        let json = error.to_json();
        let shown = || Payload::of(tool, call_id, tool_id, Phase::Error, &json, known);
        let event = |payload| EventKind::Error { payload };
        self.parts
            .events
            .emit_shown(call_id, tool_id, shown, event)
            .await;
        CallOutcome::failed(error)
    }

    /// `on_input_available` (the tool's, then the runtime's) and its event.
    async fn input_available(&self, record: &CallRecord, input: &Value) {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        let args = || {
            let messages = record.messages.clone().unwrap_or_else(|| Arc::new([]));
            InputAvailable::new(input.clone(), call_id, messages, record.abort.clone())
        };
        self.firing(Some(tool))
            .run(
                "on_input_available",
                Hooks::has_on_input_available,
                Hooks::input_available,
                args,
            )
            .await;
        let known = CallValues::default();
        let shown = || Payload::of(Some(tool), call_id, tool.id(), Phase::Input, input, known);
        let event = |payload| EventKind::InputAvailable { payload };
        self.parts
            .events
            .emit_shown(call_id, tool.id(), shown, event)
            .await;
    }

    /// What a call needs (see [`ApprovalRules::requirement`]).
    pub(crate) async fn approval_requirement(
        &self,
        record: &CallRecord,
        input: &Value,
    ) -> ApprovalRequirement {
        let check = ApprovalCheck {
            tool: &record.tool,
            call_id: &record.call_id,
            input,
            request_context: &record.request_context,
            requester: record.requester.as_deref(),
        };
        self.parts.approval.requirement(&check).await
    }

    /// What a stored call needs with `input` (its edited input), as the
    /// approval rules say for a new call: what an edit under several
    /// approvals is held to.
    pub(crate) async fn stored_requirement(
        &self,
        call: &PendingCall,
        input: &Value,
    ) -> ApprovalRequirement {
        let Some(tool) = self.tool(&call.head.tool_id) else {
            return ApprovalRequirement::required();
        };
        let request_context = RequestContext::from(call.head.request_context.clone());
        let check = ApprovalCheck {
            tool,
            call_id: &call.head.call_id,
            input,
            request_context: &request_context,
            requester: call.head.requester.as_deref(),
        };
        self.parts.approval.requirement(&check).await
    }

    /// A call its tool's approval policy refused outright: it fails with
    /// the policy's reason, which the model reads; nothing is stored.
    async fn refused_by_policy(
        &self,
        record: &CallRecord,
        input: Value,
        reason: &str,
    ) -> CallOutcome {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        tracing::info!(reason, "tool call refused by its approval policy");
        let error = ModelError::new(
            ErrorKind::Execution,
            format!("Tool {} refused this call: {reason}", tool.id()),
        );
        let known = CallValues::default().with(Phase::Input, &input);
        self.failed(Some(tool), call_id, tool.id(), error, known)
            .await
    }

    /// Whether a standing rule approves the call (needing `approvals`),
    /// recorded in the audit log naming the rule and its author.
    async fn approved_by_rule(
        &self,
        record: &CallRecord,
        input: &Value,
        approvals: &RequiredApprovals,
    ) -> bool {
        let (call_id, tool_id) = (record.call_id.as_str(), record.tool.id());
        let call = RuleSubject {
            tool_id,
            input,
            requester: record.requester.as_deref(),
            now_ms: now_ms(),
        };
        let Some(rule) = self
            .parts
            .approval
            .standing_approval(&call, approvals)
            .await
        else {
            return false;
        };
        tracing::info!(rule_id = %rule.rule_id, author = %rule.author, "tool call approved by a standing rule");
        self.parts
            .stored
            .audit(approved_by_rule(call_id, tool_id, &rule))
            .await;
        true
    }

    /// Stores the call, waiting for `approvals`, and asks for a decision.
    pub(crate) async fn request_approval(
        &self,
        record: &CallRecord,
        input: Value,
        approvals: RequiredApprovals,
    ) -> CallOutcome {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        let tool_id = tool.id();
        if self.parts.approval.forbids_self_approval() && record.requester.is_none() {
            // Nobody could tell whether its approver asked for it.
            let error = ModelError::new(
                ErrorKind::Execution,
                format!(
                    "Tool {tool_id} needs approval, and this runtime forbids approving one's own calls, so the call must say who asked for it (its requester), and it does not."
                ),
            );
            let known = CallValues::default().with(Phase::Input, &input);
            return self
                .failed(Some(tool), call_id, tool_id, error, known)
                .await;
        }
        let mut pending = self.pending_call(record, PendingKind::Approval, input.clone(), None);
        pending.approvals = Some(approvals);
        let known = CallValues::default();
        let shown = self
            .shown_in_notifications(tool, call_id, Phase::Approval, &input, known)
            .await;
        let notified = self
            .parts
            .stored
            .notifications()
            .waiting(tool, &pending, shown);
        if let Err(error) = self.parts.stored.insert(pending, notified).await {
            tracing::error!(%error, "could not store the call awaiting approval");
            let error = ModelError::new(
                ErrorKind::Execution,
                format!("Tool {tool_id} needs approval, but the call could not be stored: {error}"),
            );
            let known = CallValues::default().with(Phase::Input, &input);
            return self
                .failed(Some(tool), call_id, tool_id, error, known)
                .await;
        }
        tracing::info!("tool call waits for approval");
        let known = CallValues::default();
        let shown = || Payload::of(Some(tool), call_id, tool_id, Phase::Approval, &input, known);
        let event = |payload| EventKind::ApprovalRequired {
            payload,
            resume_schema: decision_schema(),
        };
        self.parts
            .events
            .emit_shown(call_id, tool_id, shown, event)
            .await;
        CallOutcome::ApprovalRequired {
            call_id: record.call_id.clone(),
            input,
            resume_schema: Some(decision_schema()),
        }
    }

    /// Stores a call to a declaration-only tool until the application gives
    /// its output (`respond`) or declines it.
    async fn await_output(&self, record: &CallRecord, input: Value) -> CallOutcome {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        let tool_id = tool.id();
        let pending = self.pending_call(record, PendingKind::Output, input.clone(), None);
        if let Err(error) = self.parts.stored.insert(pending, Vec::new()).await {
            tracing::error!(%error, "could not store the call awaiting its output");
            let error = ModelError::new(
                ErrorKind::Execution,
                format!(
                    "Tool {tool_id} gets its result from the application, but the call could not be stored: {error}"
                ),
            );
            let known = CallValues::default().with(Phase::Input, &input);
            return self
                .failed(Some(tool), call_id, tool_id, error, known)
                .await;
        }
        tracing::info!("tool call waits for its output from the application");
        let output_schema = tool.definition().output_schema.clone();
        self.parts
            .events
            .emit(call_id, tool_id, || EventKind::AwaitingOutput {
                output_schema: output_schema.clone(),
            });
        CallOutcome::AwaitingOutput {
            call_id: record.call_id.clone(),
            input,
            output_schema,
        }
    }

    /// Runs an admitted call as a background task (registered for `cancel`
    /// by `guard` until it ends). A new call's task is stored and claimed
    /// inside the spawned task, so a caller that stops waiting cannot leave
    /// it stored but never started, or claimed but never run; the caller
    /// waits only until it is stored.
    pub(crate) async fn run_background(
        &self,
        mut record: CallRecord,
        admitted: Admitted,
        config: BackgroundConfig,
        guard: RunningGuard,
    ) -> CallOutcome {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                "no tokio runtime to run a background task on; running it in the foreground"
            );
            if record.lease.is_none() {
                match self.store_task(&record, admitted.input(), false).await {
                    Ok(Some(lease)) => record.lease = Some(lease),
                    Ok(None) => return self.left_to_worker(&record, &config).await,
                    Err(failed) => return failed,
                }
            }
            return self.run_here(&record, admitted, guard).await;
        };
        let task_id = record.call_id.clone();
        let (tx, slot) = watch::channel(None);
        self.parts.tasks.start(task_id.clone(), slot);
        let (stored_tx, stored) = tokio::sync::oneshot::channel();
        let path = self.clone();
        let disposition = config.disposition;
        let task = async move {
            let task_id = record.call_id.clone();
            if record.lease.is_none() {
                match path.store_task(&record, admitted.input(), false).await {
                    Ok(Some(lease)) => record.lease = Some(lease),
                    Ok(None) => {
                        // A worker claimed it in between: its outcome will
                        // be in the store, where `wait` reads it.
                        let _ = stored_tx.send(Ok(()));
                        path.parts.tasks.finished(task_id);
                        return;
                    }
                    Err(failed) => {
                        let _ = tx.send(Some(failed.clone()));
                        let _ = stored_tx.send(Err(failed));
                        path.parts.tasks.finished(task_id);
                        return;
                    }
                }
            }
            tracing::info!(task_id, "tool call started as a background task");
            let (call_id, tool_id) = (record.call_id.clone(), record.tool.id().to_owned());
            path.parts
                .events
                .emit(&call_id, &tool_id, || EventKind::BackgroundStarted {
                    task_id: task_id.clone(),
                });
            let _ = stored_tx.send(Ok(()));
            let attempts = path.attempts(&record, admitted, &config).await;
            drop(guard);
            let outcome = path.settle(&record, attempts.last).await;
            if let Some(why) = record.lease.as_ref().and_then(Lease::not_recorded) {
                // Not what the store records: `wait` reads the store instead.
                tracing::warn!(
                    task_id,
                    reason = why.reason(),
                    "background task ended here without its outcome recorded"
                );
                path.parts.tasks.finished(task_id);
                return;
            }
            let _ = tx.send(Some(outcome.clone()));
            let result = BackgroundResult {
                task_id,
                call_id,
                tool_id,
                outcome,
                attempts: attempts.count,
            };
            tracing::info!(task_id = %result.task_id, attempts = result.attempts, "background task finished");
            path.parts.tasks.callback(&result);
            path.parts.tasks.finished(result.task_id.clone());
            path.parts
                .events
                .emit(&result.call_id, &result.tool_id, || {
                    EventKind::BackgroundCompleted {
                        task_id: result.task_id.clone(),
                        outcome: result.outcome.clone(),
                    }
                });
        };
        handle.spawn(task.instrument(tracing::Span::current()));
        if let Ok(Err(failed)) = stored.await {
            return failed;
        }
        match disposition {
            Disposition::Deferred => CallOutcome::BackgroundStarted { task_id },
            Disposition::Foreground => self.parts.tasks.outcome(&task_id).await,
        }
    }

    /// Runs the attempts of a background call: each under the time limit
    /// with an abort signal of its own, retried after a failure or a timeout
    /// (not after a cancel).
    async fn attempts(
        &self,
        record: &CallRecord,
        admitted: Admitted,
        config: &BackgroundConfig,
    ) -> Attempts {
        let limit = config
            .timeout_ms
            .map(Duration::from_millis)
            .or(record.timeout);
        // A recovered task goes on counting from the attempts before the crash.
        let mut count = record.lease.as_ref().map_or(0, |lease| lease.attempt() - 1);
        loop {
            count += 1;
            // Cancel fires the call's signal, and so this child; a timeout fires only the child.
            let abort = record.abort.child();
            let attempt = admitted
                .clone()
                .with_abort_signal(abort.clone())
                .with_attempt(count);
            let ran = self
                .run_once(attempt, &abort, limit, record.lease.as_ref())
                .await;
            if ran.lost.is_some() {
                return Attempts { last: ran, count };
            }
            let timed_out =
                ran.timed_out && !record.abort.is_aborted() && ran.outcome == Outcome::Aborted;
            let retryable = timed_out
                || ran
                    .outcome
                    .error()
                    .is_some_and(|e| matches!(e.kind(), ErrorKind::Execution | ErrorKind::Panic));
            if retryable && count <= config.max_retries {
                tracing::warn!(
                    attempt = count,
                    timed_out,
                    "background attempt failed; retrying"
                );
                continue;
            }
            let last = if timed_out {
                let ms = limit.map_or(0, |l| l.as_millis());
                let error = ModelError::new(
                    ErrorKind::Execution,
                    format!(
                        "Tool {} timed out after {ms} ms ({count} attempt{})",
                        record.tool.id(),
                        if count == 1 { "" } else { "s" }
                    ),
                );
                tracing::warn!(call_id = %record.call_id, "background tool call aborted: timed out");
                // Reported as the failure it is, not as an abort.
                Ran {
                    outcome: Outcome::Failed { error },
                    timed_out: false,
                    lost: None,
                }
            } else {
                ran
            };
            return Attempts { last, count };
        }
    }
}

/// The attempts of a background call.
struct Attempts {
    /// How the last attempt ended.
    last: Ran,
    /// How many ran (1 + retries used).
    count: u32,
}

impl Entry {
    /// The `step` field of the call's span.
    fn step(&self) -> &'static str {
        match self {
            Entry::New => "call",
            Entry::Claimed(_) => "run",
            Entry::Resumed { .. } => "resume",
        }
    }
}

/// A call path on a memory store with `tools` and defaults otherwise, for
/// the components' unit tests (no `Runtime`).
#[cfg(test)]
pub(crate) fn test_path(tools: Vec<Tool>) -> CallPath {
    let stored = StoredCalls::in_memory();
    CallPath::new(PathParts {
        tools: ToolSet::new(tools).expect("distinct tool ids"),
        hooks: Hooks::new(),
        hook_timeout: crate::hook_queue::DEFAULT_HOOK_TIMEOUT,
        approval: ApprovalRules::default(),
        events: EventBus::new(16),
        running: Arc::default(),
        tasks: Tasks::new(stored.clone(), 16, None, None),
        stored,
        timeout: None,
        tool_timeouts: HashMap::new(),
        leave_tasks_to_workers: false,
        state: AppState::new(),
    })
}

/// Now, in milliseconds since the Unix epoch (expiry times are kept so).
pub(crate) fn now_ms() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_core::{BackgroundConfig, ToolError};

    use super::*;

    fn tool(id: &str, approval: bool) -> Tool {
        Tool::builder(id)
            .description("Echoes its input")
            .require_approval(approval)
            .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_call_runs_to_its_outcome_and_an_unknown_tool_fails_for_the_model() {
        let path = test_path(vec![tool("echo", false)]);
        let outcome = path
            .call(ToolCall::new("c1", "echo", json!({ "n": 1 })))
            .await;
        assert_eq!(outcome.output(), Some(&json!({ "n": 1 })));
        let unknown = path.call(ToolCall::new("c2", "nope", json!({}))).await;
        assert_eq!(unknown.error().unwrap().kind(), ErrorKind::UnknownTool);
        assert!(
            path.stored().get("c1").await.unwrap().is_none(),
            "a plain call is not stored"
        );
    }

    #[tokio::test]
    async fn the_approval_gate_stores_the_call_and_runs_nothing() {
        let path = test_path(vec![tool("delete", true)]);
        let outcome = path
            .call(ToolCall::new("c1", "delete", json!({ "path": "/x" })))
            .await;
        assert!(
            matches!(outcome, CallOutcome::ApprovalRequired { .. }),
            "{outcome:?}"
        );
        let waiting = path.stored().waiting().await.unwrap();
        assert_eq!(waiting.len(), 1);
        assert_eq!(
            (waiting[0].call.kind, &waiting[0].call.input),
            (PendingKind::Approval, &json!({ "path": "/x" }))
        );
    }

    #[tokio::test]
    async fn a_background_call_is_a_stored_task_whose_outcome_the_tasks_give() {
        let report = Tool::builder("report")
            .description("Builds a report")
            .background(BackgroundConfig::new())
            .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("ready")) })
            .build()
            .unwrap();
        let path = test_path(vec![report]);
        let started = path.call(ToolCall::new("t1", "report", json!({}))).await;
        assert_eq!(
            started,
            CallOutcome::BackgroundStarted {
                task_id: "t1".into()
            }
        );
        assert_eq!(
            path.tasks().wait("t1").await.unwrap().output(),
            Some(&json!("ready"))
        );
        let stored = path.stored().get("t1").await.unwrap().unwrap();
        assert!(
            matches!(stored.state, crate::CallState::Settled { .. }),
            "recorded: {stored:?}"
        );
    }

    #[test]
    fn cancel_names_a_call_that_is_not_running() {
        let path = test_path(vec![]);
        assert!(matches!(
            path.cancel("c1"),
            Err(RuntimeError::NotRunning { .. })
        ));
    }
}
