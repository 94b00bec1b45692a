//! Execution context: what the caller gives a call ([`CallContext`]) and what
//! the tool's function sees of it ([`ToolContext`]).

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::abort::AbortSignal;
use crate::app_state::AppState;
use crate::error::ToolError;
use crate::extensions::Extensions;
use crate::host::{
    AgentContext, DecodedState, StateType, Workflow, WorkflowContext, WorkflowState,
};
use crate::idempotency::IdempotencyKey;
use crate::request_context::RequestContext;
use crate::suspend::{NoSuspend, SuspendPayload};

/// Progress reported by a running tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// Work done so far; increases over a call.
    pub value: f64,
    /// Total work, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What is happening now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// A log message a running tool wrote with [`Observer`] (`ctx.observe()`),
/// for the caller (events, MCP `notifications/message`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogRecord {
    /// How severe.
    pub level: tracing::Level,
    /// The message.
    pub message: String,
    /// Structured data logged with it ([`Observer::log`]), if any.
    pub data: Option<Value>,
}

impl LogRecord {
    /// A record of `message` at `level`.
    ///
    /// ```
    /// let record = tool_core::LogRecord::new(tracing::Level::WARN, "disk almost full");
    /// assert_eq!(record.level, tracing::Level::WARN);
    /// ```
    pub fn new(level: tracing::Level, message: impl Into<String>) -> Self {
        LogRecord {
            level,
            message: message.into(),
            data: None,
        }
    }

    /// The record with structured `data`.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let record = tool_core::LogRecord::new(tracing::Level::INFO, "fetched")
    ///     .with_data(json!({ "rows": 3 }));
    /// assert_eq!(record.data, Some(json!({ "rows": 3 })));
    /// ```
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

type LogSink = Arc<dyn Fn(LogRecord) + Send + Sync>;

type CustomSink = Arc<dyn Fn(Value) + Send + Sync>;

/// Sends a running tool's custom chunks to its caller (Mastra's
/// `context.writer`): from `ctx.writer()`. Each chunk is a serializable
/// value the caller receives in order with the call's progress and log
/// messages: a runtime's `Custom` event and watch notice, an agent's
/// `AgentChunk::Custom`, an MCP `notifications/message`. Chunks are for
/// the application and its UI, never the model; they are sent as written
/// (no display transform applies: the tool chose what to show).
///
/// ```
/// use serde_json::json;
/// use tool_core::{CallContext, Tool, ToolError};
///
/// #[derive(serde::Serialize)]
/// struct Row { n: u32 }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let import = Tool::builder("import").description("Imports rows")
///     .execute(|_input, ctx| async move {
///         for n in 1..=2 {
///             ctx.writer().write(&Row { n })?;
///         }
///         Ok::<_, ToolError>(json!("done"))
///     })
///     .build().unwrap();
/// let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
/// let sink = std::sync::Arc::clone(&seen);
/// let ctx = CallContext::new("c1").on_custom(move |chunk| sink.lock().unwrap().push(chunk));
/// import.execute("{}", ctx).await;
/// assert_eq!(*seen.lock().unwrap(), [json!({ "n": 1 }), json!({ "n": 2 })]);
/// # });
/// ```
#[derive(Clone)]
pub struct Writer {
    sink: Option<CustomSink>,
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("connected", &self.sink.is_some())
            .finish()
    }
}

impl Writer {
    /// Sends `chunk` to the caller. Fails only when `chunk` cannot be
    /// serialized (a map with non-string keys, a failing `Serialize`), with
    /// or without a caller listening, so that a tool behaves the same
    /// everywhere; `?` turns the error into a `ToolError`.
    pub fn write<T: Serialize + ?Sized>(&self, chunk: &T) -> Result<(), serde_json::Error> {
        let value = serde_json::to_value(chunk)?;
        if let Some(sink) = &self.sink {
            sink(value);
        }
        Ok(())
    }
}

