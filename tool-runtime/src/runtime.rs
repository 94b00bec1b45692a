//! The [`Runtime`] and its [`RuntimeBuilder`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
#[cfg(feature = "sqlite")]
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tool_core::{Hooks, Tool, ToolSet};

use crate::abort::CancelRegistry;
use crate::approval::{ApprovalCheck, ApprovalPolicy};
use crate::background::{BackgroundCallback, BackgroundResult, Tasks};
use crate::error::RuntimeError;
use crate::events::{CallWatch, EventBus, Events};
use crate::runs::Runs;
#[cfg(feature = "sqlite")]
use crate::store::SqliteStore;
use crate::store::{
    CallStore, DynCallStore, DynRunStore, MemoryStore, PendingCall, PendingKind, RunStore,
    StoredCall, StoredCalls,
};

/// Default capacity of the event channel, per subscriber.
const EVENT_CAPACITY: usize = 1024;
/// Default lease of a running stored call: how long after its instance dies
/// another one may recover it.
const LEASE: Duration = Duration::from_secs(30);
/// Default time a settled call's outcome stays in the store.
const SETTLED_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
/// Default number of finished background tasks whose outcome `wait` can still return.
const TASK_RETENTION: usize = 10_000;

/// Runs tools: validation, hooks, approval, suspend/resume, background tasks,
/// cancellation, events. Cheap to clone (one `Arc`); every clone is the same
/// runtime. There is no global state: two runtimes share nothing but what
/// they are given (for example one store file).
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
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) tools: ToolSet,
    pub(crate) hooks: Hooks,
    pub(crate) approval: ApprovalPolicy,
    pub(crate) calls: StoredCalls,
    runs: Runs,
    pub(crate) events: EventBus,
    pub(crate) running: Arc<CancelRegistry>,
    pub(crate) tasks: Tasks,
    pub(crate) timeout: Option<Duration>,
    pub(crate) tool_timeouts: HashMap<String, Duration>,
    /// Background calls are stored and left to a [`Worker`](crate::Worker).
    pub(crate) leave_tasks_to_workers: bool,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field(
                "tools",
                &self.inner.tools.iter().map(Tool::id).collect::<Vec<_>>(),
            )
            .field("hooks", &self.inner.hooks)
            .field("timeout", &self.inner.timeout)
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
        &self.inner.tools
    }

    /// The tool named `id`.
    pub fn tool(&self, id: &str) -> Option<&Tool> {
        self.inner.tools.get(id)
    }

    /// Subscribes to the runtime's events, from now on. Progress events reach
    /// the subscribers present when the call started (a call started with no
    /// subscriber builds no events at all).
    pub fn events(&self) -> Events {
        self.inner.events.subscribe()
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
        self.inner.events.watch(call_id)
    }

    /// The agent runs kept in this runtime's store (see [`Runs`]).
    pub fn runs(&self) -> Runs {
        self.inner.runs.clone()
    }

    /// How long a settled call's outcome stays in the store
    /// ([`RuntimeBuilder::settled_retention`]): how long after it ends a
    /// client can still ask for it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_runtime::Runtime;
    ///
    /// let runtime = Runtime::builder().settled_retention(Duration::from_secs(60)).build().unwrap();
    /// assert_eq!(runtime.settled_retention(), Duration::from_secs(60));
    /// ```
    pub fn settled_retention(&self) -> Duration {
        self.inner.calls.retention()
    }

    /// Every call waiting for approval or resume data, from the store.
    pub fn pending(
        &self,
    ) -> impl Future<Output = Result<Vec<PendingCall>, RuntimeError>> + Send + 'static {
        let runtime = self.clone();
        async move {
            let mut pending = runtime.inner.calls.list().await?;
            pending.retain(|call| call.kind != PendingKind::Task);
            Ok(pending)
        }
    }

    /// The stored call `call_id` in whatever state it is (pending, running,
    /// settled with its outcome), or `None`: how a client that lost a
    /// response finds out what became of a call.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallState, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let delete = Tool::builder("delete-file").description("Delete a file")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("deleted")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(delete).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "delete-file", json!({}))).await;
    /// assert_eq!(runtime.stored("c1").await.unwrap().unwrap().state, CallState::Pending);
    /// runtime.approve("c1").await.unwrap();
    /// let settled = runtime.stored("c1").await.unwrap().unwrap();
    /// assert!(matches!(settled.state, CallState::Settled { .. }));
    /// # });
    /// ```
    pub fn stored(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Option<StoredCall>, RuntimeError>> + Send + 'static {
        let (runtime, call_id) = (self.clone(), call_id.to_owned());
        async move { Ok(runtime.inner.calls.get(&call_id).await?) }
    }

    /// This runtime instance's id, the owner of the stored calls it runs.
    pub fn instance_id(&self) -> &str {
        self.inner.calls.owner()
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
        if self.inner.running.cancel(call_id) {
            tracing::info!(call_id, "tool call cancelled");
            Ok(())
        } else {
            Err(RuntimeError::NotRunning {
                call_id: call_id.to_owned(),
            })
        }
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
///     .hooks(Hooks::new().on_output(|out: &tool_core::hooks::OutputAvailable<'_>| println!("{} -> {}", out.tool_id, out.output)))
///     .approval_policy(|check| check.tool.id() == "delete")
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
    hooks: Hooks,
    approval: ApprovalPolicy,
    store: Option<StoreChoice>,
    event_capacity: Option<usize>,
    timeout: Option<Duration>,
    tool_timeouts: HashMap<String, Duration>,
    on_complete: Option<BackgroundCallback>,
    on_failed: Option<BackgroundCallback>,
    task_retention: Option<usize>,
    instance_id: Option<String>,
    lease: Option<Duration>,
    settled_retention: Option<Duration>,
    leave_tasks_to_workers: bool,
}

