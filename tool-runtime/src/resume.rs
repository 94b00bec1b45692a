//! Resuming a suspended call with data from outside (a human, another
//! system): validate the data, run the tool again with it and the payload it
//! suspended with.

use serde_json::Value;
use tool_core::transform::Phase;
use tool_core::{AbortSignal, ErrorKind, Outcome, RequestContext};

use tracing::Instrument as _;

use crate::error::RuntimeError;
use crate::events::{EventKind, payload};
use crate::pipeline::{Run, call_span};
use crate::runtime::Runtime;
use crate::store::PendingKind;

impl Runtime {
    /// Resumes the suspended call `call_id` with `data`: the data is
    /// validated against the tool's resume schema (`false`, `0` and `""` are
    /// data; only `null` means none), then execute runs again with the resume
    /// data and the payload the call suspended with, in the foreground.
    ///
    /// The entry is taken from the store once, so a second resume is an
    /// error, never a second run. Data that fails validation returns the
    /// model-facing error and leaves the call suspended, to be resumed again.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Outcome, Tool, ToolError};
    /// use tool_runtime::{Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let confirm = Tool::builder("confirm").description("Asks before acting")
    ///     .resume_schema(json!({ "type": "boolean" }))
    ///     .execute(|_input, ctx| async move {
    ///         match ctx.resume_data() {
    ///             None => ctx.suspend(json!({ "question": "Proceed?" })),
    ///             Some(answer) => Ok::<_, ToolError>(json!({ "proceeded": answer })),
    ///         }
    ///     })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(confirm).build().unwrap();
    ///
    /// let outcome = runtime.call(ToolCall::new("c1", "confirm", json!({}))).await;
    /// assert!(matches!(outcome, Outcome::Suspended { .. }));
    /// let outcome = runtime.resume("c1", json!(false)).await.unwrap();
    /// assert_eq!(outcome.output(), Some(&json!({ "proceeded": false })));
    /// assert!(matches!(runtime.resume("c1", json!(true)).await, Err(RuntimeError::UnknownCall { .. })));
    /// # });
    /// ```
    pub async fn resume(&self, call_id: &str, data: Value) -> Result<Outcome, RuntimeError> {
        let pending = self.take(call_id, PendingKind::Suspended)?;
        let span = call_span("resume", &pending.tool_id, call_id);
        let resumed = async move {
            let tool = self.tool_of(&pending)?;
            tracing::info!("tool call resumed");
            let (call_id, tool_id) = (pending.call_id.as_str(), tool.id());
            self.inner
                .events
                .emit(call_id, tool_id, || EventKind::Resumed {
                    payload: payload(Some(&tool), call_id, tool_id, Phase::Resume, &data),
                });
            let messages = pending.messages.clone();
            let mut run = Run {
                tool: tool.clone(),
                call_id: pending.call_id.clone(),
                input: pending.input.clone(),
                request_context: RequestContext::from(pending.request_context.clone()),
                messages: (!messages.is_empty()).then(|| messages.into()),
                abort: AbortSignal::new(),
                timeout: self.timeout_of(&tool),
                mcp: None,
                resume: Some(Box::new((data, pending.payload.clone()))),
                guard: None,
            };
            let (outcome, timed_out) = self.run_as_given(&mut run).await;
            if outcome
                .error()
                .is_some_and(|e| e.kind() == ErrorKind::ResumeValidation)
            {
                // The tool did not run: keep the call suspended for a corrected resume.
                self.inner.store.insert(&pending)?;
            }
            Ok(self.settle(&run, outcome, timed_out))
        };
        resumed.instrument(span).await
    }
}