/// What the caller gives one call: its id, request context, conversation,
/// abort signal, progress sink, extensions (what a transport offers the
/// tool), and on resume the resume data.
///
/// ```
/// use tool_core::{AbortSignal, CallContext, RequestContext};
///
/// let abort = AbortSignal::new();
/// let ctx = CallContext::new("call-1")
///     .with_request_context(RequestContext::new().with("userId", "u-1"))
///     .with_messages(vec![serde_json::json!({ "role": "user", "content": "weather in Paris?" })])
///     .with_abort_signal(abort.clone())
///     .on_progress(|p| println!("progress {}", p.value));
/// assert_eq!(ctx.call_id(), "call-1");
/// ```
#[derive(Clone)]
pub struct CallContext {
    pub(crate) call_id: String,
    pub(crate) request_context: RequestContext,
    /// `None` until set: most calls carry no conversation and pay nothing for it.
    pub(crate) messages: Option<Arc<[Value]>>,
    pub(crate) abort: AbortSignal,
    // Boxed, like the span below: rare, and a small context is cheap to
    // move through the builder methods and into the call.
    pub(crate) resume: Option<Box<Resume>>,
    pub(crate) progress: Option<ProgressSink>,
    pub(crate) log: Option<LogSink>,
    pub(crate) custom: Option<CustomSink>,
    pub(crate) parent_span: Option<Box<tracing::Span>>,
    pub(crate) extensions: Extensions,
    /// The application's state ([`with_state`](Self::with_state)).
    pub(crate) state: AppState,
    /// Which run of the call this is: 1, or more for a retry-safe stored
    /// call run again after a crash.
    pub(crate) attempt: u32,
    /// The workflow step the call is, when it is one. Typed rather than an
    /// extension: admission decodes its state into the tool's state type.
    pub(crate) workflow: Option<Arc<WorkflowContext>>,
}

/// What a resumed call continues from.
#[derive(Debug, Clone)]
pub(crate) struct Resume {
    pub(crate) data: Value,
    pub(crate) suspend_payload: Option<Value>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("call_id", &self.call_id)
            .field("request_context", &self.request_context)
            .field("messages", &self.messages().len())
            .field("aborted", &self.abort.is_aborted())
            .field("resume", &self.resume)
            .field("agent", &self.agent())
            .field("workflow", &self.workflow)
            .finish_non_exhaustive()
    }
}

impl CallContext {
    /// A context for the call `call_id`, with nothing else set.
    pub fn new(call_id: impl Into<String>) -> Self {
        CallContext {
            call_id: call_id.into(),
            request_context: RequestContext::default(),
            messages: None,
            abort: AbortSignal::never(),
            resume: None,
            progress: None,
            log: None,
            custom: None,
            parent_span: None,
            extensions: Extensions::new(),
            state: AppState::new(),
            attempt: 1,
            workflow: None,
        }
    }

    /// The call's id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The idempotency key of this call of tool `tool_id` (see
    /// [`IdempotencyKey`]): derived from `tool_id` and the call id, so the
    /// same on every run of the call. A `CallContext` is not bound to a
    /// tool until [`Tool::admit`](crate::Tool::admit), hence the argument;
    /// it is the key the tool reads from
    /// [`ToolContext::idempotency_key`] when it runs as `tool_id`.
    ///
    /// ```
    /// use tool_core::{CallContext, IdempotencyKey};
    ///
    /// let ctx = CallContext::new("call-1");
    /// assert_eq!(ctx.idempotency_key("charge"), IdempotencyKey::derive("charge", "call-1"));
    /// ```
    pub fn idempotency_key(&self, tool_id: &str) -> IdempotencyKey {
        IdempotencyKey::derive(tool_id, &self.call_id)
    }

    /// The conversation so far (empty when not set).
    pub fn messages(&self) -> &[Value] {
        self.messages.as_deref().unwrap_or_default()
    }

