//! Streaming input: tool-call arguments arriving as text deltas from a
//! model stream. `begin` fires `on_input_start`, each `push` fires
//! `on_input_delta` and updates a best-effort parse of the text so far
//! (incremental: linear in the total input), `finish` runs the call. The
//! input hooks run in order on a queue of the call's, off the stream
//! (`hook_queue.rs`).

use std::sync::Arc;

use serde_json::Value;
use tool_core::Hooks;
use tool_core::hooks::{InputDelta, InputStart};
use tool_core::partial_json::PartialJson;
use tool_core::{AbortSignal, RawInput, Tool};

use crate::abort::RunningGuard;
use crate::call::{CallHead, ToolCall, head_builders};
use crate::call_outcome::CallOutcome;
use crate::call_path::{CallPath, Entry, Streamed, call_span};
use crate::events::{EventKind, Payload};
use crate::hook_queue::HookQueue;

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
    /// The envelope; its builder methods are `ToolCall`'s (`call.rs`).
    head: CallHead,
    parser: PartialJson,
    abort: AbortSignal,
    guard: RunningGuard,
    span: tracing::Span,
    /// When the tool or the runtime has an input hook: the queue they run
    /// on, and the conversation they are given.
    input_hooks: Option<(HookQueue, Arc<[Value]>)>,
}

head_builders!(InputStream, head);

impl InputStream {
    /// Starts the call on `path` ([`Runtime::begin`](crate::Runtime::begin)).
    pub(crate) fn begin(path: &CallPath, head: CallHead) -> InputStream {
        let (call_id, tool_id) = (&head.call_id, &head.tool_id);
        let tool = path.tool(tool_id).cloned();
        let span = call_span("call", tool_id, call_id);
        let abort = AbortSignal::new();
        let guard = path.running().register(call_id, abort.clone());
        let firing = path.firing(tool.as_ref());
        let input_hooks = (firing.any(Hooks::has_on_input_start)
            || firing.any(Hooks::has_on_input_delta))
        .then(|| {
            let messages: Arc<[Value]> = Arc::from(head.messages.as_slice());
            (HookQueue::new(span.clone()), messages)
        });
        if let Some((queue, messages)) = &input_hooks {
            let args = || InputStart::new(call_id, Arc::clone(messages), abort.clone());
            let start = firing.job(
                "on_input_start",
                Hooks::has_on_input_start,
                Hooks::input_start,
                args,
            );
            if let Some(start) = start {
                queue.push(start);
            }
        }
        span.in_scope(|| {
            path.events()
                .emit(call_id, tool_id, || EventKind::InputStart);
        });
        InputStream {
            path: path.clone(),
            tool,
            head,
            parser: PartialJson::new(),
            abort,
            guard,
            span,
            input_hooks,
        }
    }

    /// Adds a fragment of the arguments: updates [`partial`](Self::partial)
    /// (work proportional to the fragment), queues `on_input_delta` (it runs
    /// after the hooks queued before it; `push` does not wait for it) and
    /// emits `InputDelta` (unless the tool's display transform suppresses
    /// deltas).
    pub fn push(&mut self, delta: &str) {
        self.parser.push(delta);
        let path = &self.path;
        if let Some((queue, messages)) = &self.input_hooks {
            let head = &self.head;
            let args = || {
                InputDelta::new(
                    delta,
                    head.call_id.as_str(),
                    Arc::clone(messages),
                    self.abort.clone(),
                )
            };
            let job = path.firing(self.tool.as_ref()).job(
                "on_input_delta",
                Hooks::has_on_input_delta,
                Hooks::input_delta,
                args,
            );
            if let Some(job) = job {
                queue.push(job);
            }
        }
        if path.events().active()
            && let Some(display) = Payload::delta_display(
                self.tool.as_ref(),
                &self.head.call_id,
                &self.head.tool_id,
                delta,
            )
        {
            path.events()
                .emit(&self.head.call_id, &self.head.tool_id, || {
                    EventKind::InputDelta { display }
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
        &self.head.call_id
    }

    /// The tool's id.
    pub fn tool_id(&self) -> &str {
        &self.head.tool_id
    }

    /// The call's abort signal (fired by `Runtime::cancel`).
    pub fn abort_signal(&self) -> &AbortSignal {
        &self.abort
    }

    /// The arguments are complete: waits for the input hooks queued so far,
    /// runs the call through the pipeline (`on_input_available` fires once
    /// they are validated) and returns its outcome.
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
            head,
            abort,
            guard,
            span,
            input_hooks,
            ..
        } = self;
        if let Some((queue, _)) = input_hooks {
            queue.drain().await;
        }
        if abort.is_aborted() {
            let _entered = span.enter();
            tracing::warn!(
                reason = "cancelled",
                "tool call aborted while its input streamed"
            );
            path.events()
                .emit(&head.call_id, &head.tool_id, || EventKind::Aborted);
            return CallOutcome::Aborted;
        }
        let call = ToolCall {
            head,
            input,
            workflow: None,
        };
        let streamed = Streamed { abort, guard, span };
        path.run_call(call, Entry::New, Some(streamed)).await
    }
}
