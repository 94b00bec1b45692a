//! The [`Runtime`] and its [`RuntimeBuilder`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
#[cfg(feature = "sqlite")]
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tool_core::{AppState, ApprovalPolicyReturn, Extensions, Hooks, Tool, ToolSet, TypedTool};

use serde_json::Value;

use crate::approval_policy::{ApprovalCheck, ApprovalPolicy};
use crate::approval_rules::ApprovalRules;
use crate::background::{BackgroundCallback, BackgroundResult, Tasks};
use crate::before_run::{BeforeRun, RunCheck};
use crate::call::{CallHead, ToolCall};
use crate::call_inbox::CallInbox;
use crate::call_outcome::CallOutcome;
use crate::call_path::{CallPath, PathParts};
use crate::claims::StoredCalls;
use crate::decide::{Decisions, Recovered, typed_value};
use crate::decision::Decision;
#[cfg(doc)]
use crate::dispatcher::Dispatcher;
use crate::dispatcher::DispatcherBuilder;
use crate::error::RuntimeError;
use crate::events::{CallWatch, EventBus, Events};
use crate::hook_queue::DEFAULT_HOOK_TIMEOUT;
#[cfg(feature = "log-layer")]
use crate::log_layer::CallLogLayer;
use crate::notifications::Notifications;
use crate::principal::Decider;
use crate::runs::Runs;
use crate::standing_rules::StandingRules;
#[cfg(feature = "sqlite")]
use crate::store::SqliteStore;
use crate::store::{
    AuditRetention, DynCallStore, DynRuleStore, IntoStore, MemoryStore, Retention, RuleStore,
    Stores,
};
use crate::store::{StoreError, StoredCall};
use crate::stream::InputStream;
use crate::worker::Worker;

/// Default capacity of the event channel, per subscriber.
const EVENT_CAPACITY: usize = 1024;
/// Default lease of a running stored call: how long after its instance dies
/// another one may recover it.
const LEASE: Duration = Duration::from_secs(30);
/// Default time a new call that must be stored is tried again while the
/// store fails: a database restart or a short failover.
const STORE_RETRY_BUDGET: Duration = Duration::from_secs(10);
/// Default time a settled call's outcome stays in the store.
const SETTLED_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
/// Default number of settled calls the store keeps: a settled call costs
/// about 2.6 KB in the memory store (measured: 80,000 approvals of a small
/// call grew an unbounded runtime by 205 MB), so 10,000 hold about 26 MB;
/// each id purged beyond them is remembered for the retention's age at
/// about 170 bytes (80,000 approvals under this default: 44 MB in all).
const SETTLED_LIMIT: usize = 10_000;
/// Default time an audit entry stays in the store (a call still pending
/// keeps all of its own).
const AUDIT_RETENTION: Duration = Duration::from_secs(90 * 24 * 60 * 60);
/// Default number of audit entries the store keeps: an entry costs a few
/// hundred bytes (about 40 MB for 100,000 in the memory store).
const AUDIT_LIMIT: usize = 100_000;
/// Default number of finished background tasks whose outcome `wait` can still return.
const TASK_RETENTION: usize = 10_000;

/// Runs tools: validation, hooks, approval, suspend/resume, background tasks,
/// cancellation, events. Cheap to clone (one `Arc`); every clone is the same
/// runtime. There is no global state: two runtimes share nothing but what
/// they are given (for example one store file).
///
/// Its methods, by family:
/// - calls: [`call`](Self::call), [`begin`](Self::begin) and
///   [`begin_call`](Self::begin_call) (streamed input), [`wait`](Self::wait)
///   (a background task), [`cancel`](Self::cancel);
/// - decisions on a paused call, all one path ([`decide`](Self::decide)):
///   [`approve`](Self::approve), [`decline`](Self::decline),
///   [`resume`](Self::resume) (resume data), [`respond`](Self::respond)
///   (a client-side tool's output); [`decide_as`](Self::decide_as) is a
///   person's decision (principal, digest, audit), and
///   [`resume_as`](Self::resume_as), [`respond_as`](Self::respond_as) take
///   the tool's typed data; [`recover`](Self::recover) settles calls whose
///   instance died;
/// - what waits for a person and what people decided: [`inbox`](Self::inbox);
///   agent runs: [`runs`](Self::runs);
/// - watching: [`events`](Self::events), [`watch`](Self::watch),
///   [`log_layer`](Self::log_layer); running stored tasks:
///   [`worker`](Self::worker);
/// - settings: [`tools`](Self::tools), [`tool`](Self::tool),
///   [`retention`](Self::retention), [`instance_id`](Self::instance_id).
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::{CallOutcome, Runtime, ToolCall};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let add = Tool::builder("add")
///     .description("Add two numbers")
///     .input_schema(json!({ "type": "object", "properties": { "a": { "type": "number" }, "b": { "type": "number" } }, "required": ["a", "b"] }))
///     .execute(|input, _ctx| async move {
///         Ok::<_, ToolError>(json!(input["a"].as_f64().unwrap_or(0.0) + input["b"].as_f64().unwrap_or(0.0)))
///     })
///     .build()
///     .unwrap();
/// let runtime = Runtime::builder().tool(add).build().unwrap();
/// let outcome = runtime.call(ToolCall::new("call-1", "add", r#"{"a": 2, "b": 3}"#)).await;
/// assert_eq!(outcome.output(), Some(&json!(5.0)));
///
/// let unknown = runtime.call(ToolCall::new("call-2", "sub", "{}")).await;
/// assert_eq!(unknown.error().unwrap().message(), r#"Tool "sub" not found. Available tools: add."#);
/// # });
/// ```
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

/// The runtime's components; every public method of [`Runtime`] is one of
/// theirs.
struct Inner {
    /// Every call runs through it; it owns the tools, hooks, approval gate,
    /// background tasks, events and the store's call lifecycle.
    path: CallPath,
    /// Approve, decline, resume, recover: on the same call path.
    decisions: Decisions,
    /// The agent runs kept in the store.
    runs: Runs,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("tools", &self.inner.path.tool_ids())
            .field("hooks", self.inner.path.hooks())
            .field("timeout", &self.inner.path.timeout())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The runtime's tools.
    pub fn tools(&self) -> &ToolSet {
        self.inner.path.tools()
    }

    /// The tool named `id`.
    pub fn tool(&self, id: &str) -> Option<&Tool> {
        self.inner.path.tool(id)
    }

