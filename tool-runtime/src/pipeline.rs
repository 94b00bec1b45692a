//! The call path shared by `call`, streamed input, `approve` and `resume`:
//! look up the tool, validate, fire hooks, gate on approval, execute (in the
//! foreground or as a background task) with a time limit and the abort
//! signal, then settle: store a suspension, fire `on_output`, emit events.
//!
//! Everything before execute is synchronous and happens when `call` is
//! called; the returned future holds only what the execution needs, and a
//! call with no hooks, no subscriber and no time limit allocates little
//! beyond what `Tool::execute` does.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tool_core::hooks::{InputAvailable, OutputAvailable};
use tool_core::transform::Phase;
use tool_core::{
    AbortSignal, CallContext, ErrorKind, McpContext, ModelError, Outcome, RequestContext, Tool,
};
use tracing::Instrument as _;

use crate::abort::{RunningGuard, tracked, with_limit};
use crate::call::ToolCall;
use crate::events::{EventKind, payload};
use crate::runtime::Runtime;
use crate::store::{PendingCall, PendingKind};

/// A call ready to execute: validated, past the approval gate.
pub(crate) struct Run {
    pub(crate) tool: Tool,
    pub(crate) call_id: String,
    /// The validated input.
    pub(crate) input: Value,
    pub(crate) request_context: RequestContext,
    pub(crate) messages: Option<Arc<[Value]>>,
    pub(crate) abort: AbortSignal,
    pub(crate) timeout: Option<Duration>,
    /// The MCP client of the call, when the tool may ask it for input.
    pub(crate) mcp: Option<McpContext>,
    /// On resume: the resume data and the payload the call suspended with.
    pub(crate) resume: Option<Box<(Value, Option<Value>)>>,
    /// Set when the abort signal is already registered for `cancel`
    /// (streamed input, background tasks).
    pub(crate) guard: Option<RunningGuard>,
}