    /// The conversation so far, shared (`None` when not set).
    pub fn shared_messages(&self) -> Option<&Arc<[Value]>> {
        self.messages.as_ref()
    }

    /// The request context.
    pub fn request_context(&self) -> &RequestContext {
        &self.request_context
    }

    /// The abort signal the tool observes.
    pub fn abort_signal(&self) -> &AbortSignal {
        &self.abort
    }

    /// Which run of the call this is (see [`with_attempt`](Self::with_attempt)).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Marks this as run number `attempt` of one call (1 for the first): a
    /// stored call recovered after a crash runs again as attempt 2.
    ///
    /// ```
    /// use tool_core::CallContext;
    ///
    /// assert_eq!(CallContext::new("c1").attempt(), 1);
    /// assert_eq!(CallContext::new("c1").with_attempt(2).attempt(), 2);
    /// ```
    #[must_use]
    pub fn with_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    /// Sets the request context.
    #[must_use]
    pub fn with_request_context(mut self, request_context: RequestContext) -> Self {
        self.request_context = request_context;
        self
    }

    /// Sets the conversation so far.
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<Value>) -> Self {
        self.messages = Some(Arc::from(messages));
        self
    }

    /// Sets the conversation so far, shared without copying.
    #[must_use]
    pub fn with_shared_messages(mut self, messages: Arc<[Value]>) -> Self {
        self.messages = Some(messages);
        self
    }

    /// Sets the abort signal the tool observes (without one, nobody can
    /// abort the call).
    #[must_use]
    pub fn with_abort_signal(mut self, abort: AbortSignal) -> Self {
        self.abort = abort;
        self
    }

    /// Marks the call as a resume of a suspended call: `data` is the resume
    /// data (validated against the resume schema unless `null`), and
    /// `suspend_payload` what the call suspended with.
    #[must_use]
    pub fn resuming(mut self, data: Value, suspend_payload: Option<Value>) -> Self {
        self.resume = Some(Box::new(Resume {
            data,
            suspend_payload,
        }));
        self
    }

    /// Receives the progress the tool reports.
    #[must_use]
    pub fn on_progress(mut self, sink: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(sink));
        self
    }

    /// Receives the log messages the tool writes with `ctx.observe()`
    /// (besides their `tracing` events).
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use tool_core::{CallContext, LogRecord};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::<LogRecord>::new()));
    /// let sink = Arc::clone(&seen);
    /// let ctx = CallContext::new("c1").on_log(move |record| sink.lock().unwrap().push(record));
    /// # let _ = ctx;
    /// ```
    #[must_use]
    pub fn on_log(mut self, sink: impl Fn(LogRecord) + Send + Sync + 'static) -> Self {
        self.log = Some(Arc::new(sink));
        self
    }

    /// Receives the custom chunks the tool writes with `ctx.writer()` (see
    /// [`Writer`]).
    #[must_use]
    pub fn on_custom(mut self, sink: impl Fn(Value) + Send + Sync + 'static) -> Self {
        self.custom = Some(Arc::new(sink));
        self
    }

    /// Attaches a typed value for the tool ([`ToolContext::extension`]),
    /// replacing one of the same type.
    #[must_use]
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Gives the call the application's state: what a tool reads with a
    /// [`State<T>`](crate::State) parameter or
    /// [`ToolContext::state`], and what a tool that
    /// [requires state](crate::Tool::required_state) is refused without.
    /// A runtime gives its own (`RuntimeBuilder::state`) to every call.
    ///
    /// ```
    /// use tool_core::{AppState, CallContext};
    ///
    /// let ctx = CallContext::new("c1").with_state(AppState::new().with(42_u32));
    /// assert_eq!(ctx.state::<u32>(), Some(&42));
    /// ```
    pub fn with_state(mut self, state: AppState) -> Self {
        self.state = state;
        self
    }

    /// The application state of type `T` the call was given, if any.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.state.get()
    }

    /// Attaches every value of `extensions`.
    #[must_use]
    pub fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions.extend(extensions);
        self
    }

    /// The typed values attached to the call.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The agent running the call (see [`with_agent`](Self::with_agent)).
    pub fn agent(&self) -> Option<&AgentContext> {
        self.extensions.get::<AgentContext>()
    }

    /// Says which agent runs the call; the tool reads it with
    /// [`ToolContext::agent`].
    ///
    /// ```
    /// use tool_core::{AgentContext, CallContext};
    ///
    /// let ctx = CallContext::new("c1").with_agent(AgentContext::new("support-agent", "run-1"));
    /// assert_eq!(ctx.agent().unwrap().agent_id, "support-agent");
    /// assert!(CallContext::new("c2").agent().is_none());
    /// ```
    #[must_use]
    pub fn with_agent(mut self, agent: AgentContext) -> Self {
        // An extension like any host's value: the agent is not part of the
        // tool contract, only something a tool may read.
        self.extensions.insert(agent);
        self
    }

    /// The workflow step the call is (see [`with_workflow`](Self::with_workflow)).
    pub fn workflow(&self) -> Option<&WorkflowContext> {
        self.workflow.as_deref()
    }

    /// Runs the call as a step of a workflow: the tool reads the run, the
    /// workflow and its state with [`ToolContext::workflow`]. The state is
    /// validated against the tool's state schema when the call is admitted;
    /// the state the tool sets comes back in [`Outcome::state`](crate::Outcome::state).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{CallContext, WorkflowContext};
    ///
    /// let ctx = CallContext::new("c1")
    ///     .with_workflow(WorkflowContext::new("order-flow", "run-1", json!({ "count": 0 })));
    /// assert_eq!(ctx.workflow().unwrap().state, json!({ "count": 0 }));
    /// ```
    #[must_use]
    pub fn with_workflow(mut self, workflow: WorkflowContext) -> Self {
        self.workflow = Some(Arc::new(workflow));
        self
    }

    /// Runs the call's span as a child of `span` (the runtime's call span).
    #[must_use]
    pub fn with_parent_span(mut self, span: tracing::Span) -> Self {
        self.parent_span = Some(Box::new(span));
        self
    }
}