    /// Runs one tool call and returns its outcome.
    ///
    /// Order: look up the tool → parse (with safe repairs) and validate the
    /// input → validate the request context → `on_input_available` → approval
    /// gate → execute (in the background for background tools) → validate
    /// the suspend payload or the output → `to_model_output` → `on_output`.
    /// Never panics and never returns an error: a failure is
    /// [`CallOutcome::Failed`] with the error object the model reads. A
    /// call that must be stored (it waits, or is a background or
    /// transactional call) waits for a failing store up to
    /// [`RuntimeBuilder::store_retry_budget`], then fails so ("could not be
    /// stored").
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
        self.inner.path.call(call)
    }

    /// Starts receiving the arguments of call `call_id` to `tool_id`: fires
    /// `on_input_start` (the tool's, then the runtime's) and emits
    /// `InputStart`. The call can be cancelled from now on.
    pub fn begin(
        &self,
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        messages: Vec<Value>,
    ) -> InputStream {
        self.begin_call(CallHead::new(call_id, tool_id).with_messages(messages))
    }

    /// [`begin`](Self::begin) with the whole envelope given up front (the
    /// requester, the agent, extensions): its hooks see the call as it is.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallHead, Runtime};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let echo = Tool::builder("echo").description("Echo")
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(echo).build().unwrap();
    /// let mut stream = runtime.begin_call(CallHead::new("c1", "echo").with_requester("user:ada"));
    /// stream.push(r#"{"n": 1}"#);
    /// assert_eq!(stream.finish().await.output(), Some(&json!({ "n": 1 })));
    /// # });
    /// ```
    pub fn begin_call(&self, head: CallHead) -> InputStream {
        InputStream::begin(&self.inner.path, head)
    }

    /// Approves a call that waits for approval and runs it (once): its
    /// outcome is what the call would have returned without the gate. The
    /// stored arguments are admitted again (validated) before they run.
    ///
    /// The approval is one atomic transition of the store (pending →
    /// running, claimed by this instance), and the call then runs as a task
    /// of its own: dropping this future does not stop it, and its outcome is
    /// recorded. Asked again once the call settled (from any instance
    /// sharing the store), approve returns the recorded outcome; while the
    /// call runs, [`RuntimeError::Running`].
    ///
    /// Errors: no such stored call, the call is suspended rather than
    /// awaiting approval, it is running, this runtime lacks its tool (it
    /// stays pending), the store failed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let delete = Tool::builder("delete-file").description("Delete a file")
    ///     .require_approval(true)
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "deleted": input["path"] })) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(delete).build().unwrap();
    ///
    /// let outcome = runtime.call(ToolCall::new("c1", "delete-file", json!({ "path": "/tmp/x" }))).await;
    /// assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    /// let outcome = tokio::spawn(runtime.approve("c1")).await.unwrap().unwrap();
    /// assert_eq!(outcome.output(), Some(&json!({ "deleted": "/tmp/x" })));
    /// // Asked again (a client that lost the answer): the recorded outcome, not a second run.
    /// assert_eq!(runtime.approve("c1").await.unwrap(), outcome);
    /// assert!(matches!(runtime.approve("c2").await, Err(RuntimeError::UnknownCall { .. })));
    /// # });
    /// ```
    pub fn approve(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.decide(call_id, Decision::Approve, Extensions::new())
    }

    /// Declines a call that waits for approval: it never runs, and the model
    /// receives `reason` or `Tool call was not approved by the user`. The
    /// decline is recorded in one atomic transition (pending → settled), so
    /// an approval that races it, or comes later, gets the decline.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ModelFacing, Tool, ToolError};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let delete = Tool::builder("delete-file").description("Delete a file")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("deleted")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(delete).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "delete-file", json!({}))).await;
    /// let outcome = runtime.decline("c1", None).await.unwrap();
    /// assert_eq!(outcome.to_model_value(), "Tool call was not approved by the user");
    /// // An approval that comes too late gets the decline: the call never runs.
    /// assert_eq!(runtime.approve("c1").await.unwrap(), outcome);
    /// # });
    /// ```
    pub fn decline(
        &self,
        call_id: &str,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.decide(
            call_id,
            Decision::Decline(reason.map(str::to_owned)),
            Extensions::new(),
        )
    }

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
        self.decide(call_id, Decision::Resume(data), Extensions::new())
    }

    /// Gives the call `call_id` its `output` without running its tool: the
    /// result of a call to a declaration-only tool (built without an
    /// execute function; its call returned
    /// [`CallOutcome::AwaitingOutput`]), or an answer instead of running a
    /// call waiting for approval. The call settles as completed with this
    /// output, and the model reads it as the tool's result (through the
    /// tool's `to_model_output`, as an executed call's); the tool never
    /// runs, and `on_output` does not fire (the tool produced nothing).
    ///
    /// The output is validated against the tool's output schema first (see
    /// [`Tool::check_output`]): one that does not fit returns the
    /// model-facing error, and the call still waits, to be answered again.
    /// A valid one settles the call in one atomic transition: of concurrent
    /// decisions exactly one wins, the others get its recorded outcome.
    ///
    /// Errors: no such stored call, the call is suspended (use resume) or
    /// running, this runtime lacks its tool (it stays pending), the store
    /// failed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::Tool;
    /// use tool_runtime::{CallOutcome, PendingKind, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// // Runs in the user's browser: declared here, no execute function.
    /// let pick = Tool::builder("pick-color").description("Ask the user to pick a color")
    ///     .output_schema(json!({ "type": "object", "properties": { "color": { "type": "string" } }, "required": ["color"] }))
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(pick).build().unwrap();
    ///
    /// let outcome = runtime.call(ToolCall::new("c1", "pick-color", json!({}))).await;
    /// assert!(matches!(outcome, CallOutcome::AwaitingOutput { .. }));
    /// assert_eq!(runtime.inbox().waiting().await.unwrap()[0].call.kind, PendingKind::Output);
    ///
    /// let invalid = runtime.respond("c1", json!({ "colour": "teal" })).await.unwrap();
    /// assert!(invalid.error().is_some()); // the call still waits
    /// let done = runtime.respond("c1", json!({ "color": "teal" })).await.unwrap();
    /// assert_eq!(done.output(), Some(&json!({ "color": "teal" })));
    /// assert_eq!(runtime.respond("c1", json!({ "color": "red" })).await.unwrap(), done); // recorded once
    /// # });
    /// ```
    pub fn respond(
        &self,
        call_id: &str,
        output: Value,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.decide(call_id, Decision::Respond(output), Extensions::new())
    }

    /// [`resume`](Self::resume) with the resume type of the typed tool `T`
    /// (`#[tool]`'s generated struct, or a [`TypedTool`]): data of another
    /// type does not compile, and a call of another tool is refused
    /// ([`RuntimeError::TypeMismatch`]) before anything changes.
    /// [`PendingCall::suspend_payload`](crate::PendingCall::suspend_payload) reads what it suspended with as
    /// `T`'s suspend type.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{tool, ToolContext, ToolError};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Question { text: String }
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Answer { approved: bool }
    ///
    /// /// Delete a file after a human confirms
    /// #[tool]
    /// async fn delete_file(path: String, ctx: ToolContext<Question, Answer>) -> Result<String, ToolError> {
    ///     match ctx.resume_data() {
    ///         None => ctx.suspend(Question { text: format!("Delete {path}?") }),
    ///         Some(answer) if answer.approved => Ok(format!("deleted {path}")),
    ///         Some(_) => Ok("kept".into()),
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().tool(DeleteFileTool).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "delete_file", json!({ "path": "/tmp/x" }))).await;
    /// let waiting = &runtime.inbox().waiting().await.unwrap()[0].call;
    /// let question: Question = waiting.suspend_payload::<DeleteFileTool>().unwrap().unwrap();
    /// assert_eq!(question.text, "Delete /tmp/x?");
    /// let done = runtime.resume_as::<DeleteFileTool>("c1", Answer { approved: true }).await.unwrap();
    /// assert_eq!(done.output(), Some(&json!("deleted /tmp/x")));
    /// # });
    /// ```
    ///
    /// Data of another type is a compile error:
    ///
    /// ```compile_fail,E0308
    /// # use tool_core::{tool, ToolContext, ToolError};
    /// # #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// # struct Question { text: String }
    /// # #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// # struct Answer { approved: bool }
    /// # /// Delete a file after a human confirms
    /// # #[tool]
    /// # async fn delete_file(path: String, ctx: ToolContext<Question, Answer>) -> Result<String, ToolError> {
    /// #     ctx.suspend(Question { text: path })
    /// # }
    /// # let runtime = tool_runtime::Runtime::builder().tool(DeleteFileTool).build().unwrap();
    /// let _ = runtime.resume_as::<DeleteFileTool>("c1", Question { text: "yes".into() });
    /// ```
    pub fn resume_as<T: TypedTool>(
        &self,
        call_id: &str,
        data: T::Resume,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static
    where
        T::Resume: Serialize,
    {
        let decision = typed_value(call_id, &data).map(Decision::Resume);
        self.inner.decisions.decide_typed(call_id, decision, T::ID)
    }

    /// [`respond`](Self::respond) with the output type of the typed tool
    /// `T`: an output of another type does not compile, and a call of
    /// another tool is refused ([`RuntimeError::TypeMismatch`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{tool, ToolError};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// /// Transfer money
    /// #[tool(require_approval)]
    /// async fn transfer(cents: u64) -> Result<String, ToolError> {
    ///     Ok(format!("sent {cents}"))
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().tool(TransferTool).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "transfer", json!({ "cents": 500 }))).await;
    /// // Answered instead of running: the transfer never happens.
    /// let done = runtime.respond_as::<TransferTool>("c1", "sent by hand".to_owned()).await.unwrap();
    /// assert_eq!(done.output(), Some(&json!("sent by hand")));
    /// # });
    /// ```
    pub fn respond_as<T: TypedTool>(
        &self,
        call_id: &str,
        output: T::Output,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        let decision = typed_value(call_id, &output).map(Decision::Respond);
        self.inner.decisions.decide_typed(call_id, decision, T::ID)
    }

    /// Makes `decision` on the stored call `call_id`, the call running with
    /// `extensions` (`ToolContext::extension`; an agent that decides passes
    /// its `AgentContext` among them, which `ToolContext::agent` reads):
    /// extensions are not stored with a paused call, so its decider gives
    /// them; only the `AgentContext` the call was made with is stored, and a
    /// decision that gives none runs the call with it (so `approve` of an
    /// agent's call runs it as that agent's). Waits for the call's outcome. Of concurrent
    /// decisions on one call, across runtimes sharing a store, exactly one
    /// wins; the others get the recorded outcome or
    /// [`RuntimeError::Running`]. The decision runs as a task of its own:
    /// dropping the future cannot leave the call half-run.
    ///
    /// [`approve`](Self::approve), [`decline`](Self::decline),
    /// [`resume`](Self::resume) and [`respond`](Self::respond) are this without extensions; an agent loop
    /// passes the run the call belongs to and its own extensions.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{AgentContext, Extensions, Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Decision, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let delete = Tool::builder("delete-file").description("Delete a file")
    ///     .require_approval(true)
    ///     .execute(|_input, ctx| async move {
    ///         Ok::<_, ToolError>(json!({ "run": ctx.agent().map(|agent| agent.run_id.clone()) }))
    ///     })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(delete).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "delete-file", json!({}))).await;
    /// let mut extensions = Extensions::new();
    /// extensions.insert(AgentContext::new("support", "run-7"));
    /// let outcome = runtime.decide("c1", Decision::Approve, extensions).await.unwrap();
    /// assert_eq!(outcome.output(), Some(&json!({ "run": "run-7" })));
    ///
    /// // A call an agent made keeps its agent: approved without one, it runs as the agent's.
    /// runtime.call(ToolCall::new("c2", "delete-file", json!({})).with_agent(AgentContext::new("support", "run-8"))).await;
    /// assert_eq!(runtime.inbox().waiting().await.unwrap()[0].call.head.agent, Some(AgentContext::new("support", "run-8")));
    /// let outcome = runtime.approve("c2").await.unwrap();
    /// assert_eq!(outcome.output(), Some(&json!({ "run": "run-8" })));
    /// # });
    /// ```
    pub fn decide(
        &self,
        call_id: &str,
        decision: Decision,
        extensions: Extensions,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.inner
            .decisions
            .decide(call_id, decision, extensions, None)
    }

    /// [`decide`](Self::decide), by a person: `decider` names who decides
    /// and the digest of the item as they read it ([`StoredCall::digest`](crate::StoredCall::digest),
    /// which a listing gives). A call that changed since (another digest)
    /// is refused with [`RuntimeError::StaleDigest`]; a decision another
    /// one beat is [`RuntimeError::AlreadyDecided`], with what that one
    /// recorded. The decision, or the refused attempt (a stale digest, a
    /// decision beaten or expired), is appended to the audit log ([`CallInbox::audit`]) with the principal, the digest
    /// and the values as the tool's display transforms show them.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::store::{AuditKind, AuditQuery};
    /// use tool_runtime::{Decider, Decision, Digest, Principal, Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let transfer = Tool::builder("transfer").description("Moves money")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(transfer).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "transfer", json!({ "amount": 5 }))).await;
    /// let digest = runtime.inbox().stored("c1").await.unwrap().unwrap().digest();
    ///
    /// let refused = runtime.decide_as("c1", Decision::Approve, Decider::new(Principal::new("bob"), Digest::new("sha256:00"))).await;
    /// assert!(matches!(refused, Err(RuntimeError::StaleDigest { .. })));
    /// let outcome = runtime.decide_as("c1", Decision::Approve, Decider::new(Principal::new("alice"), digest.clone())).await.unwrap();
    /// assert_eq!(outcome.output(), Some(&json!("moved")));
    /// let late = runtime.decide_as("c1", Decision::Decline(None), Decider::new(Principal::new("carol"), digest.clone())).await;
    /// assert!(matches!(late, Err(RuntimeError::AlreadyDecided { .. })));
    ///
    /// let log = runtime.inbox().audit(AuditQuery::all().call("c1")).await.unwrap();
    /// let kinds: Vec<_> = log.iter().map(|e| (e.kind, e.principal.as_deref())).collect();
    /// assert_eq!(kinds, [
    ///     (AuditKind::Requested, None),
    ///     (AuditKind::Refused, Some("bob")),     // a stale digest
    ///     (AuditKind::Decided, Some("alice")),
    ///     (AuditKind::Refused, Some("carol")),   // decided already
    /// ]);
    /// # });
    /// ```
    pub fn decide_as(
        &self,
        call_id: &str,
        decision: Decision,
        decider: Decider,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.inner
            .decisions
            .decide_by(call_id, decision, Extensions::new(), None, Some(decider))
    }

    /// Recovers the stored calls whose runtime died while running them
    /// (their lease expired), among the tools this runtime has: a call of a
    /// tool declared `retry_safe` runs again (as attempt 2, 3, ...; with the
    /// resume data it was resumed with); any other is settled as failed with
    /// an "interrupted" error the model can read, and never runs again.
    /// Either way the outcome is recorded, so a decision asked again returns
    /// it. Also forgets settled calls (and finished agent runs) beyond the
    /// retention.
    ///
    /// Call it when a runtime starts and then periodically (every lease
    /// length is enough), or run a [`Worker`](crate::Worker), which does
    /// this on its own and also runs stored tasks; several instances may
    /// call it at once: each expired call is recovered by exactly one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_runtime::Runtime;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().lease(Duration::from_secs(10)).build().unwrap();
    /// assert!(runtime.recover().await.unwrap().is_empty()); // nothing was interrupted
    ///
    /// let sweeper = runtime.clone();
    /// let sweeping = tokio::spawn(async move {
    ///     loop {
    ///         if let Err(error) = sweeper.recover().await {
    ///             eprintln!("recovery failed: {error}");
    ///         }
    ///         tokio::time::sleep(Duration::from_secs(10)).await;
    ///     }
    /// });
    /// # sweeping.abort();
    /// # });
    /// ```
    pub fn recover(
        &self,
    ) -> impl Future<Output = Result<Vec<Recovered>, RuntimeError>> + Send + 'static {
        self.inner.decisions.recover()
    }

    /// Waits for a background task and returns its final outcome (any
    /// number of times, while its outcome is kept). A task this runtime
    /// runs is watched in memory; any other (run by another runtime sharing
    /// the store, or before a restart) is read from the store until it
    /// settles.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{BackgroundConfig, ModelFacing, Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let report = Tool::builder("report").description("Builds a long report")
    ///     .background(BackgroundConfig::new().timeout_ms(5_000).max_retries(1))
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("report ready")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(report).build().unwrap();
    ///
    /// let started = runtime.call(ToolCall::new("c1", "report", json!({}))).await;
    /// let CallOutcome::BackgroundStarted { task_id } = &started else { panic!("{started:?}") };
    /// assert!(started.to_model_value().as_str().unwrap().starts_with("Background task started. Task ID: "));
    /// let done = runtime.wait(task_id).await.unwrap();
    /// assert_eq!(done.output(), Some(&json!("report ready")));
    /// # });
    /// ```
    pub fn wait(
        &self,
        task_id: &str,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.inner.path.tasks().wait(task_id)
    }

    /// A worker for this runtime's tasks (see [`Worker`]).
    pub fn worker(&self) -> Worker {
        Worker::new(self.inner.decisions.clone())
    }

    /// A dispatcher of the notifications in this runtime's store's outbox
    /// to sinks, set up by the builder (see [`Dispatcher`]). The runtime
    /// writes notifications when built with
    /// [`RuntimeBuilder::notifications`]; a dispatcher delivers those any
    /// runtime on the store wrote.
    pub fn dispatcher(&self) -> DispatcherBuilder {
        let stored = self.inner.path.stored();
        DispatcherBuilder::new(stored.outbox(), stored.owner().to_owned())
    }

    /// A `tracing` layer that forwards events inside this runtime's calls
    /// to its events ([`CallLogLayer`]).
    #[cfg(feature = "log-layer")]
    pub fn log_layer(&self) -> CallLogLayer {
        let path = &self.inner.path;
        CallLogLayer::new(path.events().clone(), Arc::clone(path.running()))
    }

    /// Subscribes to the runtime's events, from now on. Progress events reach
    /// the subscribers present when the call started (a call started with no
    /// subscriber builds no events at all).
    pub fn events(&self) -> Events {
        self.inner.path.events().subscribe()
    }

    /// Watches the progress and log messages of the call `call_id` (as
    /// [`events`](Self::events) would show them, without building any other
    /// call's events), from now on until the watch is dropped: what a
    /// transport forwards to the client that made the call. Watch before
    /// starting the call so that nothing is missed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{Notice, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let import = Tool::builder("import").description("Import rows")
    ///     .execute(|_input, ctx| async move {
    ///         ctx.progress(1.0, Some(2.0), Some("first half"));
    ///         Ok::<_, ToolError>(json!("done"))
    ///     })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(import).build().unwrap();
    /// let mut watch = runtime.watch("c1");
    /// runtime.call(ToolCall::new("c1", "import", json!({}))).await;
    /// let Notice::Progress(progress) = watch.next().await else { panic!("a progress notice") };
    /// assert_eq!(progress.message.as_deref(), Some("first half"));
    /// assert!(watch.try_next().is_none());
    /// # });
    /// ```
    pub fn watch(&self, call_id: &str) -> CallWatch {
        self.inner.path.events().watch(call_id)
    }

    /// The agent runs kept in this runtime's store (see [`Runs`]).
    pub fn runs(&self) -> Runs {
        self.inner.runs.clone()
    }

    /// The calls waiting for a person and what people decided: the
    /// waiting calls, a stored call by id, a call's approvals, the audit
    /// log (see [`CallInbox`]). Cheap; clones share the runtime's store.
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_runtime::store::AuditQuery;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().build().unwrap();
    /// let inbox = runtime.inbox();
    /// assert!(inbox.waiting().await.unwrap().is_empty());
    /// assert!(inbox.audit(AuditQuery::all()).await.unwrap().is_empty());
    /// # });
    /// ```
    pub fn inbox(&self) -> CallInbox {
        CallInbox::new(self.inner.decisions.clone())
    }

    /// The standing rules of this runtime's store: approvals given ahead
    /// of time for calls whose input matches (see [`StandingRules`]).
    /// Every runtime sharing the store applies the same rules.
    ///
    /// ```
    /// use tool_runtime::Runtime;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().build().unwrap();
    /// assert!(runtime.rules().in_force(None).await.unwrap().is_empty());
    /// # });
    /// ```
    pub fn rules(&self) -> StandingRules {
        StandingRules::new(self.inner.path.clone())
    }

    /// How long, and how many, settled calls' outcomes the store keeps
    /// ([`RuntimeBuilder::settled_retention`],
    /// [`RuntimeBuilder::settled_limit`]): how long after it ends a client
    /// can still ask for a call's outcome.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_runtime::Runtime;
    ///
    /// let runtime = Runtime::builder().build().unwrap();
    /// assert_eq!(runtime.retention().max_settled, 10_000);
    /// let runtime = Runtime::builder()
    ///     .settled_retention(Duration::from_secs(60))
    ///     .settled_limit(500)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(runtime.retention().age, Duration::from_secs(60));
    /// assert_eq!(runtime.retention().max_settled, 500);
    /// ```
    pub fn retention(&self) -> Retention {
        self.inner.path.stored().retention()
    }

    /// Whether this runtime writes notifications into its store's outbox
    /// ([`RuntimeBuilder::notifications`]): what an integration that
    /// delivers none (or keeps no outbox) checks before taking it.
    ///
    /// ```
    /// use tool_runtime::Runtime;
    ///
    /// assert!(!Runtime::builder().build().unwrap().notifies());
    /// assert!(Runtime::builder().notifications(true).build().unwrap().notifies());
    /// ```
    pub fn notifies(&self) -> bool {
        self.inner.path.stored().notifications().on()
    }

    /// This runtime instance's id, the owner of the stored calls it runs.
    pub fn instance_id(&self) -> &str {
        self.inner.path.stored().owner()
    }

    /// Fires the abort signal of a running call (or of a call whose input is
    /// still streaming, or of a background task by its call id). The call
    /// ends as `CallOutcome::Aborted`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let slow = Tool::builder("slow").description("Waits until aborted")
    ///     .execute(|_input, ctx| async move {
    ///         ctx.abort_signal().aborted().await;
    ///         Ok::<_, ToolError>(json!("stopped"))
    ///     })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(slow).build().unwrap();
    /// let running = tokio::spawn(runtime.call(ToolCall::new("c1", "slow", "{}")));
    /// tokio::time::sleep(Duration::from_millis(10)).await;
    /// runtime.cancel("c1").unwrap();
    /// assert_eq!(running.await.unwrap(), CallOutcome::Aborted);
    /// assert!(runtime.cancel("c1").is_err()); // no longer running
    /// # });
    /// ```
    pub fn cancel(&self, call_id: &str) -> Result<(), RuntimeError> {
        self.inner.path.cancel(call_id)
    }
}

