//! Resuming a suspended call with data from outside (a human, another
//! system): validate the data, run the tool again with it and the payload it
//! suspended with.

use serde_json::Value;
use tool_core::transform::Phase;
use tool_core::{CallContext, RequestContext};

use crate::approval::stored_call;
use crate::error::RuntimeError;
use crate::events::{EventKind, payload};
use crate::outcome::CallOutcome;
use crate::pipeline::{Entry, call_span};
use crate::runtime::Runtime;
use crate::store::PendingKind;

impl Runtime {
    /// Resumes the suspended call `call_id` with `data`: the data is
    /// validated against the tool's resume schema (`false`, `0` and `""` are
    /// data; only `null` means none), then execute runs again with the resume
    /// data and the payload the call suspended with, in the foreground.
    ///
    /// The data is validated before the call is taken from the store: data
    /// that fails returns the model-facing error and leaves the call
    /// suspended, to be resumed again. The entry is then taken once, so a
    /// second resume is an error, never a second run.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, RuntimeError, ToolCall};
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
    /// assert!(matches!(outcome, CallOutcome::Suspended { .. }));
    /// let invalid = runtime.resume("c1", json!("yes")).await.unwrap();
    /// assert!(invalid.error().is_some()); // still suspended
    /// let outcome = tokio::spawn(runtime.resume("c1", json!(false))).await.unwrap().unwrap();
    /// assert_eq!(outcome.output(), Some(&json!({ "proceeded": false })));
    /// assert!(matches!(runtime.resume("c1", json!(true)).await, Err(RuntimeError::UnknownCall { .. })));
    /// # });
    /// ```
    pub fn resume(
        &self,
        call_id: &str,
        data: Value,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        let (runtime, call_id) = (self.clone(), call_id.to_owned());
        async move {
            let (pending, tool) = runtime.decidable(&call_id, PendingKind::Suspended).await?;
            let span = call_span("resume", tool.id(), &call_id);
            // Checked before anything changes: invalid data leaves the call suspended.
            let check = CallContext::new(call_id.as_str())
                .with_request_context(RequestContext::from(pending.request_context.clone()))
                .resuming(data.clone(), pending.payload.clone());
            if let Err(error) = tool.admit(pending.input.clone(), check) {
                let _entered = span.enter();
                tracing::info!(%error, "resume data rejected; the call stays suspended");
                return Ok(runtime.failed(Some(&tool), &call_id, tool.id(), error));
            }
            let pending = runtime
                .inner
                .pending
                .take(pending, PendingKind::Suspended)
                .await?;
            {
                let _entered = span.enter();
                tracing::info!("tool call resumed");
                runtime
                    .inner
                    .events
                    .emit(&call_id, tool.id(), || EventKind::Resumed {
                        payload: payload(Some(&tool), &call_id, tool.id(), Phase::Resume, &data),
                    });
            }
            let payload = pending.payload.clone();
            Ok(runtime
                .run_call(stored_call(pending), Entry::Resumed { data, payload }, None)
                .await)
        }
    }
}
