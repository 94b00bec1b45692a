//! The runtime's call path, written once. Every entry point goes through
//! [`Runtime::run_call`]: `call`, streamed input's `finish`, `approve`,
//! `resume` (and so the MCP server and `ProviderStream`, which use them).
//!
//! 1. Look up the tool.
//! 2. Admit ([`tool_core::Tool::admit`]): parse and repair the input,
//!    validate it, the request context and, on resume, the resume data.
//! 3. New calls only: `on_input_available` (the tool's, then the
//!    runtime's) and its event.
//! 4. New calls only: the approval gate; a call that needs approval is
//!    stored and ends here as `ApprovalRequired`.
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
use tool_core::transform::Phase;
use tool_core::{
    AbortSignal, Admitted, BackgroundConfig, CallContext, Disposition, ErrorKind, ModelError,
    Outcome, RequestContext, Tool,
};
use tracing::Instrument as _;

use crate::abort::{RunningGuard, with_limit};
use crate::call::ToolCall;
use crate::error::RuntimeError;
use crate::events::{EventKind, Notice, Payload};
use crate::outcome::CallOutcome;
use crate::runtime::Runtime;
use crate::store::{Claim, Lease, PendingCall, PendingKind, RecordedOutcome, Settlement, Verdict};

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
    pub(crate) abort: AbortSignal,
    pub(crate) timeout: Option<Duration>,
    /// For a stored call, the claim it runs under.
    pub(crate) lease: Option<Lease>,
}

/// One execution of a call: its outcome, and whether its time limit fired.
pub(crate) struct Ran {
    pub(crate) outcome: Outcome,
    pub(crate) timed_out: bool,
}

/// The span every step of a call runs in.
pub(crate) fn call_span(step: &'static str, tool_id: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!("tool.call", step, tool_id = %tool_id, call_id = %call_id)
}