/// Configures a [`Runtime`]: tools, runtime-wide hooks, approval policy,
/// pending store, time limits, background callbacks.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use tool_core::{Hooks, Tool, ToolError};
/// use tool_runtime::{Runtime, RuntimeError};
///
/// let echo = Tool::builder("echo").description("Echo")
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build().unwrap();
/// let runtime = Runtime::builder()
///     .tool(echo.clone())
///     .hooks(Hooks::new().on_output(|out: tool_core::hooks::OutputAvailable| async move {
///         println!("{} -> {}", out.tool_id, out.output); // an async hook
///     }))
///     .approval_policy(|check| check.tool.id() == "delete") // a sync policy
///     .hook_timeout(Duration::from_secs(2))
///     .timeout(Duration::from_secs(60))
///     .build()
///     .unwrap();
/// assert_eq!(runtime.tools().len(), 1);
///
/// // Two tools with one id: an error, not a silent replace.
/// let error = Runtime::builder().tool(echo.clone()).tool(echo).build().unwrap_err();
/// assert!(matches!(error, RuntimeError::Build(_)));
/// ```
#[must_use]
#[derive(Default)]
pub struct RuntimeBuilder {
    tools: Vec<Tool>,
    state: AppState,
    hooks: Hooks,
    hook_timeout: Option<Duration>,
    approval: ApprovalRules,
    store: Option<StoreChoice>,
    /// Where standing rules are kept, when not in `store`.
    rule_store: Option<Arc<dyn DynRuleStore>>,
    before_run: Option<BeforeRun>,
    event_capacity: Option<usize>,
    timeout: Option<Duration>,
    tool_timeouts: HashMap<String, Duration>,
    on_complete: Option<BackgroundCallback>,
    on_failed: Option<BackgroundCallback>,
    task_retention: Option<usize>,
    instance_id: Option<String>,
    lease: Option<Duration>,
    store_retry_budget: Option<Duration>,
    settled_retention: Option<Duration>,
    settled_limit: Option<usize>,
    audit_retention: Option<Duration>,
    audit_limit: Option<usize>,
    notifications: bool,
    leave_tasks_to_workers: bool,
}