/// State shared between the pipeline and the tool's context during one call.
pub(crate) struct CallShared {
    pub(crate) tool_id: Arc<str>,
    pub(crate) ctx: CallContext,
    pub(crate) span: tracing::Span,
    /// Set by `suspend`: the serialized payload, or why it could not be serialized.
    pub(crate) suspended: Mutex<Option<Result<Value, String>>>,
    /// The workflow state, deserialized into the tool's state type at admission.
    pub(crate) workflow_state: Option<DecodedState>,
    /// The tool's state type, when it declares one.
    pub(crate) workflow_state_type: Option<StateType>,
    /// Set by `Workflow::set_state`: the serialized new state, or why it
    /// could not be serialized.
    pub(crate) new_state: Mutex<Option<Result<Value, String>>>,
}

impl CallShared {
    pub(crate) fn take_suspension(&self) -> Option<Result<Value, String>> {
        self.suspended
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    pub(crate) fn take_new_state(&self) -> Option<Result<Value, String>> {
        self.new_state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// Structured logs and child spans of the current call, through `tracing`.
/// Without a subscriber everything here is a no-op.
///
/// ```
/// # async fn demo(ctx: tool_core::ToolContext) {
/// let span = ctx.observe().span("fetch-forecast");
/// let _guard = span.enter();
/// ctx.observe().info("fetching forecast");
/// # }
/// ```
#[derive(Clone)]
pub struct Observer {
    span: tracing::Span,
    log: Option<LogSink>,
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("span", &self.span)
            .field("log", &self.log.is_some())
            .finish()
    }
}

impl Observer {
    /// A child span of the call span, named by its `name` field.
    pub fn span(&self, name: &str) -> tracing::Span {
        tracing::info_span!(parent: &self.span, "tool.observe", name = name)
    }

    /// [`span`](Self::span) with structured attributes, recorded as the
    /// span's `attributes` field (their JSON text).
    ///
    /// ```
    /// # async fn demo(ctx: tool_core::ToolContext) {
    /// let span = ctx
    ///     .observe()
    ///     .span_with("fetch-forecast", serde_json::json!({ "city": "Paris", "days": 3 }));
    /// let _guard = span.enter();
    /// # }
    /// ```
    pub fn span_with(&self, name: &str, attributes: Value) -> tracing::Span {
        tracing::info_span!(parent: &self.span, "tool.observe", name = name, attributes = %attributes)
    }

    /// An event at `level` with structured `data`: the event's `data` field
    /// (its JSON text) for `tracing`, and the record's
    /// [`data`](LogRecord::data) for the caller (events, MCP
    /// `notifications/message`, where it is sent as `{"message", "data"}`).
    ///
    /// ```
    /// # async fn demo(ctx: tool_core::ToolContext) {
    /// ctx.observe().log(
    ///     tracing::Level::INFO,
    ///     "forecast fetched",
    ///     serde_json::json!({ "city": "Paris", "ms": 120 }),
    /// );
    /// # }
    /// ```
    pub fn log(&self, level: tracing::Level, message: &str, data: Value) {
        match level {
            tracing::Level::ERROR => {
                observe_event!(self, ERROR, message, data);
            }
            tracing::Level::WARN => {
                observe_event!(self, WARN, message, data);
            }
            tracing::Level::INFO => {
                observe_event!(self, INFO, message, data);
            }
            tracing::Level::DEBUG => {
                observe_event!(self, DEBUG, message, data);
            }
            _ => {
                observe_event!(self, TRACE, message, data);
            }
        }
    }

    /// The call's own span.
    pub fn call_span(&self) -> &tracing::Span {
        &self.span
    }

    /// An info event in the innermost span of the call (see [`Observer::span`]).
    pub fn info(&self, message: &str) {
        observe_event!(self, INFO, message);
    }

    /// A warning in the innermost span of the call.
    pub fn warn(&self, message: &str) {
        observe_event!(self, WARN, message);
    }

    /// An error event in the innermost span of the call.
    pub fn error(&self, message: &str) {
        observe_event!(self, ERROR, message);
    }

    /// A debug event in the innermost span of the call.
    pub fn debug(&self, message: &str) {
        observe_event!(self, DEBUG, message);
    }
}

/// Emits an event in the span the tool is in; code running outside any span
/// (a task the tool spawned, say) still logs under the call span.
// The `observed` field marks the event as also given to the call's log
// sink, so that a layer forwarding tracing events does not send it twice.
macro_rules! observe_event {
    ($observer:expr, $level:ident, $message:expr) => {
        if tracing::Span::current().is_none() {
            tracing::event!(parent: &$observer.span, tracing::Level::$level, observed = true, "{}", $message);
        } else {
            tracing::event!(tracing::Level::$level, observed = true, "{}", $message);
        }
        if let Some(log) = &$observer.log {
            log(LogRecord::new(tracing::Level::$level, $message));
        }
    };
    ($observer:expr, $level:ident, $message:expr, $data:expr) => {
        if tracing::Span::current().is_none() {
            tracing::event!(parent: &$observer.span, tracing::Level::$level, observed = true, data = %$data, "{}", $message);
        } else {
            tracing::event!(tracing::Level::$level, observed = true, data = %$data, "{}", $message);
        }
        if let Some(log) = &$observer.log {
            log(LogRecord::new(tracing::Level::$level, $message).with_data($data));
        }
    };
}
use observe_event;

/// What a tool function sees of its call. `S` is the suspend payload type,
/// `R` the resume data type ([`NoSuspend`], the default, when the tool does
/// not suspend: then `suspend` cannot be called).
///
/// ```
/// use tool_core::{tool, ToolContext, ToolError};
///
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Question { text: String }
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Answer { approved: bool }
///
/// /// Deletes a file after a human confirms.
/// #[tool]
/// async fn delete_file(path: String, ctx: ToolContext<Question, Answer>) -> Result<String, ToolError> {
///     match ctx.resume_data() {
///         None => ctx.suspend(Question { text: format!("Delete {path}?") }),
///         Some(Answer { approved: true }) => Ok(format!("deleted {path}")),
///         Some(Answer { approved: false }) => Ok("kept".into()),
///     }
/// }
/// ```
pub struct ToolContext<S = NoSuspend, R = NoSuspend> {
    state: Arc<CallShared>,
    resume_data: Option<R>,
    suspend_payload: Option<S>,
    observer: Observer,
    writer: Writer,
    _types: PhantomData<fn(S) -> R>,
}

impl<S, R> fmt::Debug for ToolContext<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.state.ctx.call_id)
            .field("tool_id", &self.state.tool_id)
            .field("resuming", &self.resume_data.is_some())
            .finish_non_exhaustive()
    }
}

