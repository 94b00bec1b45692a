//! The call path shared by `call`, streamed input, `approve` and `resume`:
//! look up the tool, validate, fire hooks, gate on approval, execute (in the
//! foreground or as a background task) with a time limit and the abort
//! signal, then settle: store a suspension, fire `on_output`, emit events.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tool_core::hooks::{InputAvailable, OutputAvailable};
use tool_core::transform::Phase;
use tool_core::{AbortSignal, CallContext, ErrorKind, ModelError, Outcome, RequestContext, Tool};
use tracing::Instrument as _;

use crate::abort::{RunningGuard, with_limit};
use crate::call::ToolCall;
use crate::events::{EventKind, payload};
use crate::runtime::Runtime;
use crate::store::{PendingCall, PendingKind};

/// A call ready to execute: validated, past the approval gate.
#[derive(Clone)]
pub(crate) struct Run {
    pub(crate) tool: Tool,
    pub(crate) call_id: String,
    pub(crate) input: Value,
    pub(crate) request_context: RequestContext,
    pub(crate) messages: Arc<[Value]>,
    pub(crate) abort: AbortSignal,
    pub(crate) timeout: Option<Duration>,
    /// On resume: the resume data and the payload the call suspended with.
    pub(crate) resume: Option<(Value, Option<Value>)>,
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
    pub async fn call(&self, call: ToolCall) -> Outcome {
        let span = call_span("call", &call.tool_id, &call.call_id);
        self.start(call, None).instrument(span).await
    }

    /// The call path; `streamed` is the abort signal (already registered)
    /// of a call whose input was streamed.
    pub(crate) async fn start(
        &self,
        call: ToolCall,
        streamed: Option<(AbortSignal, RunningGuard)>,
    ) -> Outcome {
        let ToolCall {
            call_id,
            tool_id,
            input,
            request_context,
            messages,
            timeout,
        } = call;
        let Some(tool) = self.inner.tools.get(&tool_id) else {
            let error = self.inner.tools.unknown_tool(&tool_id);
            return self.failed(None, &call_id, &tool_id, error);
        };
        let input = match tool.validate_input(input) {
            Ok(input) => input,
            Err(error) => return self.failed(Some(tool), &call_id, &tool_id, error),
        };
        if let Err(error) = tool.validate_request_context(&request_context) {
            return self.failed(Some(tool), &call_id, &tool_id, error);
        }
        let messages: Arc<[Value]> = Arc::from(messages);
        let (abort, guard) = match streamed {
            Some(streamed) => streamed,
            None => {
                let abort = AbortSignal::new();
                let guard = self.inner.running.register(&call_id, abort.clone());
                (abort, guard)
            }
        };
        self.input_available(tool, &call_id, &input, &messages, &abort);
        if self.needs_approval(tool, &call_id, &input, &request_context) {
            return self.request_approval(tool, call_id, input, &request_context, &messages);
        }
        let timeout = timeout.or_else(|| self.timeout_of(tool));
        let run = Run {
            tool: tool.clone(),
            call_id,
            input,
            request_context,
            messages,
            abort,
            timeout,
            resume: None,
        };
        self.execute(run, guard).await
    }

    /// The time limit of a tool's calls: its own, else the runtime's.
    pub(crate) fn timeout_of(&self, tool: &Tool) -> Option<Duration> {
        self.inner
            .tool_timeouts
            .get(tool.id())
            .copied()
            .or(self.inner.timeout)
    }

    /// Executes a call that passed the gate, in the background when the tool
    /// says so, and settles it.
    pub(crate) async fn execute(&self, run: Run, guard: RunningGuard) -> Outcome {
        if let Some(config) = run
            .tool
            .definition()
            .background
            .as_ref()
            .filter(|b| b.enabled)
        {
            let config = config.clone();
            return self.run_background(run, guard, config).await;
        }
        let (outcome, timed_out) = self.run_once(&run, &run.abort, run.timeout).await;
        drop(guard);
        self.settle(&run, outcome, timed_out)
    }

    /// One execution of the tool under a time limit; true when the limit fired.
    pub(crate) async fn run_once(
        &self,
        run: &Run,
        abort: &AbortSignal,
        limit: Option<Duration>,
    ) -> (Outcome, bool) {
        let events = self.inner.events.clone();
        let (call_id, tool_id) = (run.call_id.clone(), run.tool.id().to_owned());
        let mut ctx = CallContext::new(run.call_id.as_str())
            .with_request_context(run.request_context.clone())
            .with_shared_messages(Arc::clone(&run.messages))
            .with_abort_signal(abort.clone())
            .with_parent_span(tracing::Span::current())
            .on_progress(move |progress| {
                events.emit(&call_id, &tool_id, || EventKind::Progress(progress));
            });
        if let Some((data, payload)) = &run.resume {
            ctx = ctx.resuming(data.clone(), payload.clone());
        }
        let running = run.tool.execute_validated(run.input.clone(), ctx);
        let (outcome, timed_out) = with_limit(running, limit, abort).await;
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
                let args = OutputAvailable::new(output, call_id, tool_id, &run.abort);
                tool.hooks().output(&args);
                self.inner.hooks.output(&args);
                events.emit(call_id, tool_id, || EventKind::Output {
                    payload: payload(Some(tool), call_id, tool_id, Phase::Output, output),
                });
            }
            Outcome::Suspended {
                payload: suspended,
                resume_schema,
                ..
            } => {
                let mut pending =
                    PendingCall::new(call_id, tool_id, PendingKind::Suspended, run.input.clone());
                pending.request_context = run.request_context.values().clone();
                pending.messages = run.messages.to_vec();
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
        let args = InputAvailable::new(input, call_id, messages, abort);
        tool.hooks().input_available(&args);
        self.inner.hooks.input_available(&args);
        self.inner
            .events
            .emit(call_id, tool.id(), || EventKind::InputAvailable {
                payload: payload(Some(tool), call_id, tool.id(), Phase::Input, input),
            });
    }
}