/// The pending store a [`RuntimeBuilder`] was given: the last call wins.
enum StoreChoice {
    /// A store, as each of its jobs.
    Given(Stores),
    /// Opened by `build`.
    #[cfg(feature = "sqlite")]
    Sqlite(PathBuf),
}

impl StoreChoice {
    /// The chosen store (by default a memory store), a file opened now.
    fn open(choice: Option<Self>) -> Result<Stores, RuntimeError> {
        match choice {
            Some(StoreChoice::Given(stores)) => Ok(stores),
            None => Ok(Stores::of(MemoryStore::new())),
            #[cfg(feature = "sqlite")]
            Some(StoreChoice::Sqlite(path)) => Ok(Stores::of(SqliteStore::open(path)?)),
        }
    }
}

impl fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field(
                "tools",
                &self.tools.iter().map(Tool::id).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl RuntimeBuilder {
    /// Adds a tool (a `#[tool]` type or a built [`Tool`]).
    pub fn tool(mut self, tool: impl Into<Tool>) -> Self {
        self.tools.push(tool.into());
        self
    }

    /// Adds several tools.
    pub fn tools<I, T>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<Tool>,
    {
        self.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Gives every call of every tool the application state `value` (a
    /// database pool, an HTTP client, a configuration), one value per
    /// type: a `#[tool]` function takes it as a
    /// [`State<T>`](tool_core::State) parameter, any tool reads it with
    /// [`ToolContext::state`](tool_core::ToolContext::state). Every run of
    /// a call sees it: the first, after approval or resume, after recovery
    /// by another instance, in a [`Worker`](crate::Worker) (each instance
    /// gives its own; none is stored). [`build`](Self::build) refuses a
    /// runtime that lacks state one of its tools declares.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_core::{State, tool};
    /// use tool_runtime::{Runtime, RuntimeError, ToolCall};
    ///
    /// #[derive(Clone)]
    /// struct Ledger { rows: Arc<std::sync::Mutex<Vec<u32>>> }
    ///
    /// /// Writes a refund to the ledger.
    /// #[tool(require_approval)]
    /// async fn refund(amount: u32, State(ledger): State<Ledger>) -> usize {
    ///     let mut rows = ledger.rows.lock().unwrap();
    ///     rows.push(amount);
    ///     rows.len()
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let ledger = Ledger { rows: Arc::default() };
    /// let runtime = Runtime::builder().tool(RefundTool).state(ledger.clone()).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "refund", serde_json::json!({ "amount": 40 }))).await;
    /// // Approved later (here, or on another instance with its own state):
    /// let outcome = runtime.approve("c1").await.unwrap();
    /// assert_eq!(outcome.output(), Some(&serde_json::json!(1)));
    /// assert_eq!(*ledger.rows.lock().unwrap(), [40]);
    ///
    /// let error = Runtime::builder().tool(RefundTool).build().unwrap_err();
    /// assert!(matches!(error, RuntimeError::MissingState { .. }));
    /// assert!(error.to_string().contains("Ledger"));
    /// # });
    /// ```
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Runtime-wide lifecycle hooks; they fire after each tool's own hooks.
    /// Sync or async; how they are ordered and waited for: see
    /// [`hook_timeout`](Self::hook_timeout).
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// How long the runtime waits for one hook, the tool's or its own
    /// (default [`DEFAULT_HOOK_TIMEOUT`](crate::DEFAULT_HOOK_TIMEOUT), 5 s).
    /// Past it the hook's future is dropped, the timeout logged, and the
    /// call goes on. The hooks of a call run one at a time, in order; those
    /// of streamed input run off the stream (`InputStream::push` never
    /// waits for them), and `finish` waits for them before
    /// `on_input_available`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use tool_core::hooks::{Hooks, OutputAvailable};
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::Runtime;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let echo = Tool::builder("echo").description("Echo")
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder()
    ///     .tool(echo)
    ///     // A hook that never ends: the call goes on after 20 ms.
    ///     .hooks(Hooks::new().on_output(|_: OutputAvailable| std::future::pending::<()>()))
    ///     .hook_timeout(Duration::from_millis(20))
    ///     .build().unwrap();
    /// let outcome = runtime.call(tool_runtime::ToolCall::new("c1", "echo", json!({ "n": 1 }))).await;
    /// assert_eq!(outcome.output(), Some(&json!({ "n": 1 })));
    /// # });
    /// ```
    pub fn hook_timeout(mut self, timeout: Duration) -> Self {
        self.hook_timeout = Some(timeout);
        self
    }

    /// Every call of every tool needs approval (unless the tool has its own
    /// approval policy function, which is authoritative).
    pub fn require_approval(mut self, required: bool) -> Self {
        self.approval.set_policy(if required {
            ApprovalPolicy::Always
        } else {
            ApprovalPolicy::Never
        });
        self
    }

    /// Decides per call whether approval is needed, for tools without their
    /// own policy function (a tool's `require_approval` flag still applies:
    /// flag OR policy). The policy returns a `bool` or a `Result<bool, E>`,
    /// or a `Send + 'static` future of one (copy what it needs of the check
    /// first). A policy that fails, panics or does not answer within
    /// [`approval_timeout`](Self::approval_timeout) means approval is required.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let pay = Tool::builder("pay").description("Pay an invoice")
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder()
    ///     .tool(pay)
    ///     .approval_policy(|check| {
    ///         let amount = check.input["amount"].as_u64().unwrap_or(u64::MAX);
    ///         let requester = check.requester.map(str::to_owned);
    ///         async move {
    ///             // e.g. the requester's limit, looked up in a database
    ///             let limit = if requester.as_deref() == Some("cfo") { 10_000 } else { 100 };
    ///             Ok::<_, std::io::Error>(amount > limit)
    ///         }
    ///     })
    ///     .build().unwrap();
    /// let small = runtime.call(ToolCall::new("c1", "pay", json!({ "amount": 50 }))).await;
    /// assert_eq!(small.output(), Some(&json!({ "amount": 50 })));
    /// let big = runtime.call(ToolCall::new("c2", "pay", json!({ "amount": 500 }))).await;
    /// assert!(matches!(big, CallOutcome::ApprovalRequired { .. }));
    /// # });
    /// ```
    pub fn approval_policy<F, R, M>(mut self, policy: F) -> Self
    where
        F: Fn(&ApprovalCheck<'_>) -> R + Send + Sync + 'static,
        R: ApprovalPolicyReturn<M>,
    {
        self.approval.set_policy(ApprovalPolicy::Custom(Arc::new(
            move |check: &ApprovalCheck<'_>| policy(check).into_answer(),
        )));
        self
    }

    /// How long the runtime waits for an approval policy's answer, the
    /// tool's or its own (default
    /// [`DEFAULT_APPROVAL_TIMEOUT`](crate::DEFAULT_APPROVAL_TIMEOUT), 10 s);
    /// past it, the call needs approval.
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval.set_policy_timeout(timeout);
        self
    }

    /// Where pending calls, agent runs and the audit log are kept (default:
    /// in memory): a store that implements [`CallStore`](crate::store::CallStore),
    /// [`RunStore`](crate::store::RunStore) and [`AuditLog`](crate::store::AuditLog),
    /// or an `Arc` of one to share it between runtimes ([`IntoStore`]).
    /// Replaces an earlier `store` or `sqlite_store`.
    pub fn store(mut self, store: impl IntoStore) -> Self {
        self.store = Some(StoreChoice::Given(Stores::of(store)));
        self
    }

    /// Keeps the standing rules ([`Runtime::rules`]) in `store` rather
    /// than in the runtime's store: rules shared by runtimes whose calls
    /// are kept apart (tool-restate keeps them in a Restate object, and
    /// each step's calls in a store of its own).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::store::MemoryStore;
    /// use tool_runtime::{CallOutcome, Principal, Runtime, StandingRule, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let refund = || Tool::builder("refund").description("Refunds").require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("refunded")) })
    ///     .build().unwrap();
    /// let rules = Arc::new(MemoryStore::new());
    /// let made_here = Runtime::builder().tool(refund()).rule_store(Arc::clone(&rules)).build().unwrap();
    /// let applied_there = Runtime::builder().tool(refund()).rule_store(rules).build().unwrap();
    ///
    /// let until = SystemTime::now() + Duration::from_secs(3600);
    /// made_here.rules().make(&Principal::system("ops"), StandingRule::new("all", "refund", until)).await.unwrap();
    /// let call = ToolCall::new("c1", "refund", json!({}));
    /// assert!(matches!(applied_there.call(call).await, CallOutcome::Completed { .. }));
    /// # });
    /// ```
    pub fn rule_store<R: RuleStore>(mut self, store: Arc<R>) -> Self {
        self.rule_store = Some(store);
        self
    }

    /// Checks each claimed stored call right before its tool runs (after
    /// its approval, resume or claim as a task): [`RunCheck::Interrupted`]
    /// makes the runtime recover the call as one whose run was interrupted
    /// (settled as interrupted, reconciled, or run again where its tool
    /// allows, as [`Runtime::recover`] does) instead of running it. A check
    /// that fails leaves the call claimed, and the decision answers
    /// [`RuntimeError::Store`]: the call is recovered when its lease runs
    /// out, as one whose instance died. A call that runs at once, never
    /// stored, is not checked.
    ///
    /// For an engine that takes a step again after a crash without the
    /// store knowing (tool-restate counts a step's executions): its second
    /// execution must not run a tool that is not retry-safe again, yet the
    /// decision it repeats is recorded and audited as the first one was.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Decision, RunCheck, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let pay = Tool::builder("pay").description("Pays").require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("paid")) })
    ///     .build().unwrap();
    /// // As if an earlier execution of every run had begun and was lost.
    /// let runtime = Runtime::builder().tool(pay)
    ///     .before_run(|_stored| async { Ok(RunCheck::Interrupted) })
    ///     .build().unwrap();
    /// runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    /// let outcome = runtime.decide("c1", Decision::Approve, Default::default()).await.unwrap();
    /// let CallOutcome::Failed { error } = outcome else { panic!("{outcome:?}") };
    /// assert!(error.message().contains("interrupted"));
    /// # });
    /// ```
    pub fn before_run<F, Fut>(mut self, check: F) -> Self
    where
        F: Fn(&StoredCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RunCheck, StoreError>> + Send + 'static,
    {
        self.before_run = Some(BeforeRun::new(check));
        self
    }

    /// Keeps pending calls in the SQLite file at `path`, opened by
    /// [`build`](Self::build) (which fails if the file is corrupt or unreadable).
    /// Replaces an earlier `store` or `sqlite_store`.
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    pub fn sqlite_store(mut self, path: impl Into<PathBuf>) -> Self {
        self.store = Some(StoreChoice::Sqlite(path.into()));
        self
    }

    /// Capacity of the event channel (default 1024); a subscriber that falls
    /// further behind skips events.
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = Some(capacity);
        self
    }

    /// Time limit of every call (unless the call or its tool sets one).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Time limit of every call of one tool (unless the call sets one).
    pub fn tool_timeout(mut self, tool_id: impl Into<String>, timeout: Duration) -> Self {
        self.tool_timeouts.insert(tool_id.into(), timeout);
        self
    }

    /// How long a call waits for approval before it expires: from then on
    /// it is declined with the reason `expired` (the model reads it) by
    /// the first runtime sharing the store that notices (a listing,
    /// [`waiting`](CallInbox::waiting), a decision on it, or
    /// [`recover`](Runtime::recover), which workers run), exactly once,
    /// and no decision runs it. No expiry by default.
    ///
    /// ```
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let transfer = Tool::builder("transfer").description("Moves money")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(transfer).approval_ttl(Duration::ZERO).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "transfer", json!({}))).await;
    /// assert!(runtime.inbox().waiting().await.unwrap().is_empty(), "expired: declined on sight");
    /// let outcome = runtime.approve("c1").await.unwrap();
    /// assert_eq!(outcome, CallOutcome::Declined { reason: Some("expired".into()) });
    /// # });
    /// ```
    pub fn approval_ttl(mut self, ttl: Duration) -> Self {
        self.approval.set_ttl(ttl);
        self
    }

    /// How long a call of one tool waits for approval before it expires,
    /// instead of the runtime's [`approval_ttl`](Self::approval_ttl).
    pub fn tool_approval_ttl(mut self, tool_id: impl Into<String>, ttl: Duration) -> Self {
        self.approval.set_tool_ttl(tool_id.into(), ttl);
        self
    }

    /// Separation of duties: whether the principal who asked for a call
    /// (its [`requester`](crate::CallHead::requester)) is refused when they
    /// take a decision that makes it go on: approve it, edit it, answer it
    /// in its place, or resume it ([`RuntimeError::SelfApproval`]; the
    /// attempt goes to the audit log). Declining one's own call stays
    /// allowed. It is a rule of the call, not of the inbox: a decision that
    /// makes a call go on must then name who takes it
    /// ([`Runtime::decide_as`]); [`Runtime::approve`], `resume` and
    /// `respond`, which name nobody, are refused with
    /// [`RuntimeError::PrincipalRequired`], and code that decides without a
    /// person names the system ([`Principal::system`](crate::Principal::system),
    /// recorded as `system:<name>`, never a requester). A call that needs
    /// approval must say who asked: one without a requester fails with an
    /// error saying so, since nobody could tell whether its approver asked
    /// for it. Off by default.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{Decider, Decision, Principal, Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let transfer = Tool::builder("transfer").description("Moves money")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(transfer).forbid_self_approval(true).build().unwrap();
    /// let anonymous = runtime.call(ToolCall::new("c0", "transfer", json!({}))).await;
    /// assert!(anonymous.error().unwrap().message().contains("requester"));
    ///
    /// runtime.call(ToolCall::new("c1", "transfer", json!({})).with_requester("alice")).await;
    /// let digest = runtime.inbox().stored("c1").await.unwrap().unwrap().digest();
    /// let own = runtime.decide_as("c1", Decision::Approve, Decider::new(Principal::new("alice"), digest.clone())).await;
    /// assert!(matches!(own, Err(RuntimeError::SelfApproval { .. })));
    /// // Code in the process cannot go around the rule by naming nobody...
    /// assert!(matches!(runtime.approve("c1").await, Err(RuntimeError::PrincipalRequired { .. })));
    /// let other = runtime.decide_as("c1", Decision::Approve, Decider::new(Principal::new("bob"), digest.clone())).await;
    /// assert_eq!(other.unwrap().output(), Some(&json!("moved")));
    ///
    /// // ...and names the system when it decides alone.
    /// runtime.call(ToolCall::new("c2", "transfer", json!({})).with_requester("alice")).await;
    /// let digest = runtime.inbox().stored("c2").await.unwrap().unwrap().digest();
    /// let nightly = Decider::new(Principal::system("nightly"), digest);
    /// assert!(runtime.decide_as("c2", Decision::Approve, nightly).await.is_ok());
    /// # });
    /// ```
    pub fn forbid_self_approval(mut self, forbid: bool) -> Self {
        self.approval.set_forbid_self_approval(forbid);
        self
    }

    /// How many different principals must approve a call before it runs
    /// (N of M: M is whoever the application lets approve). Each
    /// [`Runtime::decide_as`] approval by a principal who has not approved
    /// this version of the call yet is recorded (in the audit log, as
    /// [`AuditKind::Granted`](crate::store::AuditKind::Granted), on every
    /// instance sharing the store) and answered
    /// [`CallOutcome::ApprovalRequired`]; the one that completes the count
    /// runs the call, once. A decline by any of them declines it. An
    /// approval naming nobody ([`Runtime::approve`]) is refused with
    /// [`RuntimeError::PrincipalRequired`]. An edit by a principal makes
    /// the call a new version (the approval policy asked again on the
    /// edited input), counted as its editor's grant of it: grants of the
    /// earlier version no longer count. One by default; 0 counts as 1.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Decider, Decision, Principal, Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let transfer = Tool::builder("transfer").description("Moves money")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(transfer).approvals_required(2).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "transfer", json!({}))).await;
    /// let digest = runtime.inbox().stored("c1").await.unwrap().unwrap().digest();
    ///
    /// let first = runtime.decide_as("c1", Decision::Approve, Decider::new(Principal::new("alice"), digest.clone())).await;
    /// assert!(matches!(first.unwrap(), CallOutcome::ApprovalRequired { .. }));
    /// let again = runtime.decide_as("c1", Decision::Approve, Decider::new(Principal::new("alice"), digest.clone())).await;
    /// assert!(matches!(again.unwrap(), CallOutcome::ApprovalRequired { .. }), "alice counts once");
    /// assert!(matches!(runtime.approve("c1").await, Err(RuntimeError::PrincipalRequired { .. })));
    /// assert_eq!(runtime.inbox().approvals("c1").await.unwrap().granted, ["alice"]);
    ///
    /// let second = runtime.decide_as("c1", Decision::Approve, Decider::new(Principal::new("bob"), digest.clone())).await;
    /// assert_eq!(second.unwrap().output(), Some(&json!("moved")));
    /// # });
    /// ```
    pub fn approvals_required(mut self, principals: u32) -> Self {
        self.approval.set_approvals_required(principals);
        self
    }

    /// How many different principals must approve a call of one tool,
    /// instead of the runtime's [`approvals_required`](Self::approvals_required).
    pub fn tool_approvals_required(mut self, tool_id: impl Into<String>, principals: u32) -> Self {
        self.approval
            .set_tool_approvals_required(tool_id.into(), principals);
        self
    }

    /// Who may make standing rules
    /// ([`Runtime::rules`]): principals in `group` (and the system). A
    /// rule's author may revoke it, as may anyone who may make rules.
    /// Without it, only the system may.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{Principal, Runtime, RuntimeError, StandingRule};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let refund = Tool::builder("refund").description("Refunds an order").require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(serde_json::json!("done")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(refund).rule_authors("finance-leads").build().unwrap();
    /// let rule = || StandingRule::new("r1", "refund", SystemTime::now() + Duration::from_secs(60));
    /// let clerk = Principal::new("carl").in_group("finance");
    /// let refused = runtime.rules().make(&clerk, rule()).await;
    /// assert!(matches!(refused, Err(RuntimeError::RuleRefused { .. })));
    /// let lead = Principal::new("dana").in_group("finance-leads");
    /// assert_eq!(runtime.rules().make(&lead, rule()).await.unwrap().author, "dana");
    /// # });
    /// ```
    pub fn rule_authors(mut self, group: impl Into<String>) -> Self {
        self.approval.set_rule_authors(group.into());
        self
    }

    /// Registers a predicate that standing rules call by `name`
    /// ([`StandingRule::when`](crate::StandingRule::when)): typed on the
    /// tool's input `I` and the rule's arguments `A`. A rule whose
    /// predicate cannot be evaluated (input or arguments of another shape,
    /// a panic) approves nothing.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Principal, Runtime, StandingRule, ToolCall};
    ///
    /// #[derive(Deserialize)]
    /// struct Refund { amount: u64 }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let refund = Tool::builder("refund").description("Refunds an order").require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("done")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder()
    ///     .tool(refund)
    ///     .rule_predicate("amount_at_most", |refund: &Refund, cap: &u64| refund.amount <= *cap)
    ///     .build()
    ///     .unwrap();
    /// let until = SystemTime::now() + Duration::from_secs(3600);
    /// let rule = StandingRule::new("small", "refund", until).when("amount_at_most", json!(100));
    /// runtime.rules().make(&Principal::system("ops"), rule).await.unwrap();
    /// let call = |id, amount| ToolCall::new(id, "refund", json!({ "amount": amount }));
    /// assert!(matches!(runtime.call(call("c1", 80)).await, CallOutcome::Completed { .. }));
    /// assert!(matches!(runtime.call(call("c2", 800)).await, CallOutcome::ApprovalRequired { .. }));
    /// # });
    /// ```
    pub fn rule_predicate<I, A, F>(mut self, name: impl Into<String>, predicate: F) -> Self
    where
        I: serde::de::DeserializeOwned,
        A: serde::de::DeserializeOwned,
        F: Fn(&I, &A) -> bool + Send + Sync + 'static,
    {
        self.approval
            .predicates_mut()
            .insert(name.into(), predicate);
        self
    }

    /// Called when a background task completes.
    pub fn on_background_complete(
        mut self,
        callback: impl Fn(&BackgroundResult) + Send + Sync + 'static,
    ) -> Self {
        self.on_complete = Some(Arc::new(callback));
        self
    }

    /// Called when a background task fails (after its retries), times out or is aborted.
    pub fn on_background_failed(
        mut self,
        callback: impl Fn(&BackgroundResult) + Send + Sync + 'static,
    ) -> Self {
        self.on_failed = Some(Arc::new(callback));
        self
    }

    /// How many finished background tasks `wait` remembers (default 10,000);
    /// older ones are forgotten first.
    pub fn task_retention(mut self, tasks: usize) -> Self {
        self.task_retention = Some(tasks);
        self
    }

    /// Names this runtime instance, the owner of the stored calls it runs
    /// (default: unique per process and runtime). Give each instance sharing
    /// a store its own id.
    pub fn instance_id(mut self, id: impl Into<String>) -> Self {
        self.instance_id = Some(id.into());
        self
    }

    /// How long a claim on a running stored call lasts unless renewed
    /// (default 30 s; renewed every third of it while the call runs). The
    /// instance running a call stops it when this long passed, by its own
    /// clock, since the last renewal the store took; another instance may
    /// take the call over ([`Runtime::recover`]) a grace of a quarter of the
    /// lease later, so the two never run it at once. A decider waits this
    /// long for an outcome the store cannot take yet before it answers
    /// [`RuntimeError::NotRecorded`].
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// How long a new call that must be stored is tried again while the
    /// store fails, before the call fails (default 10 s; zero: one try). A
    /// call is stored when it waits (for approval, for its output from the
    /// application, after it suspended) and, before it runs, when it is a
    /// background or transactional call.
    ///
    /// While the store fails with an I/O error ([`StoreError::Io`](crate::StoreError::Io):
    /// a database restarting, a connection lost), the call is tried again
    /// after 50 ms, then after twice as long each time up to 1 s, and at
    /// once when the store answers again (the runtime reads it every 50 ms
    /// while anything waits for it). No try starts after the budget; one
    /// in flight then is awaited, since abandoning it would leave unknown
    /// whether the call was stored. Any other error fails the call at once
    /// (an id already stored, a value no store keeps). A try that the
    /// store took but whose answer was lost is recognised by the next one:
    /// the call found stored as it was sent counts as stored, not as a
    /// duplicate, and is stored once. The budget is the caller's wait for
    /// the store: it does not count towards a tool's time limit, which
    /// counts its run only.
    ///
    /// When the budget runs out, [`Runtime::call`] answers a failure the
    /// model reads ([`CallOutcome::Failed`],
    /// kind [`ErrorKind::Execution`](tool_core::ErrorKind::Execution)),
    /// naming what could not be stored, the store's last error, and the
    /// tries: `Tool pay needs approval, but the call could not be stored:
    /// the pending store .. failed: .. (tried 15 times over 10002 ms)`.
    /// Nothing is stored, unless the last try reached the store and only
    /// its answer was lost: [`CallInbox::stored`] tells.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_runtime::Runtime;
    ///
    /// // Ride out a failover of up to half a minute.
    /// let runtime = Runtime::builder()
    ///     .store_retry_budget(Duration::from_secs(30))
    ///     .build()
    ///     .unwrap();
    /// # drop(runtime);
    /// ```
    pub fn store_retry_budget(mut self, budget: Duration) -> Self {
        self.store_retry_budget = Some(budget);
        self
    }

    /// Stores background calls without running them: a [`Worker`](crate::Worker)
    /// of any runtime sharing the store claims and runs each (default
    /// `false`: the runtime that takes a call runs its task at once, and
    /// workers take only the tasks of runtimes that died first).
    ///
    /// For a front end that only takes calls, beside worker processes: a
    /// deferred call answers `BackgroundStarted` at once, and
    /// [`Runtime::wait`] reads the outcome from the store. With the default
    /// memory store, only a worker of this runtime (or one given the same
    /// `Arc<MemoryStore>`) runs them.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{BackgroundConfig, Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let report = Tool::builder("report").description("Builds a report")
    ///     .background(BackgroundConfig::new())
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("ready")) })
    ///     .build().unwrap();
    /// let front = Runtime::builder().tool(report).leave_tasks_to_workers(true).build().unwrap();
    /// let started = front.call(ToolCall::new("c1", "report", json!({}))).await;
    /// assert!(matches!(started, CallOutcome::BackgroundStarted { .. }));
    /// assert!(front.inbox().stored("c1").await.unwrap().unwrap().state.is_pending()); // not run yet
    ///
    /// tokio::spawn(front.worker().run()); // here, or on any instance sharing the store
    /// assert_eq!(front.wait("c1").await.unwrap().output(), Some(&json!("ready")));
    /// # });
    /// ```
    pub fn leave_tasks_to_workers(mut self, leave: bool) -> Self {
        self.leave_tasks_to_workers = leave;
        self
    }

    /// How long a settled call's outcome stays in the store, for decisions
    /// asked again and [`CallInbox::stored`] (default 24 hours); a finished
    /// agent run is kept as long after its last save. Paused runs stay.
    pub fn settled_retention(mut self, retention: Duration) -> Self {
        self.settled_retention = Some(retention);
        self
    }

    /// How many settled calls' outcomes the store keeps at most (default
    /// 10,000): beyond them the oldest settled are purged first, even within
    /// [`settled_retention`](Self::settled_retention), so that a busy runtime
    /// does not grow for a day (a settled call costs about 2.6 KB in the
    /// memory store: 200,000 approvals in 24 hours held over 500 MB; 10,000
    /// hold about 26 MB). A decision asked again on a call purged so answers
    /// [`RuntimeError::Purged`], not that the call is unknown: the store
    /// remembers the ids it purged for the retention's time (about 170
    /// bytes each in memory).
    ///
    /// Purges run when a minute passed since the last, or sooner once an
    /// eighth of the limit settled through the instance: between purges
    /// the store may hold that many more. Runtimes that share a store purge
    /// it each with its own limit: give them one.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tool = Tool::builder("echo").description("Echo").require_approval(true)
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(tool).settled_limit(2).build().unwrap();
    /// for id in ["c1", "c2", "c3"] {
    ///     runtime.call(ToolCall::new(id, "echo", json!({ "id": id }))).await;
    ///     runtime.approve(id).await.unwrap();
    /// }
    /// // The two most recently settled are kept; c1 was purged, and is said to be.
    /// assert!(matches!(runtime.approve("c1").await, Err(RuntimeError::Purged { .. })));
    /// assert_eq!(runtime.approve("c3").await.unwrap().output(), Some(&json!({ "id": "c3" })));
    /// # });
    /// ```
    pub fn settled_limit(mut self, calls: usize) -> Self {
        self.settled_limit = Some(calls);
        self
    }

    /// How long the store keeps an audit entry (default 90 days): the
    /// runtime purges older ones as it purges settled calls, except the
    /// entries of a call still pending (its grants count). Export what must
    /// be kept longer first ([`CallInbox::audit`](crate::CallInbox::audit), `GET /api/audit` of the
    /// inbox).
    pub fn audit_retention(mut self, retention: Duration) -> Self {
        self.audit_retention = Some(retention);
        self
    }

    /// How many audit entries the store keeps at most (default 100,000):
    /// beyond them the oldest go first, even within
    /// [`audit_retention`](Self::audit_retention), so that a flood of
    /// refused attempts cannot grow the log without bound. A call still
    /// pending keeps its own.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::store::{AuditEntry, AuditKind, AuditQuery};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tool = Tool::builder("echo").description("Echo").require_approval(true)
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(tool).audit_limit(8).build().unwrap();
    /// runtime.call(ToolCall::new("waits", "echo", json!({}))).await; // its request entry stays
    /// for n in 0..100 {
    ///     let refused = AuditEntry::new(AuditKind::Refused, format!("gone-{n}"), "echo", "approve");
    ///     runtime.inbox().append_audit(refused).await.unwrap();
    /// }
    /// let log = runtime.inbox().audit(AuditQuery::all()).await.unwrap();
    /// assert!(log.len() <= 8 + 8 / 8, "{}", log.len()); // the bound, and what came since the last purge
    /// assert_eq!(log[0].call_id, "waits");
    /// # });
    /// ```
    pub fn audit_limit(mut self, entries: usize) -> Self {
        self.audit_limit = Some(entries);
        self
    }

    /// Whether the runtime writes notifications of what happens to its
    /// calls into its store's outbox, each in the same atomic step as the
    /// change it reports (default: no): an approval asked for, granted,
    /// decided or expired, a call suspended or resumed, a background task
    /// ended ([`NotificationKind`](crate::store::NotificationKind)). A
    /// [`Dispatcher`] delivers them to people. Every runtime on a store
    /// whose notifications are delivered should write them.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::store::{NotificationKind, OutboxQuery};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let refund = Tool::builder("refund").description("Refunds an order").require_approval(true)
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(refund).notifications(true).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "refund", json!({ "amount": 10 }))).await;
    /// runtime.decline("c1", Some("no")).await.unwrap();
    ///
    /// let outbox = runtime.inbox().outbox(OutboxQuery::all().call("c1")).await.unwrap();
    /// let kinds: Vec<_> = outbox.iter().map(|entry| entry.notification.kind).collect();
    /// assert_eq!(kinds, [NotificationKind::ApprovalRequested, NotificationKind::Decided]);
    /// assert_eq!(outbox[1].notification.data["action"], "decline");
    /// # });
    /// ```
    pub fn notifications(mut self, write: bool) -> Self {
        self.notifications = write;
        self
    }

    /// Builds the runtime: fails on two tools with one id, and on a store
    /// file that cannot be opened or is corrupt.
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        let tools = ToolSet::new(self.tools)?;
        let stores = StoreChoice::open(self.store)?;
        check_transactional(&tools, stores.calls.as_ref())?;
        check_state(&tools, &self.state)?;
        let stored = StoredCalls::new(
            &stores,
            self.instance_id.unwrap_or_else(unique_instance_id),
            self.lease.unwrap_or(LEASE),
            Retention::new(
                self.settled_retention.unwrap_or(SETTLED_RETENTION),
                self.settled_limit.unwrap_or(SETTLED_LIMIT),
            ),
            AuditRetention::new(
                self.audit_retention.unwrap_or(AUDIT_RETENTION),
                self.audit_limit.unwrap_or(AUDIT_LIMIT),
            ),
            self.store_retry_budget.unwrap_or(STORE_RETRY_BUDGET),
            Notifications::new(self.notifications),
        );
        let mut approval = self.approval;
        approval.set_rule_store(self.rule_store.unwrap_or(stores.rules));
        let path = CallPath::new(PathParts {
            tools,
            hooks: self.hooks,
            hook_timeout: self.hook_timeout.unwrap_or(DEFAULT_HOOK_TIMEOUT),
            approval,
            events: EventBus::new(self.event_capacity.unwrap_or(EVENT_CAPACITY)),
            running: Arc::default(),
            tasks: Tasks::new(
                stored.clone(),
                self.task_retention.unwrap_or(TASK_RETENTION),
                self.on_complete,
                self.on_failed,
            ),
            stored,
            timeout: self.timeout,
            tool_timeouts: self.tool_timeouts,
            leave_tasks_to_workers: self.leave_tasks_to_workers,
            state: self.state,
        });
        Ok(Runtime {
            inner: Arc::new(Inner {
                decisions: Decisions::new(path.clone(), self.before_run),
                path,
                runs: Runs::new(stores.runs),
            }),
        })
    }
}