impl<S: DeserializeOwned, R: DeserializeOwned> ToolContext<S, R> {
    /// Builds the typed view of a call; fails when stored resume data or
    /// payload no longer fit the tool's types.
    pub(crate) fn from_state(state: Arc<CallShared>) -> Result<Self, String> {
        let (resume_data, suspend_payload) = match &state.ctx.resume {
            None => (None, None),
            Some(resume) => {
                let data = if resume.data.is_null() {
                    None
                } else {
                    Some(R::deserialize(&resume.data).map_err(|e| format!("resume data: {e}"))?)
                };
                let payload = match &resume.suspend_payload {
                    None | Some(Value::Null) => None,
                    Some(p) => {
                        Some(S::deserialize(p).map_err(|e| format!("suspend payload: {e}"))?)
                    }
                };
                (data, payload)
            }
        };
        let observer = Observer {
            span: state.span.clone(),
            log: state.ctx.log.clone(),
        };
        let writer = Writer {
            sink: state.ctx.custom.clone(),
        };
        Ok(ToolContext {
            state,
            resume_data,
            suspend_payload,
            observer,
            writer,
            _types: PhantomData,
        })
    }
}

impl<S, R> ToolContext<S, R> {
    /// The id of this call.
    pub fn call_id(&self) -> &str {
        &self.state.ctx.call_id
    }