impl Runtime {
    /// Runs one tool call and returns its outcome.
    ///
    /// Order: look up the tool → parse (with safe repairs) and validate the
    /// input → validate the request context → `on_input_available` → approval
    /// gate → execute (in the background for background tools) → validate
    /// the suspend payload or the output → `to_model_output` → `on_output`.
    /// Never panics and never returns an error: a failure is
    /// [`CallOutcome::Failed`] with the error object the model reads.
    ///
    /// Nothing happens until the returned future is first polled, and it
    /// owns what it needs: it can be spawned.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ErrorKind, Tool, ToolError};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let weather = Tool::builder("weather-tool").description("Get the weather")
    ///     .input_schema(json!({ "type": "object", "properties": { "location": { "type": "string" } }, "required": ["location"] }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "location": input["location"], "celsius": 21 })) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(weather).build().unwrap();
    ///
    /// let ok = tokio::spawn(runtime.call(ToolCall::new("c1", "weather-tool", r#"{"location": "Paris"}"#)));
    /// assert_eq!(ok.await.unwrap().output().unwrap()["celsius"], 21);
    ///
    /// let bad = runtime.call(ToolCall::new("c2", "weather-tool", "{}")).await;
    /// assert_eq!(bad.error().unwrap().kind(), ErrorKind::InputValidation);
    /// # });
    /// ```
    pub fn call(&self, call: ToolCall) -> impl Future<Output = CallOutcome> + Send + 'static {
        let runtime = self.clone();
        async move { runtime.run_call(call, Entry::New, None).await }
    }

    /// The pipeline (see the module docs), in the call's span and boxed:
    /// its state machine is about 5 KB, and every caller's future (a
    /// spawned call, an MCP request) would otherwise carry it and copy it
    /// on each move.
    pub(crate) fn run_call(
        &self,
        call: ToolCall,
        entry: Entry,
        streamed: Option<Streamed>,
    ) -> Pin<Box<dyn Future<Output = CallOutcome> + Send + '_>> {
        let (span, streamed) = match streamed {
            Some(Streamed { abort, guard, span }) => (span, Some((abort, guard))),
            None => (call_span(entry.step(), &call.tool_id, &call.call_id), None),
        };
        Box::pin(self.run_in_span(call, entry, streamed).instrument(span))
    }

    async fn run_in_span(
        &self,
        call: ToolCall,
        entry: Entry,
        streamed: Option<(AbortSignal, RunningGuard)>,
    ) -> CallOutcome {
        let Some(tool) = self.inner.tools.get(&call.tool_id).cloned() else {
            let error = self.inner.tools.unknown_tool(&call.tool_id);
            return self.failed(None, &call.call_id, &call.tool_id, error);
        };
        let (abort, guard) = match streamed {
            Some((abort, guard)) => (abort, Some(guard)),
            None => (AbortSignal::new(), None),
        };
        let ToolCall {
            call_id,
            input,
            request_context,
            messages,
            timeout,
            extensions,
            agent,
            workflow,
            ..
        } = call;
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
        let record = CallRecord {
            timeout: timeout.or_else(|| self.timeout_of(&tool)),
            tool,
            call_id,
            request_context,
            messages: (!messages.is_empty()).then(|| Arc::from(messages)),
            abort,
            lease,
        };
        let mut ctx = self.call_context(&record).with_extensions(extensions);
        if let Some((data, payload)) = resume {
            ctx = ctx.resuming(data, payload);
        }
        if let Some(agent) = agent {
            ctx = ctx.with_agent(agent);
        }
        if let Some(workflow) = workflow {
            ctx = ctx.with_workflow(workflow);
        }
        let admitted = match record.tool.admit(input, ctx) {
            Ok(admitted) => admitted,
            Err(error) => {
                let outcome =
                    self.failed(Some(&record.tool), &record.call_id, record.tool.id(), error);
                return self.record(&record, outcome).await;
            }
        };
        if is_new {
            self.input_available(&record, admitted.input());
            if self.needs_approval(&record, admitted.input()) {
                return self.request_approval(&record, admitted.into_input()).await;
            }
        }
        self.execute(record, admitted, guard, may_background).await
    }

    /// The context a call's tool runs with: request context, messages,
    /// abort signal, progress to events, the call span as parent.
    fn call_context(&self, record: &CallRecord) -> CallContext {
        let mut ctx = CallContext::new(record.call_id.as_str())
            .with_request_context(record.request_context.clone())
            .with_abort_signal(record.abort.clone())
            .with_attempt(record.lease.as_ref().map_or(1, Lease::attempt));
        if let Some(messages) = &record.messages {
            ctx = ctx.with_shared_messages(Arc::clone(messages));
        }
        let events = &self.inner.events;
        if events.noticed(&record.call_id) {
            // Progress reaches the subscribers and the call's watchers
            // present when the call started.
            let events = events.clone();
            let (call_id, tool_id) = (record.call_id.clone(), record.tool.id().to_owned());
            ctx = ctx.on_progress(move |progress| {
                events.notice(&call_id, &tool_id, Notice::Progress(progress));
            });
            let events = self.inner.events.clone();
            let (call_id, tool_id) = (record.call_id.clone(), record.tool.id().to_owned());
            ctx = ctx.on_log(move |record| {
                events.notice(&call_id, &tool_id, Notice::Log(record));
            });
        }
        let span = tracing::Span::current();
        if !span.is_disabled() {
            ctx = ctx.with_parent_span(span);
        }
        ctx
    }

    /// The time limit of a tool's calls: its own, else the runtime's.
    pub(crate) fn timeout_of(&self, tool: &Tool) -> Option<Duration> {
        self.inner
            .tool_timeouts
            .get(tool.id())
            .copied()
            .or(self.inner.timeout)
    }

    /// Executes an admitted call, in the background when the tool says so
    /// (and `may_background`), and settles it.
    async fn execute(
        &self,
        mut record: CallRecord,
        admitted: Admitted,
        guard: Option<RunningGuard>,
        may_background: bool,
    ) -> CallOutcome {
        // Registered for `cancel` until the call ends (across the attempts of
        // a background task).
        let guard = guard.unwrap_or_else(|| {
            self.inner
                .running
                .register(&record.call_id, record.abort.clone())
        });
        if let Some(config) = record
            .tool
            .definition()
            .background
            .as_ref()
            .filter(|b| b.enabled && may_background)
        {
            let config = config.clone();
            if record.lease.is_none() {
                // A new call: the task is a stored call first, claimed by
                // this runtime, so that a crash cannot lose it.
                match self.store_task(&record, admitted.input()).await {
                    Ok(Some(lease)) => record.lease = Some(lease),
                    // Left to workers, or a worker claimed it first.
                    Ok(None) => return self.left_to_worker(&record, &config).await,
                    Err(failed) => return failed,
                }
            }
            // Boxed: a background run's state would otherwise size every
            // call's future.
            return Box::pin(self.run_background(record, admitted, config, guard)).await;
        }
        let ran = self
            .run_once(
                admitted,
                &record.abort,
                record.timeout,
                record.lease.as_ref(),
            )
            .await;
        drop(guard);
        self.settle(&record, ran).await
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
        let running = async {
            match limit {
                None => (admitted.run().await, false),
                Some(limit) => with_limit(std::pin::pin!(admitted.run()), limit, abort).await,
            }
        };
        let mut running = std::pin::pin!(running);
        let (outcome, timed_out) = match lease {
            None => running.await,
            Some(lease) => lease.hold(running.as_mut(), abort).await,
        };
        if abort.is_aborted() && outcome != Outcome::Aborted {
            // The tool wound down on its own after the signal fired (returned
            // early, or an error): the call was still aborted.
            return Ran {
                outcome: Outcome::Aborted,
                timed_out,
            };
        }
        Ran { outcome, timed_out }
    }

    /// Side effects of how a call ended: store a suspension, fire
    /// `on_output`, log an abort, emit the event.
    pub(crate) async fn settle(&self, record: &CallRecord, ran: Ran) -> CallOutcome {
        let tool = &record.tool;
        let (call_id, tool_id) = (record.call_id.as_str(), tool.id());
        let events = &self.inner.events;
        match &ran.outcome {
            Outcome::Completed { output, .. } => {
                let args = OutputAvailable::new(output, call_id, tool_id, &record.abort);
                tool.hooks().output(&args);
                self.inner.hooks.output(&args);
                events.emit(call_id, tool_id, || EventKind::Output {
                    payload: Payload::of(Some(tool), call_id, tool_id, Phase::Output, output),
                });
            }
            Outcome::Suspended {
                input,
                payload: suspended,
                resume_schema,
                ..
            } => {
                if let Err(error) = self.store_suspension(record, input, suspended).await {
                    tracing::error!(%error, "could not store the suspended call");
                    let error = ModelError::new(
                        ErrorKind::Execution,
                        format!(
                            "Tool {tool_id} suspended, but the suspension could not be stored: {error}"
                        ),
                    );
                    let failed = self.failed(Some(tool), call_id, tool_id, error);
                    return self.record(record, failed).await;
                }
                tracing::info!("tool call suspended");
                events.emit(call_id, tool_id, || EventKind::Suspended {
                    payload: Payload::of(Some(tool), call_id, tool_id, Phase::Suspend, suspended),
                    resume_schema: resume_schema.clone(),
                });
            }
            Outcome::Failed { error } => {
                events.emit(call_id, tool_id, || EventKind::Error {
                    payload: Payload::of(
                        Some(tool),
                        call_id,
                        tool_id,
                        Phase::Error,
                        &error.to_json(),
                    ),
                });
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
        let Some(lease) = &record.lease else {
            let pending = self.pending_call(
                record,
                PendingKind::Suspended,
                input.clone(),
                Some(payload.clone()),
            );
            return self
                .inner
                .calls
                .insert(pending)
                .await
                .map_err(|e| e.to_string());
        };
        let settlement = Settlement::Suspended {
            payload: payload.clone(),
        };
        match lease.finish(settlement).await {
            Ok(true) => Ok(()),
            Ok(false) => Err("its claim was taken over by another instance".to_owned()),
            Err(error) => Err(error.to_string()),
        }
    }

    /// Stores a new background call as a task and claims it; `None` when it
    /// is left to workers, or a worker claimed it in between.
    async fn store_task(
        &self,
        record: &CallRecord,
        input: &Value,
    ) -> Result<Option<Lease>, CallOutcome> {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        let not_stored = |error: String| {
            tracing::error!(%error, "could not store the background task");
            let error = ModelError::new(
                ErrorKind::Execution,
                format!(
                    "Tool {} runs in the background, but its task could not be stored: {error}",
                    tool.id()
                ),
            );
            self.failed(Some(tool), call_id, tool.id(), error)
        };
        let task = self.pending_call(record, PendingKind::Task, input.clone(), None);
        let calls = &self.inner.calls;
        calls
            .insert(task)
            .await
            .map_err(|e| not_stored(e.to_string()))?;
        if self.inner.leave_tasks_to_workers {
            return Ok(None);
        }
        match calls
            .decide(call_id, PendingKind::Task, Claim::Run(None))
            .await
        {
            Ok(Verdict::Claimed(_, lease)) => Ok(Some(lease)),
            Ok(_) | Err(RuntimeError::Running { .. }) => Ok(None),
            Err(error) => Err(not_stored(error.to_string())),
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
        self.inner
            .events
            .emit(&record.call_id, record.tool.id(), || {
                EventKind::BackgroundStarted {
                    task_id: task_id.clone(),
                }
            });
        match config.disposition {
            Disposition::Deferred => CallOutcome::BackgroundStarted { task_id },
            Disposition::Foreground => self.task_outcome(&task_id).await,
        }
    }

    /// Records the final outcome of a stored call, so that a decision asked
    /// again (from any instance) returns it. A new call has nothing to record.
    pub(crate) async fn record(&self, record: &CallRecord, outcome: CallOutcome) -> CallOutcome {
        // The lease first: copying the outcome is for stored calls only.
        let Some(lease) = &record.lease else {
            return outcome;
        };
        let Some(recorded) = RecordedOutcome::from_outcome(&outcome) else {
            return outcome;
        };
        match lease.finish(Settlement::Settled(recorded)).await {
            Ok(true) => {}
            Ok(false) => tracing::error!(
                "the call's claim was taken over by another instance; its outcome here is not recorded"
            ),
            Err(error) => tracing::error!(%error, "could not record the outcome of a stored call"),
        }
        outcome
    }

    /// The stored form of a call.
    pub(crate) fn pending_call(
        &self,
        record: &CallRecord,
        kind: PendingKind,
        input: Value,
        payload: Option<Value>,
    ) -> PendingCall {
        let mut pending = PendingCall::new(record.call_id.as_str(), record.tool.id(), kind, input);
        pending.request_context = record.request_context.values().clone();
        pending.messages = record
            .messages
            .as_deref()
            .map(<[Value]>::to_vec)
            .unwrap_or_default();
        pending.payload = payload;
        pending
    }

    /// A failure before execution: emit the error event, return the outcome.
    pub(crate) fn failed(
        &self,
        tool: Option<&Tool>,
        call_id: &str,
        tool_id: &str,
        error: ModelError,
    ) -> CallOutcome {
        self.inner
            .events
            .emit(call_id, tool_id, || EventKind::Error {
                payload: Payload::of(tool, call_id, tool_id, Phase::Error, &error.to_json()),
            });
        CallOutcome::failed(error)
    }

    /// `on_input_available` (the tool's, then the runtime's) and its event.
    fn input_available(&self, record: &CallRecord, input: &Value) {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        let messages = record.messages.as_deref().unwrap_or_default();
        let args = InputAvailable::new(input, call_id, messages, &record.abort);
        tool.hooks().input_available(&args);
        self.inner.hooks.input_available(&args);
        self.inner
            .events
            .emit(call_id, tool.id(), || EventKind::InputAvailable {
                payload: Payload::of(Some(tool), call_id, tool.id(), Phase::Input, input),
            });
    }
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