/// Every transactional tool can run as declared on `store`.
fn check_transactional(tools: &ToolSet, store: &dyn DynCallStore) -> Result<(), RuntimeError> {
    for tool in tools.iter().filter(|tool| tool.definition().transactional) {
        let reason = if store.transaction().is_none() {
            "the runtime's store cannot run a tool in its transactions (the memory store cannot): give it a SqliteStore or a PostgresStore"
        } else if tool
            .definition()
            .background
            .as_ref()
            .is_some_and(|b| b.enabled)
        {
            "it runs in the background, whose attempts retry within one claim while a transaction commits once per claim: declare it transactional or background, not both"
        } else {
            continue;
        };
        return Err(RuntimeError::Transactional {
            tool_id: tool.id().to_owned(),
            reason: reason.to_owned(),
        });
    }
    Ok(())
}

/// Refuses a runtime that lacks application state one of its tools needs.
fn check_state(tools: &ToolSet, state: &AppState) -> Result<(), RuntimeError> {
    for tool in tools.iter() {
        let missing: Vec<&str> = tool
            .required_state()
            .iter()
            .filter(|required| !state.satisfies(required))
            .map(|required| required.type_name())
            .collect();
        if !missing.is_empty() {
            return Err(RuntimeError::MissingState {
                tool_id: tool.id().to_owned(),
                types: missing.join(", "),
            });
        }
    }
    Ok(())
}

/// An instance id no other runtime has: the process id and a random number
/// (std's per-hasher random keys; no global state of ours).
fn unique_instance_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("runtime-{}-{random:016x}", std::process::id())
}