    /// The id of the tool being called.
    pub fn tool_id(&self) -> &str {
        &self.state.tool_id
    }

    /// The idempotency key of this call (see [`IdempotencyKey`]), for the
    /// external APIs that take one (payments, email): derived from the tool
    /// id and the call id, it is the same on every run of the call (a
    /// retry, a recovery after a crash, another instance of the
    /// application), so the API applies the call's effect once. A call id
    /// the application reuses for a different call gets the same key: give
    /// each call its own id.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{CallContext, IdempotencyKey, Tool, ToolError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let charge = Tool::builder("charge").description("Charge a card")
    ///     .execute(|_input, ctx| async move {
    ///         // e.g. the `Idempotency-Key` header of the payment API's request
    ///         Ok::<_, ToolError>(json!({ "key": ctx.idempotency_key() }))
    ///     })
    ///     .build().unwrap();
    /// let first = charge.execute("{}", CallContext::new("call-1")).await;
    /// let again = charge.execute("{}", CallContext::new("call-1").with_attempt(2)).await;
    /// assert_eq!(first.output(), again.output());
    /// assert_eq!(first.output().unwrap()["key"], IdempotencyKey::derive("charge", "call-1").as_str());
    /// # });
    /// ```
    pub fn idempotency_key(&self) -> IdempotencyKey {
        IdempotencyKey::derive(&self.state.tool_id, &self.state.ctx.call_id)
    }