/// The pending store a [`RuntimeBuilder`] was given: the last call wins.
enum StoreChoice {
    /// The same store, as each of its two jobs.
    Given(Arc<dyn DynCallStore>, Arc<dyn DynRunStore>),
    /// Opened by `build`.
    #[cfg(feature = "sqlite")]
    Sqlite(PathBuf),
}

/// A runtime's store as each of its jobs: the calls' lifecycle, the runs.
type Stores = (Arc<dyn DynCallStore>, Arc<dyn DynRunStore>);

impl StoreChoice {
    fn given<S: CallStore + RunStore>(store: S) -> Self {
        let store = Arc::new(store);
        StoreChoice::Given(store.clone(), store)
    }

    /// The chosen store (by default a memory store), a file opened now.
    fn open(choice: Option<Self>) -> Result<Stores, RuntimeError> {
        match choice.unwrap_or_else(|| StoreChoice::given(MemoryStore::new())) {
            StoreChoice::Given(calls, runs) => Ok((calls, runs)),
            #[cfg(feature = "sqlite")]
            StoreChoice::Sqlite(path) => {
                let store = Arc::new(SqliteStore::open(path)?);
                Ok((store.clone(), store))
            }
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

    /// Runtime-wide lifecycle hooks; they fire after each tool's own hooks.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Every call of every tool needs approval (unless the tool has its own
    /// approval policy function, which is authoritative).
    pub fn require_approval(mut self, required: bool) -> Self {
        self.approval = if required {
            ApprovalPolicy::Always
        } else {
            ApprovalPolicy::Never
        };
        self
    }

    /// Decides per call whether approval is needed, for tools without their
    /// own policy function (a tool's `require_approval` flag still applies:
    /// flag OR policy). A policy that panics means approval is required.
    pub fn approval_policy(
        mut self,
        policy: impl Fn(&ApprovalCheck<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.approval = ApprovalPolicy::Custom(Arc::new(policy));
        self
    }

    /// Where pending calls are kept (default: in memory). Replaces an
    /// earlier `store` or `sqlite_store`.
    pub fn store(mut self, store: impl CallStore + RunStore) -> Self {
        self.store = Some(StoreChoice::given(store));
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
    /// (default 30 s; renewed every third of it while the call runs). When
    /// the instance running it dies, another may recover the call this long
    /// after the last renewal ([`Runtime::recover`]).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
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
    /// assert!(front.stored("c1").await.unwrap().unwrap().state.is_pending()); // not run yet
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
    /// asked again and [`Runtime::stored`] (default 24 hours); a finished
    /// agent run is kept as long after its last save. Paused runs stay.
    pub fn settled_retention(mut self, retention: Duration) -> Self {
        self.settled_retention = Some(retention);
        self
    }

    /// Builds the runtime: fails on two tools with one id, and on a store
    /// file that cannot be opened or is corrupt.
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        let tools = ToolSet::new(self.tools)?;
        let (store, runs) = StoreChoice::open(self.store)?;
        Ok(Runtime {
            inner: Arc::new(Inner {
                tools,
                hooks: self.hooks,
                approval: self.approval,
                calls: StoredCalls::new(
                    store,
                    self.instance_id.unwrap_or_else(unique_instance_id),
                    self.lease.unwrap_or(LEASE),
                    self.settled_retention.unwrap_or(SETTLED_RETENTION),
                ),
                runs: Runs::new(runs),
                events: EventBus::new(self.event_capacity.unwrap_or(EVENT_CAPACITY)),
                running: Arc::default(),
                tasks: Tasks::new(
                    self.task_retention.unwrap_or(TASK_RETENTION),
                    self.on_complete,
                    self.on_failed,
                ),
                timeout: self.timeout,
                tool_timeouts: self.tool_timeouts,
                leave_tasks_to_workers: self.leave_tasks_to_workers,
            }),
        })
    }
}

/// An instance id no other runtime has: the process id and a random number
/// (std's per-hasher random keys; no global state of ours).
fn unique_instance_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("runtime-{}-{random:016x}", std::process::id())
}