/// Whether a call goes on to execute, or stopped before (failed
/// validation, waits for approval).
pub(crate) enum Admitted {
    /// Execute it.
    Run(Run),
    /// It ended here.
    Done(Outcome),
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
    /// [`Outcome::Failed`] with the error object the model reads.
    ///
    /// The steps up to execute run when `call` is called; the returned
    /// future runs the tool.
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
    /// let ok = runtime.call(ToolCall::new("c1", "weather-tool", r#"{"location": "Paris"}"#)).await;
    /// assert_eq!(ok.output().unwrap()["celsius"], 21);
    ///
    /// let bad = runtime.call(ToolCall::new("c2", "weather-tool", "{}")).await;
    /// assert_eq!(bad.error().unwrap().kind(), ErrorKind::InputValidation);
    /// # });
    /// ```
    pub fn call(&self, call: ToolCall) -> impl Future<Output = Outcome> + Send + '_ {
        let span = call_span("call", &call.tool_id, &call.call_id);
        let admitted = {
            let _entered = span.enter();
            self.admit(call, None)
        };
        async move {
            match admitted {
                Admitted::Run(run) => self.execute(run).instrument(span).await,
                Admitted::Done(outcome) => outcome,
            }
        }
    }

    /// The synchronous part of a call: look up, validate, `on_input_available`,
    /// approval gate.
    /// `streamed` is the abort signal (already registered) of streamed input.
    pub(crate) fn admit(
        &self,
        call: ToolCall,
        streamed: Option<(AbortSignal, RunningGuard)>,
    ) -> Admitted {
        let ToolCall {
            call_id,
            tool_id,
            input,
            request_context,
            messages,
            timeout,
            mcp,
        } = call;
        let Some(tool) = self.inner.tools.get(&tool_id) else {
            let error = self.inner.tools.unknown_tool(&tool_id);
            return Admitted::Done(self.failed(None, &call_id, &tool_id, error));
        };
        let input = match tool.validate_input(input) {
            Ok(input) => input,
            Err(error) => {
                return Admitted::Done(self.failed(Some(tool), &call_id, &tool_id, error));
            }
        };
        if let Err(error) = tool.validate_request_context(&request_context) {
            return Admitted::Done(self.failed(Some(tool), &call_id, &tool_id, error));
        }
        let (abort, guard) = match streamed {
            Some((abort, guard)) => (abort, Some(guard)),
            None => (AbortSignal::new(), None),
        };
        self.input_available(tool, &call_id, &input, &messages, &abort);
        if self.needs_approval(tool, &call_id, &input, &request_context) {
            return Admitted::Done(self.request_approval(
                tool,
                call_id,
                input,
                &request_context,
                &messages,
            ));
        }
        Admitted::Run(Run {
            tool: tool.clone(),
            call_id,
            input,
            request_context,
            messages: (!messages.is_empty()).then(|| Arc::from(messages)),
            abort,
            timeout: timeout.or_else(|| self.timeout_of(tool)),
            mcp,
            resume: None,
            guard,
        })
    }

    /// The time limit of a tool's calls: its own, else the runtime's.
    pub(crate) fn timeout_of(&self, tool: &Tool) -> Option<Duration> {
        if self.inner.tool_timeouts.is_empty() {
            return self.inner.timeout;
        }
        self.inner
            .tool_timeouts
            .get(tool.id())
            .copied()
            .or(self.inner.timeout)
    }

    /// Executes a call that passed the gate, in the background when the tool
    /// says so, and settles it.
    pub(crate) async fn execute(&self, mut run: Run) -> Outcome {
        if let Some(config) = run
            .tool
            .definition()
            .background
            .as_ref()
            .filter(|b| b.enabled)
        {
            let config = config.clone();
            // Boxed: keeps the background machinery out of every call's future.
            return Box::pin(self.run_background(run, config)).await;
        }
        let (outcome, timed_out) = self.run_as_given(&mut run).await;
        run.guard = None;
        self.settle(&run, outcome, timed_out)
    }

    /// One execution with the call's own input, request context, abort
    /// signal and time limit. The input moves into the tool: a suspended
    /// outcome hands it back for storing.
    pub(crate) async fn run_as_given(&self, run: &mut Run) -> (Outcome, bool) {
        let input = std::mem::take(&mut run.input);
        let request_context = run.request_context.clone();
        self.run_once(run, input, request_context, &run.abort, run.timeout)
            .await
    }

    /// One execution of the tool under a time limit; true when the limit
    /// fired. A call whose abort signal fired ends as `Aborted`, whatever the
    /// tool returned after it.
    pub(crate) async fn run_once(
        &self,
        run: &Run,
        input: Value,
        request_context: RequestContext,
        abort: &AbortSignal,
        limit: Option<Duration>,
    ) -> (Outcome, bool) {
        let mut ctx = CallContext::new(run.call_id.as_str())
            .with_request_context(request_context)
            .with_abort_signal(abort.clone());
        if let Some(messages) = &run.messages {
            ctx = ctx.with_shared_messages(Arc::clone(messages));
        }
        let events = &self.inner.events;
        if events.active() {
            // Progress reaches the subscribers present when the call started.
            let events = events.clone();
            let (call_id, tool_id) = (run.call_id.clone(), run.tool.id().to_owned());
            ctx = ctx.on_progress(move |progress| {
                events.emit(&call_id, &tool_id, || EventKind::Progress(progress));
            });
        }
        let span = tracing::Span::current();
        if !span.is_disabled() {
            ctx = ctx.with_parent_span(span);
        }
        if let Some(mcp) = &run.mcp {
            ctx = ctx.with_mcp(mcp.clone());
        }
        if let Some(resume) = &run.resume {
            let (data, payload) = &**resume;
            ctx = ctx.resuming(data.clone(), payload.clone());
        }
        let mut running = pin!(run.tool.execute_validated(input, ctx));
        let registered = run.guard.is_some();
        let (outcome, timed_out) = match limit {
            None => (
                tracked(
                    running.as_mut(),
                    &self.inner.running,
                    &run.call_id,
                    abort,
                    registered,
                )
                .await,
                false,
            ),
            Some(limit) => {
                let _guard =
                    (!registered).then(|| self.inner.running.register(&run.call_id, abort.clone()));
                // Boxed: keeps the timer out of every call's future.
                Box::pin(with_limit(running.as_mut(), limit, abort)).await
            }
        };
        if abort.is_aborted() && outcome != Outcome::Aborted {
            // The tool wound down on its own after the signal fired (returned
            // early, or an error): the call was still aborted.
            return (Outcome::Aborted, timed_out);
        }
        (outcome, timed_out)
    }

    /// Side effects of how a call ended: store a suspension, fire
    /// `on_output`, log an abort, emit the event.
    pub(crate) fn settle(&self, run: &Run, outcome: Outcome, timed_out: bool) -> Outcome {
        let tool = &run.tool;
        let (call_id, tool_id) = (run.call_id.as_str(), tool.id());
        let events = &self.inner.events;
        match &outcome {
            Outcome::Completed { output, .. } => {
                let (tool_hook, runtime_hook) =
                    (tool.hooks().declared()[3], self.inner.hooks.declared()[3]);
                if tool_hook || runtime_hook {
                    let args = OutputAvailable::new(output, call_id, tool_id, &run.abort);
                    tool.hooks().output(&args);
                    self.inner.hooks.output(&args);
                }
                events.emit(call_id, tool_id, || EventKind::Output {
                    payload: payload(Some(tool), call_id, tool_id, Phase::Output, output),
                });
            }
            Outcome::Suspended {
                input,
                payload: suspended,
                resume_schema,
                ..
            } => {
                let mut pending =
                    PendingCall::new(call_id, tool_id, PendingKind::Suspended, input.clone());
                pending.request_context = run.request_context.values().clone();
                pending.messages = run
                    .messages
                    .as_deref()
                    .map(<[Value]>::to_vec)
                    .unwrap_or_default();
                pending.payload = Some(suspended.clone());
                if let Err(error) = self.inner.store.insert(&pending) {
                    tracing::error!(%error, "could not store the suspended call");
                    let error = ModelError::new(
                        ErrorKind::Execution,
                        format!(
                            "Tool {tool_id} suspended, but the suspension could not be stored: {error}"
                        ),
                    );
                    return self.failed(Some(tool), call_id, tool_id, error);
                }
                tracing::info!("tool call suspended");
                events.emit(call_id, tool_id, || EventKind::Suspended {
                    payload: payload(Some(tool), call_id, tool_id, Phase::Suspend, suspended),
                    resume_schema: resume_schema.clone(),
                });
            }
            Outcome::Failed { error } => {
                events.emit(call_id, tool_id, || EventKind::Error {
                    payload: payload(Some(tool), call_id, tool_id, Phase::Error, &error.to_json()),
                });
            }
            Outcome::Aborted => {
                let reason = if timed_out { "timed out" } else { "cancelled" };
                tracing::warn!(call_id, tool_id, reason, "tool call aborted");
                events.emit(call_id, tool_id, || EventKind::Aborted);
            }
            _ => {}
        }
        outcome
    }

    /// A failure before execution: emit the error event, return the outcome.
    pub(crate) fn failed(
        &self,
        tool: Option<&Tool>,
        call_id: &str,
        tool_id: &str,
        error: ModelError,
    ) -> Outcome {
        self.inner
            .events
            .emit(call_id, tool_id, || EventKind::Error {
                payload: payload(tool, call_id, tool_id, Phase::Error, &error.to_json()),
            });
        Outcome::Failed { error }
    }

    /// `on_input_available` (the tool's, then the runtime's) and its event.
    fn input_available(
        &self,
        tool: &Tool,
        call_id: &str,
        input: &Value,
        messages: &[Value],
        abort: &AbortSignal,
    ) {
        let (tool_hook, runtime_hook) =
            (tool.hooks().declared()[2], self.inner.hooks.declared()[2]);
        if tool_hook || runtime_hook {
            let args = InputAvailable::new(input, call_id, messages, abort);
            tool.hooks().input_available(&args);
            self.inner.hooks.input_available(&args);
        }
        self.inner
            .events
            .emit(call_id, tool.id(), || EventKind::InputAvailable {
                payload: payload(Some(tool), call_id, tool.id(), Phase::Input, input),
            });
    }
}
