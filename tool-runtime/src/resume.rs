//! Resuming a suspended call with data from outside (a human, another
//! system): validate the data, run the tool again with it and the payload it
//! suspended with.

use serde_json::Value;

use crate::decide::Decision;
use crate::error::RuntimeError;
use crate::outcome::CallOutcome;
use crate::runtime::Runtime;

impl Runtime {
    /// Resumes the suspended call `call_id` with `data`: the data is
    /// validated against the tool's resume schema (`false`, `0` and `""` are
    /// data; only `null` means none), then execute runs again with the resume
    /// data and the payload the call suspended with, in the foreground.
    ///
    /// The data is validated before anything changes in the store: data
    /// that fails returns the model-facing error and leaves the call
    /// suspended, to be resumed again. Valid data claims the call in one
    /// atomic transition, and it runs as a task of its own (dropping this
    /// future does not stop it); a second resume gets
    /// [`RuntimeError::Running`] while it runs and the recorded outcome once
    /// it settled, never a second run.
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
    /// assert_eq!(runtime.resume("c1", json!(true)).await.unwrap(), outcome); // recorded, not run again
    /// assert!(matches!(runtime.resume("c2", json!(true)).await, Err(RuntimeError::UnknownCall { .. })));
    /// # });
    /// ```
    pub fn resume(
        &self,
        call_id: &str,
        data: Value,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.decide(call_id, Decision::Resume(data), None)
    }
}