    /// The request context, already validated against the tool's schema.
    pub fn request_context(&self) -> &RequestContext {
        &self.state.ctx.request_context
    }

    /// The abort signal of this call.
    pub fn abort_signal(&self) -> &AbortSignal {
        &self.state.ctx.abort
    }

    /// Which run of this call this is: 1, or more for a retry of a
    /// background task, and when a tool declared `retry_safe` runs again
    /// after the process that ran it died.
    pub fn attempt(&self) -> u32 {
        self.state.ctx.attempt
    }

    /// The conversation so far, when the caller supplied it.
    pub fn messages(&self) -> &[Value] {
        self.state.ctx.messages()
    }

    /// On resume, the validated resume data; `None` on a first run.
    pub fn resume_data(&self) -> Option<&R> {
        self.resume_data.as_ref()
    }

    /// On resume, what the call suspended with.
    pub fn suspend_payload(&self) -> Option<&S> {
        self.suspend_payload.as_ref()
    }

    /// The value of type `T` that the caller attached to the call (see
    /// [`Extensions`]); add-on crates wrap this in methods of their own, such
    /// as tool-runtime's `ctx.mcp()`. Extensions belong to one run of the
    /// call: none is stored with a call that pauses (for approval, resume
    /// data or a background retry), so a call run after the pause has only
    /// what its new caller attaches. What every run must see is
    /// application [`state`](Self::state), or the request context (stored
    /// with the call).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{CallContext, Tool, ToolError};
    ///
    /// struct Tenant(&'static str);
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let whoami = Tool::builder("whoami").description("Names the tenant")
    ///     .execute(|_input, ctx| async move {
    ///         Ok::<_, ToolError>(json!(ctx.extension::<Tenant>().map_or("none", |t| t.0)))
    ///     })
    ///     .build().unwrap();
    /// let outcome = whoami.execute("{}", CallContext::new("c1").with_extension(Tenant("acme"))).await;
    /// assert_eq!(outcome.output(), Some(&json!("acme")));
    /// # });
    /// ```
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.state.ctx.extensions.get()
    }

    /// The application state of type `T` (a pool, a client): what the host
    /// gives every call (`RuntimeBuilder::state`,
    /// [`CallContext::with_state`]), on its first run and on every run
    /// after a pause. A tool that reads it declares it
    /// ([`ToolBuilder::requires_state`](crate::ToolBuilder::requires_state),
    /// or a [`State<T>`](crate::State) parameter), and is then never run
    /// without it: `None` only for state the tool did not declare.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{AppState, CallContext, Tool, ToolError};
    ///
    /// struct Rates { eur_per_usd: f64 }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let convert = Tool::builder("to-eur").description("Converts USD to EUR")
    ///     .requires_state::<Rates>()
    ///     .execute(|input, ctx| async move {
    ///         let rates = ctx.state::<Rates>().expect("declared, so given");
    ///         Ok::<_, ToolError>(json!(input["usd"].as_f64().unwrap_or(0.0) * rates.eur_per_usd))
    ///     })
    ///     .build().unwrap();
    /// let state = AppState::new().with(Rates { eur_per_usd: 0.5 });
    /// let outcome = convert.execute(json!({ "usd": 10.0 }), CallContext::new("c1").with_state(state)).await;
    /// assert_eq!(outcome.output(), Some(&json!(5.0)));
    /// # });
    /// ```
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.state.ctx.state.get()
    }

    /// Every value attached to the call.
    pub fn extensions(&self) -> &Extensions {
        &self.state.ctx.extensions
    }

    /// The agent running this call, when the host says so
    /// ([`CallContext::with_agent`]); `None` otherwise.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{AgentContext, CallContext, Tool, ToolError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let whoami = Tool::builder("whoami").description("Names the agent")
    ///     .execute(|_input, ctx| async move {
    ///         Ok::<_, ToolError>(json!(ctx.agent().map(|agent| agent.agent_id.clone())))
    ///     })
    ///     .build().unwrap();
    /// let ctx = CallContext::new("c1").with_agent(AgentContext::new("support-agent", "run-1"));
    /// assert_eq!(whoami.execute("{}", ctx).await.output(), Some(&json!("support-agent")));
    /// assert_eq!(whoami.execute("{}", CallContext::new("c2")).await.output(), Some(&json!(null)));
    /// # });
    /// ```
    pub fn agent(&self) -> Option<&AgentContext> {
        self.state.ctx.agent()
    }

    /// The workflow step this call is, with its state as `T`, when the host
    /// runs the tool as one ([`CallContext::with_workflow`]); `None`
    /// otherwise. `T` is the tool's declared state type (`#[tool(state =
    /// T)]`, [`ToolBuilder::workflow_state_type`](crate::ToolBuilder::workflow_state_type)),
    /// whose value was validated and deserialized when the call was
    /// admitted; `serde_json::Value` reads the state as the host gave it,
    /// in any tool. `#[tool]` rejects, at compile time, a `workflow::<T>()`
    /// naming another type and `set_state` in a tool declaring no state.
    ///
    /// See [`Workflow`] for an example.
    ///
    /// # Panics
    ///
    /// When `T` is neither the declared state type nor `serde_json::Value`:
    /// a bug in the tool, which the call reports as a panic.
    pub fn workflow<T: WorkflowState>(&self) -> Option<Workflow<'_, T>> {
        let context = self.state.ctx.workflow.as_deref()?;
        let typed = self
            .state
            .workflow_state
            .as_ref()
            .and_then(|decoded| decoded.downcast_ref::<T>());
        let raw = || (&context.state as &dyn std::any::Any).downcast_ref::<T>();
        let Some(state) = typed.or_else(raw) else {
            let wanted = std::any::type_name::<T>();
            match &self.state.workflow_state_type {
                Some(declared) => panic!(
                    "tool {} declares its workflow state as `{declared:?}` but reads it as `{wanted}`: call `ctx.workflow::<{declared:?}>()`",
                    self.state.tool_id
                ),
                None => panic!(
                    "tool {} declares no workflow state type but reads it as `{wanted}`: declare it (`#[tool(workflow_state = ...)]`, `ToolBuilder::workflow_state_type`) or read it as `serde_json::Value`",
                    self.state.tool_id
                ),
            }
        };
        Some(Workflow {
            context,
            state,
            new_state: &self.state.new_state,
        })
    }

    /// The workflow step this call is, untyped, when it is one.
    pub fn workflow_context(&self) -> Option<&WorkflowContext> {
        self.state.ctx.workflow.as_deref()
    }

    /// Structured logs and child spans of this call.
    pub fn observe(&self) -> &Observer {
        &self.observer
    }

    /// Sends custom chunks to the caller, in order with the call's progress
    /// and logs (see [`Writer`]).
    pub fn writer(&self) -> &Writer {
        &self.writer
    }

    /// Reports progress to the caller (events, MCP progress notifications).
    pub fn progress(&self, value: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.state.ctx.progress {
            sink(Progress {
                value,
                total,
                message: message.map(str::to_owned),
            });
        }
    }

    /// Suspends the call with `payload`, to be resumed later with resume data.
    /// Return its result from the tool: `return ctx.suspend(payload);`.
    ///
    /// Whatever the tool returns after calling `suspend`, the call ends as
    /// suspended; the payload is validated against the suspend schema.
    pub fn suspend<T, E: From<ToolError>>(&self, payload: S) -> Result<T, E>
    where
        S: SuspendPayload,
    {
        let serialized = serde_json::to_value(&payload).map_err(|e| e.to_string());
        *self
            .state
            .suspended
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(serialized);
        Err(E::from(ToolError::suspension()))
    }
}
