//! Streaming input: tool-call arguments arriving as text deltas from a
//! model stream. `begin` fires `on_input_start`, each `push` fires
//! `on_input_delta` and updates a best-effort parse of the text so far
//! (incremental: linear in the total input), `finish` runs the call.

use std::time::Duration;

use serde_json::Value;
use tool_core::hooks::{InputDelta, InputStart};
use tool_core::partial_json::PartialJson;
use tool_core::{AbortSignal, AgentContext, Extensions, RawInput, RequestContext, Tool};

use crate::abort::RunningGuard;
use crate::call::ToolCall;
use crate::events::{EventKind, Payload};
use crate::outcome::CallOutcome;
use crate::pipeline::{CallPath, Entry, Streamed, call_span};

/// A call whose arguments are still streaming, from [`Runtime::begin`](crate::Runtime::begin).
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::Runtime;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let weather = Tool::builder("weather").description("Weather")
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "at": input["city"] })) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(weather).build().unwrap();
///
/// let mut stream = runtime.begin("call-1", "weather", Vec::new());
/// stream.push(r#"{"city": "Par"#);
/// assert_eq!(stream.partial(), Some(&json!({ "city": "Par" })));
/// stream.push(r#"is"}"#);
/// let outcome = stream.finish().await;
/// assert_eq!(outcome.output(), Some(&json!({ "at": "Paris" })));
/// # });
/// ```
#[derive(Debug)]
pub struct InputStream {
    path: CallPath,
    tool: Option<Tool>,
    call_id: String,
    tool_id: String,
    messages: Vec<Value>,
    request_context: RequestContext,
    extensions: Extensions,
    timeout: Option<Duration>,
    agent: Option<AgentContext>,
    parser: PartialJson,
    abort: AbortSignal,
    guard: RunningGuard,
    span: tracing::Span,
}

impl InputStream {
    /// Starts the call on `path` ([`Runtime::begin`](crate::Runtime::begin)).
    pub(crate) fn begin(
        path: &CallPath,
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        messages: Vec<Value>,
    ) -> InputStream {
        let (call_id, tool_id) = (call_id.into(), tool_id.into());
        let tool = path.tool(&tool_id).cloned();
        let span = call_span("call", &tool_id, &call_id);
        let abort = AbortSignal::new();
        let guard = path.running().register(&call_id, abort.clone());
        {
            let _entered = span.enter();
            let args = InputStart::new(&call_id, &messages, &abort);
            if let Some(tool) = &tool {
                tool.hooks().input_start(&args);
            }
            path.hooks().input_start(&args);
            path.events()
                .emit(&call_id, &tool_id, || EventKind::InputStart);
        }
        InputStream {
            path: path.clone(),
            tool,
            call_id,
            tool_id,
            messages,
            request_context: RequestContext::default(),
            extensions: Extensions::new(),
            timeout: None,
            agent: None,
            parser: PartialJson::new(),
            abort,
            guard,
            span,
        }
    }

    /// Sets the request context the call will run with.
    #[must_use]
    pub fn with_request_context(mut self, request_context: RequestContext) -> Self {
        self.request_context = request_context;
        self
    }

    /// Attaches a typed value for the tool (`ToolContext::extension`), as
    /// [`ToolCall::with_extension`] does.
    #[must_use]
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Says which agent makes the call (`ToolContext::agent`), as
    /// [`ToolCall::with_agent`] does.
    #[must_use]
    pub fn with_agent(mut self, agent: AgentContext) -> Self {
        self.agent = Some(agent);
        self
    }

    /// Sets the call's time limit (from `finish` on).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Adds a fragment of the arguments: updates [`partial`](Self::partial)
    /// (work proportional to the fragment), fires `on_input_delta` and emits
    /// `InputDelta` (unless the tool's display transform suppresses deltas).
    pub fn push(&mut self, delta: &str) {
        self.parser.push(delta);
        let path = &self.path;
        let tool_hooks = self.tool.as_ref().map(Tool::hooks);
        {
            let _entered = self.span.enter();
            let args = InputDelta::new(delta, &self.call_id, &self.messages, &self.abort);
            if let Some(hooks) = tool_hooks {
                hooks.input_delta(&args);
            }
            path.hooks().input_delta(&args);
        }
        if path.events().active()
            && let Some(display) =
                Payload::delta_display(self.tool.as_ref(), &self.call_id, &self.tool_id, delta)
        {
            path.events()
                .emit(&self.call_id, &self.tool_id, || EventKind::InputDelta {
                    display,
                });
        }
    }

    /// The best-effort value of the arguments so far (open strings, arrays
    /// and objects closed); `None` before anything usable arrived. Free: the
    /// value is maintained by [`push`](Self::push).
    pub fn partial(&self) -> Option<&Value> {
        self.parser.current()
    }

    /// The argument text so far.
    pub fn text(&self) -> &str {
        self.parser.text()
    }

    /// The call's id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The tool's id.
    pub fn tool_id(&self) -> &str {
        &self.tool_id
    }

    /// The call's abort signal (fired by `Runtime::cancel`).
    pub fn abort_signal(&self) -> &AbortSignal {
        &self.abort
    }

    /// The arguments are complete: runs the call through the pipeline
    /// (`on_input_available` fires once they are validated) and returns its outcome.
    pub fn finish(self) -> impl Future<Output = CallOutcome> + Send + 'static {
        let text = RawInput::Text(self.parser.text().to_owned());
        self.finish_raw(text)
    }

    /// Like [`finish`](Self::finish), with the final arguments given instead
    /// of the text pushed so far: for arguments mapped back from a provider's
    /// rewritten schema (see `tool_core::provider::Export::restore_value`).
    pub fn finish_with(
        self,
        input: impl Into<RawInput>,
    ) -> impl Future<Output = CallOutcome> + Send + 'static {
        self.finish_raw(input.into())
    }

    async fn finish_raw(self, input: RawInput) -> CallOutcome {
        let InputStream {
            path,
            call_id,
            tool_id,
            messages,
            request_context,
            extensions,
            timeout,
            agent,
            abort,
            guard,
            span,
            ..
        } = self;
        if abort.is_aborted() {
            let _entered = span.enter();
            tracing::warn!(
                reason = "cancelled",
                "tool call aborted while its input streamed"
            );
            path.events()
                .emit(&call_id, &tool_id, || EventKind::Aborted);
            return CallOutcome::Aborted;
        }
        let call = ToolCall {
            call_id,
            tool_id,
            input,
            request_context,
            messages,
            timeout,
            extensions,
            agent,
            workflow: None,
        };
        let streamed = Streamed { abort, guard, span };
        path.run_call(call, Entry::New, Some(streamed)).await
    }
}
