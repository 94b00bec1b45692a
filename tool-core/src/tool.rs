//! The erased [`Tool`], its [`ToolBuilder`] (the analogue of `createTool`),
//! and the [`TypedTool`] trait the `#[tool]` attribute implements.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::app_state::StateRequirement;
use crate::approval::{ApprovalPolicyReturn, ApprovalRequirement, PolicyAnswer};
use crate::context::{CallShared, ToolContext};
use crate::definition::{BackgroundConfig, McpOptions, OutputValidation, ToolDefinition};
use crate::error::{BuildError, ToolError, is_valid_tool_id};
use crate::hooks::Hooks;
use crate::host::{StateType, WorkflowState};
use crate::idempotency::IdempotencyKey;
use crate::input::{MAX_SCHEMA_DEPTH, drop_iteratively, too_deep};
use crate::model_output::ModelOutput;
use crate::parameter::{InputMismatch, InputParameter, input_schema, typed_input, wrapping};
use crate::reconcile::{ReconcileFunction, Reconciled};
use crate::request_context::RequestContext;
use crate::schema::{escape_token, mentions_integers, schema_for};
use crate::transform::ToolTransform;
use crate::validate::{LazyValidator, Schema, SchemaOrigin};

/// What an execute function produced.
pub(crate) struct Executed {
    pub(crate) output: Value,
    pub(crate) model_output: Option<ModelOutput>,
}

/// Why an execute function produced no output.
pub(crate) enum ExecFailure {
    /// The function returned an error.
    Tool(ToolError),
    /// The validated input did not deserialize into the function's type:
    /// where (property names and array indexes) and why.
    Input { path: Vec<String>, reason: String },
    /// The output could not be serialized.
    Output(String),
    /// Stored resume data or suspend payload no longer fit the tool's types.
    Context(String),
}

/// How an execute function (or, with `T = Reconciled<Executed>`, a
/// reconcile hook) ended, with the arguments it ran on: a suspended call is
/// stored with them, type-level input errors quote them.
pub(crate) struct Exec<T = Executed> {
    pub(crate) result: Result<T, ExecFailure>,
    pub(crate) input: Value,
}

pub(crate) type ExecFuture = Pin<Box<dyn Future<Output = Exec> + Send>>;
pub(crate) type ExecFn = dyn Fn(Value, Arc<CallShared>) -> ExecFuture + Send + Sync;
/// How a reconcile hook ended: what it found, its output serialized.
pub(crate) type ReconcileExec = Exec<Reconciled<Executed>>;
pub(crate) type ReconcileFuture = Pin<Box<dyn Future<Output = ReconcileExec> + Send>>;
pub(crate) type ReconcileFn =
    dyn Fn(Value, IdempotencyKey, Arc<CallShared>) -> ReconcileFuture + Send + Sync;
type ModelOutputFn = dyn Fn(&Value) -> ModelOutput + Send + Sync;
type ApprovalPolicy = dyn Fn(&Value, &RequestContext) -> PolicyAnswer + Send + Sync;

/// A tool with typed input and output: what `#[tool]` generates for an
/// annotated function, and what a hand-written tool can implement.
///
/// `Tool::from(t)` erases it; the schemas are derived from the associated
/// types. `()` as `Output` means no output schema; [`NoSuspend`](crate::NoSuspend) as
/// `Suspend` and `Resume` means the tool does not suspend (its context
/// has no `suspend` method then).
///
/// ```
/// use tool_core::{CallContext, NoSuspend, Tool, ToolContext, ToolError, TypedTool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct AddInput { a: i64, b: i64 }
///
/// struct AddTool;
///
/// impl TypedTool for AddTool {
///     type Input = AddInput;
///     type Output = i64;
///     type Suspend = NoSuspend;
///     type Resume = NoSuspend;
///     const ID: &'static str = "add";
///     const DESCRIPTION: &'static str = "Add two integers";
///
///     async fn execute(&self, input: AddInput, _ctx: ToolContext) -> Result<i64, ToolError> {
///         Ok(input.a + input.b)
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tool = Tool::from(AddTool);
/// let outcome = tool.execute(r#"{"a": 2, "b": 3}"#, CallContext::new("c1")).await;
/// assert_eq!(outcome.output(), Some(&serde_json::json!(5)));
/// # });
/// ```
pub trait TypedTool: Send + Sync + Sized + 'static {
    /// The arguments.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// The output.
    type Output: Serialize + JsonSchema + Send + 'static;
    /// The suspend payload ([`NoSuspend`](crate::NoSuspend): the tool does not suspend).
    type Suspend: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The resume data ([`NoSuspend`](crate::NoSuspend): the tool does not suspend).
    type Resume: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The tool's id.
    const ID: &'static str;
    /// The tool's description for the model.
    const DESCRIPTION: &'static str;
    /// When `Input` is the tool function's one parameter: its name and docs.
    /// If `Input`'s JSON Schema is then not an object with named properties
    /// (an enum, a list, a scalar), the model's input is the object
    /// `{"<name>": value}`, since providers and MCP take an object as a
    /// tool's input. `None` (the default): `Input` is the whole input.
    const INPUT_PARAMETER: Option<InputParameter> = None;

    /// Sets the remaining options (title, strict, approval, MCP, hooks, ...).
    fn configure(builder: ToolBuilder) -> ToolBuilder {
        builder
    }

    /// Whether [`to_model_output`](Self::to_model_output) maps outputs
    /// (`#[tool(to_model_output = ..)]` sets both): what a model or an MCP
    /// client is sent is then the mapped form ([`Tool::has_to_model_output`]).
    const MAPS_OUTPUT: bool = false;

    /// The model-facing form of an output, when it differs from the output.
    fn to_model_output(output: &Self::Output) -> Option<ModelOutput> {
        let _ = output;
        None
    }

    /// Runs the tool.
    fn execute(
        &self,
        input: Self::Input,
        ctx: ToolContext<Self::Suspend, Self::Resume>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// A tool, type-erased and cheap to clone: its definition, compiled
/// validators, execute function and options. Build one with `#[tool]`
/// (`Tool::from(WeatherTool)`) or with [`Tool::builder`].
///
/// Schemas are derived once, when the tool is built; a hand-written schema
/// is checked against its meta-schema then, and validators compile on the
/// tool's first call (so a runtime with many tools starts fast). Clones
/// share them.
#[derive(Clone)]
pub struct Tool {
    pub(crate) inner: Arc<ToolInner>,
}

pub(crate) struct ToolInner {
    pub(crate) id: Arc<str>,
    pub(crate) definition: ToolDefinition,
    /// The validators of the definition's schemas, compiled on first use:
    /// read them through [`ToolInner::input_schema`] and its siblings.
    /// `None` only when the schema was refused (then `config_error` is set).
    input: Option<LazyValidator>,
    output: Option<LazyValidator>,
    suspend: Option<LazyValidator>,
    resume: Option<LazyValidator>,
    request_context: Option<LazyValidator>,
    /// The workflow state's.
    state: Option<LazyValidator>,
    /// The edit schema ([`Tool::edit_schema`]) and its validator, when
    /// some fields are editable.
    pub(crate) edit_schema: Option<Value>,
    edit: Option<LazyValidator>,
    /// The workflow state's type, when the tool declares one.
    pub(crate) workflow_state_type: Option<StateType>,
    /// The application state the tool needs (each type once).
    pub(crate) required_state: Box<[StateRequirement]>,
    /// The input schema has integers: integral floats are read as integers.
    pub(crate) has_integers: bool,
    /// Why the tool cannot run (a schema refused when it was built); calls
    /// fail with it.
    pub(crate) config_error: Option<BuildError>,
    /// A schema that passed its checks when the tool was built and still
    /// does not compile, found when the validators are compiled (the first
    /// call); calls fail with it too.
    pub(crate) compile_error: OnceLock<Option<BuildError>>,
    /// `None` for a declaration-only tool ([`Tool::has_execute`]).
    pub(crate) executor: Option<Arc<ExecFn>>,
    /// The reconcile hook, when the tool has one.
    pub(crate) reconciler: Option<Arc<ReconcileFn>>,
    pub(crate) to_model_output: Option<Arc<ModelOutputFn>>,
    /// Whether the tool maps its outputs (a builder's `to_model_output`,
    /// or a typed tool's).
    pub(crate) maps_output: bool,
    pub(crate) approval_policy: Option<Arc<ApprovalPolicy>>,
    pub(crate) transform: ToolTransform,
    pub(crate) hooks: Hooks,
    /// Values add-ons derive from the tool once ([`Tool::derived`]).
    pub(crate) derived: crate::derived::Derived,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("definition", &self.inner.definition)
            .field("hooks", &self.inner.hooks)
            .field("transform", &self.inner.transform)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// Starts a dynamic tool: schemas given as JSON, execute over JSON values.
    pub fn builder(id: impl Into<String>) -> ToolBuilder {
        ToolBuilder::new(id.into())
    }

    /// The tool's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The tool's declaration.
    pub fn definition(&self) -> &ToolDefinition {
        &self.inner.definition
    }

    /// The tool's lifecycle hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.inner.hooks
    }

    /// The tool's display and transcript transforms.
    pub fn transform(&self) -> &ToolTransform {
        &self.inner.transform
    }

    /// Why the tool cannot run, if its schemas did not compile. Validators
    /// are compiled on first use; this compiles them.
    pub fn config_error(&self) -> Option<&BuildError> {
        self.inner
            .config_error
            .as_ref()
            .or_else(|| self.inner.compile_validators())
    }

    /// True when the tool has a reconcile hook
    /// ([`ToolBuilder::reconcile`], `#[tool(reconcile = path)]`), which
    /// [`Tool::reconcile`] runs.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Reconciled, Tool, ToolError};
    ///
    /// let builder = || Tool::builder("charge").description("Charge a card")
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("charged")) });
    /// assert!(!builder().build().unwrap().has_reconcile());
    /// let reconciling = builder()
    ///     .reconcile(|_input, _key, _ctx| async move { Ok::<_, ToolError>(Reconciled::NotHappened) })
    ///     .build().unwrap();
    /// assert!(reconciling.has_reconcile());
    /// ```
    pub fn has_reconcile(&self) -> bool {
        self.inner.reconciler.is_some()
    }

    /// False for a declaration-only tool: built without an execute
    /// function ([`ToolBuilder::execute`]), as a tool that runs elsewhere
    /// (in a UI, on a client). A runtime stores its calls, validated like
    /// any call, until the application gives the result
    /// (`Runtime::respond`, checked by [`Tool::check_output`]); it never
    /// runs here, and an MCP server does not serve it.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let confirm = Tool::builder("confirm-in-ui").description("Ask the user to confirm in the UI")
    ///     .output_schema(json!({ "type": "boolean" }))
    ///     .build().unwrap();
    /// assert!(!confirm.has_execute());
    /// let echo = Tool::builder("echo").description("Echo")
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// assert!(echo.has_execute());
    /// ```
    pub fn has_execute(&self) -> bool {
        self.inner.executor.is_some()
    }

    /// The application state the tool needs
    /// ([`ToolBuilder::requires_state`], or a `#[tool]` function's
    /// [`State<T>`](crate::State) parameters): a call given none of one of
    /// them is refused before the tool runs, and a runtime that lacks one
    /// refuses to build.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// struct Pool;
    /// let tool = Tool::builder("lookup").description("Looks an order up")
    ///     .requires_state::<Pool>()
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// assert_eq!(tool.required_state()[0].type_name(), std::any::type_name::<Pool>());
    /// ```
    pub fn required_state(&self) -> &[StateRequirement] {
        &self.inner.required_state
    }

    /// Whether the tool maps its output to what the model reads
    /// (`to_model_output`): what is served to a model or an MCP client is
    /// then that, not the output.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ModelOutput, Tool, ToolError};
    ///
    /// let builder = || Tool::builder("token").description("Issues a token")
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!({ "token": "abc" })) });
    /// assert!(!builder().build().unwrap().has_to_model_output());
    /// let mapped = builder().to_model_output(|_| ModelOutput::text("issued")).build().unwrap();
    /// assert!(mapped.has_to_model_output());
    /// ```
    pub fn has_to_model_output(&self) -> bool {
        self.inner.maps_output
    }

    /// True when the tool has an approval policy function (it is authoritative).
    pub fn has_approval_policy(&self) -> bool {
        self.inner.approval_policy.is_some()
    }

    /// What this call needs by the tool's own rules: its policy
    /// function's [`ApprovalRequirement`](crate::ApprovalRequirement) when
    /// it has one, otherwise its `require_approval` flag (required, or
    /// not). A policy that fails or panics means required (and is logged).
    /// The policy function is called here, on the borrowed input (nothing
    /// of the call is copied: [`approval_answer`](Self::approval_answer));
    /// the future is its answer, which an async policy gives when polled,
    /// and on which a runtime puts its time limit (a policy past it means
    /// required too).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ApprovalRequirement, RequestContext, Tool, ToolError};
    ///
    /// let refund = Tool::builder("refund").description("Refund an order")
    ///     .approval_policy(|input, _rc| match input["amount"].as_u64() {
    ///         Some(0..=100) => ApprovalRequirement::NotRequired,
    ///         Some(101..=1_000) => ApprovalRequirement::required(),
    ///         Some(_) => ApprovalRequirement::approvals(2).from_group("finance"),
    ///         None => ApprovalRequirement::refused("the amount must be a whole number"),
    ///     })
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let rc = RequestContext::new();
    /// assert_eq!(
    ///     refund.approval_requirement(&json!({ "amount": 5_000 }), &rc).await,
    ///     ApprovalRequirement::approvals(2).from_group("finance"),
    /// );
    /// assert!(!refund.requires_approval(&json!({ "amount": 5 }), &rc).await);
    /// # });
    /// ```
    pub fn approval_requirement(
        &self,
        input: &Value,
        request_context: &RequestContext,
    ) -> impl Future<Output = ApprovalRequirement> + Send + 'static + use<> {
        let answer = self.approval_answer(input, request_context);
        let tool_id = Arc::clone(&self.inner.id);
        async move {
            answer
                .resolve()
                .await
                .unwrap_or_else(|error| failed_policy(&tool_id, &error))
        }
    }

    /// What the tool's own rules answer for this call, asked now: its
    /// policy function's answer (a decision, or a future of one for an
    /// async policy), or its `require_approval` flag's. A policy that
    /// panics answers with why. What a runtime asks at its gate, so that a
    /// sync policy costs no future ([`PolicyAnswer::now`]); its
    /// [`resolve`](crate::PolicyAnswer::resolve) is what
    /// [`approval_requirement`](Self::approval_requirement) awaits.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ApprovalRequirement, RequestContext, Tool, ToolError};
    ///
    /// let refund = Tool::builder("refund").description("Refund an order")
    ///     .approval_policy(|input, _rc| input["amount"].as_u64().is_none_or(|amount| amount > 100))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let answer = refund.approval_answer(&json!({ "amount": 5 }), &RequestContext::new());
    /// assert_eq!(answer.now().ok(), Some(Ok(ApprovalRequirement::NotRequired)));
    /// ```
    pub fn approval_answer(
        &self,
        input: &Value,
        request_context: &RequestContext,
    ) -> crate::PolicyAnswer {
        let Some(policy) = self.inner.approval_policy.as_ref() else {
            return self.inner.definition.require_approval.into_answer();
        };
        crate::panic::catch_panic(|| policy(input, request_context))
            .unwrap_or_else(|panic| crate::PolicyAnswer::failed(format!("it panicked: {panic}")))
    }

    /// Whether this call waits for a person by the tool's own rules:
    /// [`approval_requirement`](Self::approval_requirement) is
    /// [`Required`](crate::ApprovalRequirement::Required).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{RequestContext, Tool, ToolError};
    ///
    /// let transfer = Tool::builder("transfer").description("Move money")
    ///     .approval_policy(|input, _rc| {
    ///         let amount = input["amount"].as_u64();
    ///         // An async policy: copy what it needs, then await (a limit, a ledger).
    ///         async move { Ok::<_, ToolError>(amount.is_none_or(|a| a > 100)) }
    ///     })
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let rc = RequestContext::new();
    /// assert!(transfer.requires_approval(&json!({ "amount": 500 }), &rc).await);
    /// assert!(!transfer.requires_approval(&json!({ "amount": 5 }), &rc).await);
    /// # });
    /// ```
    pub fn requires_approval(
        &self,
        input: &Value,
        request_context: &RequestContext,
    ) -> impl Future<Output = bool> + Send + 'static + use<> {
        let requirement = self.approval_requirement(input, request_context);
        async move { requirement.await.is_required() }
    }

    /// The tool's value of type `T`, computed by `init` on the first call
    /// for `T` and cached in the tool: clones share it, later calls are a
    /// lookup. For add-ons that derive something from a tool once, such as
    /// its provider exports (`Tool::export`, feature `provider`).
    ///
    /// The cache is keyed by type, so an add-on should use a type of its
    /// own (a private newtype) rather than a shared one like `String`.
    /// Concurrent first calls for the same `T` run `init` once and wait for
    /// it; `init` must not ask the same tool for the same `T` (that
    /// deadlocks, as with [`OnceLock`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// struct PropertyCount(usize);
    ///
    /// let tool = Tool::builder("weather")
    ///     .description("Get the weather")
    ///     .input_schema(json!({ "type": "object", "properties": { "city": { "type": "string" } } }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build()
    ///     .unwrap();
    ///
    /// let count = |tool: &Tool| {
    ///     let properties = tool.definition().input_schema["properties"].as_object().map_or(0, |p| p.len());
    ///     PropertyCount(properties)
    /// };
    /// let first = tool.derived(|| count(&tool));
    /// assert_eq!(first.0, 1);
    /// // Cached: a clone sees the same value, `init` does not run again.
    /// let clone = tool.clone();
    /// assert!(std::ptr::eq(first, clone.derived::<PropertyCount>(|| unreachable!())));
    /// ```
    pub fn derived<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> &T {
        self.inner.derived.get_or_init(init)
    }
}

impl ToolInner {
    pub(crate) fn input_schema(&self) -> Option<Schema<'_>> {
        Schema::pair(Some(&self.definition.input_schema), self.input.as_ref())
    }

    pub(crate) fn output_schema(&self) -> Option<Schema<'_>> {
        Schema::pair(self.definition.output_schema.as_ref(), self.output.as_ref())
    }

    pub(crate) fn suspend_schema(&self) -> Option<Schema<'_>> {
        Schema::pair(
            self.definition.suspend_schema.as_ref(),
            self.suspend.as_ref(),
        )
    }

    pub(crate) fn resume_schema(&self) -> Option<Schema<'_>> {
        Schema::pair(self.definition.resume_schema.as_ref(), self.resume.as_ref())
    }

    pub(crate) fn request_context_schema(&self) -> Option<Schema<'_>> {
        Schema::pair(
            self.definition.request_context_schema.as_ref(),
            self.request_context.as_ref(),
        )
    }

    pub(crate) fn workflow_state_schema(&self) -> Option<Schema<'_>> {
        Schema::pair(
            self.definition.workflow_state_schema.as_ref(),
            self.state.as_ref(),
        )
    }

    pub(crate) fn edit_schema(&self) -> Option<Schema<'_>> {
        Schema::pair(self.edit_schema.as_ref(), self.edit.as_ref())
    }

    /// Compiles every validator (once) and returns the first that failed.
    fn compile_validators(&self) -> Option<&BuildError> {
        self.compile_error
            .get_or_init(|| {
                [
                    ("input", self.input_schema()),
                    ("output", self.output_schema()),
                    ("suspend", self.suspend_schema()),
                    ("resume", self.resume_schema()),
                    ("request context", self.request_context_schema()),
                    ("workflow state", self.workflow_state_schema()),
                    ("edit", self.edit_schema()),
                ]
                .into_iter()
                .find_map(|(which, schema)| {
                    let error = schema?.compile_error()?;
                    Some(invalid_schema(
                        self.id.to_string(),
                        which,
                        Arc::clone(error),
                    ))
                })
            })
            .as_ref()
    }
}

/// The error of tool `id`'s `which` schema, refused by its meta-schema or
/// its compiler.
fn invalid_schema(
    id: String,
    which: &'static str,
    error: Arc<jsonschema::ValidationError<'static>>,
) -> BuildError {
    BuildError::InvalidSchema {
        id,
        which,
        reason: error.to_string(),
        source: error,
    }
}

impl<T: TypedTool> From<T> for Tool {
    fn from(tool: T) -> Self {
        // Only what needs `T` is generic; the builder work is shared by every
        // tool (one copy in the binary, not one per tool).
        typed_tool(TypedParts {
            id: T::ID,
            description: T::DESCRIPTION,
            input_schema: input_schema::<T::Input>(T::INPUT_PARAMETER, std::any::type_name::<T>()),
            output_schema: schema_for::<T::Output>(),
            suspend_schema: schema_for::<T::Suspend>(),
            resume_schema: schema_for::<T::Resume>(),
            executor: typed_executor(Arc::new(tool)),
            maps_output: T::MAPS_OUTPUT,
            configure: T::configure,
        })
    }
}

/// What a typed tool contributes, gathered by the generic `From` impl.
struct TypedParts {
    id: &'static str,
    description: &'static str,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    suspend_schema: Option<Value>,
    resume_schema: Option<Value>,
    executor: Arc<ExecFn>,
    maps_output: bool,
    configure: fn(ToolBuilder) -> ToolBuilder,
}

fn typed_tool(parts: TypedParts) -> Tool {
    let mut builder = ToolBuilder::new(parts.id.to_owned()).description(parts.description);
    builder.input_schema = parts.input_schema;
    builder.output_schema = parts.output_schema;
    builder.suspend_schema = parts.suspend_schema;
    builder.resume_schema = parts.resume_schema;
    builder.derived = DerivedSchemas {
        input: true,
        output: true,
        suspend: true,
        resume: true,
        ..DerivedSchemas::default()
    };
    builder.executor = Some(parts.executor);
    builder.typed_maps_output = parts.maps_output;
    (parts.configure)(builder).finish()
}

/// The execute function of a typed tool.
fn typed_executor<T: TypedTool>(tool: Arc<T>) -> Arc<ExecFn> {
    let wraps = wrapping::<T::Input>(T::INPUT_PARAMETER);
    Arc::new(move |input: Value, state: Arc<CallShared>| -> ExecFuture {
        Box::pin(execute_typed(Arc::clone(&tool), input, wraps, state))
    })
}

/// One call of a typed tool, in one state machine. The arguments are
/// deserialized by reference, the one deserialization path of every typed
/// input: they stay available to store with a suspension and to quote in a
/// type-level error.
async fn execute_typed<T: TypedTool>(
    tool: Arc<T>,
    input: Value,
    wraps: Option<InputParameter>,
    state: Arc<CallShared>,
) -> Exec {
    let result = match typed_call::<T>(&input, wraps, state) {
        Err(failure) => Err(failure),
        Ok((typed, ctx)) => match tool.execute(typed, ctx).await {
            Err(error) => Err(ExecFailure::Tool(error)),
            Ok(output) => executed::<T>(&output),
        },
    };
    Exec { result, input }
}

/// What a typed tool's functions take: its input and its context.
type TypedCall<T> = (
    <T as TypedTool>::Input,
    ToolContext<<T as TypedTool>::Suspend, <T as TypedTool>::Resume>,
);

/// What a typed tool's functions take: the input deserialized into its
/// type (`wraps`: the parameter that wraps it, if any), and the typed view
/// of the call.
fn typed_call<T: TypedTool>(
    input: &Value,
    wraps: Option<InputParameter>,
    state: Arc<CallShared>,
) -> Result<TypedCall<T>, ExecFailure> {
    // Matches rather than `?` and `map_err`: each is one more function per
    // tool in the user's crate.
    match typed_input::<T::Input>(input, wraps) {
        Err(mismatch) => Err(mismatch.into()),
        Ok(typed) => match ToolContext::from_state(state) {
            Ok(ctx) => Ok((typed, ctx)),
            Err(reason) => Err(ExecFailure::Context(reason)),
        },
    }
}

impl From<InputMismatch> for ExecFailure {
    fn from(mismatch: InputMismatch) -> Self {
        ExecFailure::Input {
            path: mismatch.path,
            reason: mismatch.reason,
        }
    }
}

/// Sets the reconcile hook of a typed tool `T`: `reconcile` takes what the
/// tool's function takes, `I` (its one parameter, or the generated input
/// struct), made from `T::Input` by `input`. What `#[tool(reconcile =
/// path)]` generates, through `__private`; its bound is reported on the
/// user's path.
pub fn typed_reconcile<T, I, F>(
    mut builder: ToolBuilder,
    reconcile: F,
    input: fn(T::Input) -> I,
) -> ToolBuilder
where
    T: TypedTool,
    I: 'static,
    F: ReconcileFunction<I, T::Output, T::Suspend, T::Resume>,
{
    let reconcile = Arc::new(reconcile);
    let wraps = wrapping::<T::Input>(T::INPUT_PARAMETER);
    builder.reconciler = Some(Arc::new(
        move |value: Value, key: IdempotencyKey, state: Arc<CallShared>| -> ReconcileFuture {
            Box::pin(reconcile_typed::<T, I, F>(
                Arc::clone(&reconcile),
                input,
                value,
                wraps,
                key,
                state,
            ))
        },
    ));
    builder
}

/// One reconcile of a typed tool: the input deserialized as for execute,
/// the output serialized as for execute.
async fn reconcile_typed<T, I, F>(
    reconcile: Arc<F>,
    to_input: fn(T::Input) -> I,
    input: Value,
    wraps: Option<InputParameter>,
    key: IdempotencyKey,
    state: Arc<CallShared>,
) -> ReconcileExec
where
    T: TypedTool,
    F: ReconcileFunction<I, T::Output, T::Suspend, T::Resume>,
{
    let result = match typed_call::<T>(&input, wraps, state) {
        Err(failure) => Err(failure),
        Ok((typed, ctx)) => match reconcile.call(to_input(typed), key, ctx).await {
            Err(error) => Err(ExecFailure::Tool(error)),
            Ok(Reconciled::NotHappened) => Ok(Reconciled::NotHappened),
            Ok(Reconciled::Happened(output)) => executed::<T>(&output).map(Reconciled::Happened),
        },
    };
    Exec { result, input }
}

/// A typed tool's output, serialized, with its model-facing form.
fn executed<T: TypedTool>(output: &T::Output) -> Result<Executed, ExecFailure> {
    match serde_json::to_value(output) {
        Ok(value) => Ok(Executed {
            output: value,
            model_output: T::to_model_output(output),
        }),
        Err(error) => Err(ExecFailure::Output(error.to_string())),
    }
}

/// Builds a [`Tool`]: the direct analogue of createTool. The `#[tool]`
/// attribute goes through the same builder, so both kinds of tool share one
/// execution path.
///
/// ```
/// use serde_json::{json, Value};
/// use tool_core::{CallContext, Tool, ToolContext, ToolError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tool = Tool::builder("shout")
///     .description("Upper-case a text")
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "text": { "type": "string" } },
///         "required": ["text"]
///     }))
///     .output_schema(json!({ "type": "string" }))
///     .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
///         let text = input["text"].as_str().unwrap_or_default();
///         Ok::<_, ToolError>(json!(text.to_uppercase()))
///     })
///     .build()?;
/// let outcome = tool.execute(json!({ "text": "hi" }), CallContext::new("c1")).await;
/// assert_eq!(outcome.output(), Some(&json!("HI")));
/// # Ok::<_, tool_core::BuildError>(()) }).unwrap();
/// ```
#[must_use]
pub struct ToolBuilder {
    id: String,
    description: Option<String>,
    title: Option<String>,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    suspend_schema: Option<Value>,
    resume_schema: Option<Value>,
    request_context_schema: Option<Value>,
    workflow_state_schema: Option<Value>,
    /// Which schemas came from Rust types: they skip the meta-schema check.
    derived: DerivedSchemas,
    workflow_state_type: Option<StateType>,
    required_state: Vec<StateRequirement>,
    strict: bool,
    require_approval: bool,
    editable: Vec<String>,
    retry_safe: bool,
    transactional: bool,
    approval_policy: Option<Arc<ApprovalPolicy>>,
    mcp: Option<McpOptions>,
    provider_options: Map<String, Value>,
    input_examples: Vec<Value>,
    background: Option<BackgroundConfig>,
    output_validation: OutputValidation,
    transform: ToolTransform,
    hooks: Hooks,
    executor: Option<Arc<ExecFn>>,
    reconciler: Option<Arc<ReconcileFn>>,
    to_model_output: Option<Arc<ModelOutputFn>>,
    /// A typed tool maps its outputs itself ([`TypedTool::MAPS_OUTPUT`]).
    typed_maps_output: bool,
}

/// Which of a builder's schemas were derived from Rust types (schemars
/// output, valid by construction) rather than given by hand.
#[derive(Debug, Clone, Copy, Default)]
struct DerivedSchemas {
    input: bool,
    output: bool,
    suspend: bool,
    resume: bool,
    request_context: bool,
    state: bool,
}

impl fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolBuilder")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ToolBuilder {
    fn new(id: String) -> Self {
        ToolBuilder {
            id,
            description: None,
            title: None,
            input_schema: None,
            output_schema: None,
            suspend_schema: None,
            resume_schema: None,
            request_context_schema: None,
            workflow_state_schema: None,
            derived: DerivedSchemas::default(),
            workflow_state_type: None,
            required_state: Vec::new(),
            strict: false,
            require_approval: false,
            editable: Vec::new(),
            retry_safe: false,
            transactional: false,
            approval_policy: None,
            mcp: None,
            provider_options: Map::new(),
            input_examples: Vec::new(),
            background: None,
            output_validation: OutputValidation::Strict,
            transform: ToolTransform::default(),
            hooks: Hooks::default(),
            executor: None,
            reconciler: None,
            to_model_output: None,
            typed_maps_output: false,
        }
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// JSON Schema of the arguments (default: any object).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self.derived.input = false;
        self
    }

    /// JSON Schema of the output.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self.derived.output = false;
        self
    }

    /// JSON Schema of the suspend payload.
    pub fn suspend_schema(mut self, schema: Value) -> Self {
        self.suspend_schema = Some(schema);
        self.derived.suspend = false;
        self
    }

    /// JSON Schema of the resume data.
    pub fn resume_schema(mut self, schema: Value) -> Self {
        self.resume_schema = Some(schema);
        self.derived.resume = false;
        self
    }

    /// JSON Schema of the request context, validated before execute.
    pub fn request_context_schema(mut self, schema: Value) -> Self {
        self.request_context_schema = Some(schema);
        self.derived.request_context = false;
        self
    }

    /// Derives the request-context schema from `C`.
    pub fn request_context_type<C: JsonSchema + 'static>(mut self) -> Self {
        self.request_context_schema = schema_for::<C>();
        self.derived.request_context = true;
        self
    }

    /// JSON Schema of the workflow state: the state a host gives with
    /// [`CallContext::with_workflow`](crate::CallContext::with_workflow) is
    /// validated against it when a call is admitted, and the state the tool
    /// sets when the call completes. The tool reads the state as
    /// `ctx.workflow::<serde_json::Value>()`.
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use tool_core::{CallContext, ErrorKind, Tool, ToolError, WorkflowContext};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let step = Tool::builder("step").description("Advance the step counter")
    ///     .workflow_state_schema(json!({ "type": "object", "properties": { "step": { "type": "integer" } }, "required": ["step"] }))
    ///     .execute(|_input, ctx| async move {
    ///         if let Some(workflow) = ctx.workflow::<Value>() {
    ///             let step = workflow.state()["step"].as_i64().unwrap_or(0);
    ///             workflow.set_state(json!({ "step": step + 1 }));
    ///         }
    ///         Ok::<_, ToolError>(json!("advanced"))
    ///     })
    ///     .build().unwrap();
    /// assert_eq!(step.definition().workflow_state_schema.as_ref().unwrap()["required"][0], "step");
    /// let ctx = |state| CallContext::new("c1").with_workflow(WorkflowContext::new("flow", "run-1", state));
    /// let outcome = step.execute("{}", ctx(json!({ "step": 1 }))).await;
    /// assert_eq!(outcome.state(), Some(&json!({ "step": 2 })));
    /// let refused = step.execute("{}", ctx(json!({}))).await;
    /// assert_eq!(refused.error().unwrap().kind(), ErrorKind::WorkflowStateValidation);
    /// # });
    /// ```
    pub fn workflow_state_schema(mut self, schema: Value) -> Self {
        self.workflow_state_schema = Some(schema);
        self.derived.state = false;
        self
    }

    /// Declares the workflow state type: its schema (derived like the
    /// others) is the state schema, and the host's state is deserialized
    /// into `T` when a call is admitted, for `ctx.workflow::<T>()`. What
    /// `#[tool(workflow_state = T)]` sets.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{CallContext, Tool, ToolError, WorkflowContext};
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Cart { items: Vec<String> }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let add = Tool::builder("add-to-cart").description("Add an item to the cart")
    ///     .workflow_state_type::<Cart>()
    ///     .execute(|input, ctx| async move {
    ///         let workflow = ctx.workflow::<Cart>().ok_or_else(|| ToolError::new("not in a workflow"))?;
    ///         let mut items = workflow.state().items.clone();
    ///         items.push(input["item"].as_str().unwrap_or_default().to_owned());
    ///         workflow.set_state(Cart { items });
    ///         Ok::<_, ToolError>(json!("added"))
    ///     })
    ///     .build().unwrap();
    /// let ctx = CallContext::new("c1").with_workflow(WorkflowContext::new("shop", "run-1", json!({ "items": [] })));
    /// let outcome = add.execute(json!({ "item": "tea" }), ctx).await;
    /// assert_eq!(outcome.state(), Some(&json!({ "items": ["tea"] })));
    /// # });
    /// ```
    pub fn workflow_state_type<T: WorkflowState>(mut self) -> Self {
        self.workflow_state_schema = schema_for::<T>();
        self.derived.state = true;
        self.workflow_state_type = Some(StateType::of::<T>());
        self
    }

    /// Turns on provider strict mode.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Every call needs human approval.
    pub fn require_approval(mut self, required: bool) -> Self {
        self.require_approval = required;
        self
    }

    /// The top-level properties of the input that a reviewer may change
    /// before approving a call (replacing any list given before): the
    /// runtime's edit decision takes new values for them, the rest of the
    /// input stays as the model wrote it. [`Tool::edit_schema`] is the input
    /// schema restricted to them, [`Tool::apply_edit`] and
    /// [`Tool::validate_edit`] take an edit. `#[tool(require_approval(editable(..)))]`
    /// sets it.
    ///
    /// [`build`](Self::build) refuses a name that is not a top-level
    /// property of the input schema
    /// ([`BuildError::UnknownEditableField`]), a name listed twice and the
    /// empty name.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{BuildError, Tool, ToolError};
    ///
    /// let transfer = || Tool::builder("transfer").description("Move money")
    ///     .input_schema(json!({
    ///         "type": "object",
    ///         "properties": { "to": { "type": "string" }, "amount": { "type": "integer" }, "memo": { "type": "string" } },
    ///         "required": ["to", "amount"]
    ///     }))
    ///     .require_approval(true)
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) });
    /// let tool = transfer().editable(["amount", "memo"]).build().unwrap();
    /// assert_eq!(tool.definition().editable, ["amount", "memo"]);
    /// let twice = transfer().editable(["amount", "amount"]).build().unwrap_err();
    /// assert_eq!(twice, BuildError::DuplicateEditableField { id: "transfer".into(), field: "amount".into() });
    /// ```
    pub fn editable<I>(mut self, fields: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.editable = fields.into_iter().map(Into::into).collect();
        self
    }

    /// Declares that the tool needs the application state of type `T`
    /// ([`ToolContext::state`](crate::ToolContext::state)): a call without
    /// it is refused with a configuration error naming the type, before
    /// the tool runs, and a runtime without it refuses to build. What a
    /// `#[tool]` function's [`State<T>`](crate::State) parameter declares.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{CallContext, ErrorKind, Tool, ToolError};
    ///
    /// struct Pool;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let lookup = Tool::builder("lookup").description("Looks an order up")
    ///     .requires_state::<Pool>()
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let outcome = lookup.execute(json!({}), CallContext::new("c1")).await;
    /// let error = outcome.error().unwrap();
    /// assert_eq!(error.kind(), ErrorKind::Configuration);
    /// assert!(error.message().contains("Pool"));
    /// # });
    /// ```
    pub fn requires_state<T: Send + Sync + 'static>(mut self) -> Self {
        let required = StateRequirement::of::<T>();
        if !self.required_state.contains(&required) {
            self.required_state.push(required);
        }
        self
    }

    /// Declares that an approved or resumed call may run again when the
    /// process running it died before it settled (default `false`: such a
    /// call is settled as failed, "interrupted", and never re-run; a tool
    /// with a [`reconcile`](Self::reconcile) hook is asked instead what
    /// became of it). The idempotency key
    /// ([`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key))
    /// is the same on every run: give it to the external APIs the tool
    /// calls. `ToolContext::attempt` tells which run it is.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let charge = Tool::builder("charge").description("Charge a card")
    ///     .retry_safe(true)
    ///     .execute(|_input, ctx| async move { Ok::<_, ToolError>(json!({ "idempotency_key": ctx.idempotency_key() })) })
    ///     .build().unwrap();
    /// assert!(charge.definition().retry_safe);
    /// ```
    pub fn retry_safe(mut self, retry_safe: bool) -> Self {
        self.retry_safe = retry_safe;
        self
    }

    /// Declares that the tool's database work runs in the runtime's own
    /// transaction and commits together with the call's outcome (default
    /// `false`): the work and the record that the call completed are
    /// stored at once, or neither is, so a call interrupted by a crash
    /// left none of that work behind and a settled call did all of it. A
    /// runtime whose store cannot do it refuses to build with a
    /// transactional tool (the runtime crate's docs say which stores can).
    ///
    /// Only the effects inside that transaction are exactly-once. The
    /// tool's other effects (an HTTP request, an email) are at-least-once,
    /// as for any tool: key them with
    /// [`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key).
    /// `#[tool(transactional)]` sets it.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let transfer = Tool::builder("transfer").description("Move money between two accounts")
    ///     .transactional(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
    ///     .build().unwrap();
    /// assert!(transfer.definition().transactional);
    /// ```
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Decides per call whether approval is needed; authoritative over the
    /// flag. The policy returns a `bool` or `Result<bool, E>`, or a `Send +
    /// 'static` future of one (an async policy copies what it needs of its
    /// arguments first): see [`Tool::requires_approval`]. A policy that
    /// fails, panics or (in a runtime) outlives its time limit means
    /// approval is required.
    pub fn approval_policy<F, R, M>(mut self, policy: F) -> Self
    where
        F: Fn(&Value, &RequestContext) -> R + Send + Sync + 'static,
        R: ApprovalPolicyReturn<M>,
    {
        self.approval_policy = Some(Arc::new(move |input: &Value, rc: &RequestContext| {
            policy(input, rc).into_answer()
        }));
        self
    }

    /// MCP annotations and `_meta`.
    pub fn mcp(mut self, mcp: McpOptions) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// Provider options, keyed by provider name; merged into that provider's export.
    pub fn provider_options(mut self, options: Map<String, Value>) -> Self {
        self.provider_options = options;
        self
    }

    /// Example arguments.
    pub fn input_examples(mut self, examples: impl IntoIterator<Item = Value>) -> Self {
        self.input_examples = examples.into_iter().collect();
        self
    }

    /// Background execution settings.
    pub fn background(mut self, background: BackgroundConfig) -> Self {
        self.background = Some(background);
        self
    }

    /// What happens when output does not match the output schema.
    pub fn output_validation(mut self, mode: OutputValidation) -> Self {
        self.output_validation = mode;
        self
    }

    /// Display and transcript transforms.
    pub fn transform(mut self, transform: ToolTransform) -> Self {
        self.transform = transform;
        self
    }

    /// Lifecycle hooks.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// The model-facing form of an output.
    pub fn to_model_output(
        mut self,
        map: impl Fn(&Value) -> ModelOutput + Send + Sync + 'static,
    ) -> Self {
        self.to_model_output = Some(Arc::new(map));
        self
    }

    /// The execute function, over JSON values. Without one the tool is
    /// declaration-only ([`Tool::has_execute`]): its result comes from the
    /// application.
    pub fn execute<F, Fut, E>(mut self, execute: F) -> Self
    where
        F: Fn(Value, ToolContext<Value, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, E>> + Send + 'static,
        E: Into<ToolError>,
    {
        self.executor =
            Some(Arc::new(
                move |input: Value, state: Arc<CallShared>| match ToolContext::from_state(state) {
                    Ok(ctx) => {
                        // The function takes the arguments; a copy is kept
                        // in case the call suspends (as a typed tool keeps
                        // the arguments it deserialized from).
                        let running = execute(input.clone(), ctx);
                        Box::pin(async move {
                            let result = running
                                .await
                                .map(|output| Executed {
                                    output,
                                    model_output: None,
                                })
                                .map_err(|e| ExecFailure::Tool(e.into()));
                            Exec { result, input }
                        }) as ExecFuture
                    }
                    Err(reason) => Box::pin(async move {
                        Exec {
                            result: Err(ExecFailure::Context(reason)),
                            input,
                        }
                    }),
                },
            ));
        self
    }

    /// The reconcile hook, over JSON values: what a runtime asks, when it
    /// recovers a call whose run was interrupted (its lease ran out before
    /// an outcome was recorded: the process running it died, or lost its
    /// store) and whose tool is not retry-safe, whether the call's effect
    /// happened. Without a hook such a call can only be settled as failed,
    /// "interrupted", its effects unknown.
    ///
    /// The hook takes the call's input (validated, as execute's is), its
    /// [`IdempotencyKey`] and its context, asks the system the tool acts on
    /// (was a payment with this key made?), and answers
    /// [`Reconciled::Happened`] with the output the call produced, which is
    /// validated against the output schema and mapped for the model as an
    /// executed call's is, or [`Reconciled::NotHappened`]. An error means
    /// it could not tell. [`Tool::reconcile`] runs it;
    /// `#[tool(reconcile = path)]` sets a typed one.
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use tool_core::{CallContext, IdempotencyKey, Reconciled, Tool, ToolContext, ToolError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let charge = Tool::builder("charge").description("Charge a card")
    ///     .output_schema(json!({ "type": "object", "properties": { "charged": { "type": "integer" } }, "required": ["charged"] }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "charged": input["cents"] })) })
    ///     .reconcile(|input: Value, key: IdempotencyKey, _ctx: ToolContext<Value, Value>| async move {
    ///         // Ask the payment API for a charge made with this key.
    ///         let made = key == IdempotencyKey::derive("charge", "call-1");
    ///         Ok::<_, ToolError>(if made {
    ///             Reconciled::Happened(json!({ "charged": input["cents"] }))
    ///         } else {
    ///             Reconciled::NotHappened
    ///         })
    ///     })
    ///     .build().unwrap();
    /// let found = charge.reconcile(json!({ "cents": 500 }), CallContext::new("call-1")).unwrap().await.unwrap();
    /// assert_eq!(found.output().and_then(|outcome| outcome.output()), Some(&json!({ "charged": 500 })));
    /// let missing = charge.reconcile(json!({ "cents": 500 }), CallContext::new("call-2")).unwrap().await.unwrap();
    /// assert!(!missing.happened());
    /// # });
    /// ```
    pub fn reconcile<F, Fut, E>(mut self, reconcile: F) -> Self
    where
        F: Fn(Value, IdempotencyKey, ToolContext<Value, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reconciled<Value>, E>> + Send + 'static,
        E: Into<ToolError>,
    {
        self.reconciler = Some(Arc::new(
            move |input: Value, key: IdempotencyKey, state: Arc<CallShared>| -> ReconcileFuture {
                match ToolContext::from_state(state) {
                    Ok(ctx) => {
                        let running = reconcile(input.clone(), key, ctx);
                        Box::pin(async move {
                            let result = running
                                .await
                                .map(|found| {
                                    found.map(|output| Executed {
                                        output,
                                        model_output: None,
                                    })
                                })
                                .map_err(|e| ExecFailure::Tool(e.into()));
                            Exec { result, input }
                        })
                    }
                    Err(reason) => Box::pin(async move {
                        Exec {
                            result: Err(ExecFailure::Context(reason)),
                            input,
                        }
                    }),
                }
            },
        ));
        self
    }

    /// Checks the tool and builds it.
    ///
    /// # Errors
    ///
    /// An invalid id, no description, a schema that is invalid or nests too
    /// deep, an option about running (`background`, `transactional`,
    /// `reconcile`) on a tool without an execute function, or an editable
    /// field that is not a top-level property of the input schema, is
    /// listed twice or is empty ([`editable`](Self::editable)).
    ///
    /// ```
    /// use tool_core::{BackgroundConfig, BuildError, Tool};
    ///
    /// let error = Tool::builder("pick").description("Pick in the UI")
    ///     .background(BackgroundConfig::new())
    ///     .build().unwrap_err();
    /// assert_eq!(error, BuildError::NotExecutable { id: "pick".into(), option: "background" });
    /// ```
    pub fn build(self) -> Result<Tool, BuildError> {
        if !is_valid_tool_id(&self.id) {
            return Err(BuildError::InvalidId { id: self.id });
        }
        if self
            .description
            .as_deref()
            .is_none_or(|d| d.trim().is_empty())
        {
            return Err(BuildError::MissingDescription { id: self.id });
        }
        if self.executor.is_none() {
            // Options about running it: a declaration-only tool never runs here.
            let running = [
                (self.background.is_some(), "background"),
                (self.transactional, "transactional"),
                (self.reconciler.is_some(), "reconcile"),
            ];
            if let Some((_, option)) = running.into_iter().find(|(set, _)| *set) {
                return Err(BuildError::NotExecutable {
                    id: self.id,
                    option,
                });
            }
        }
        let tool = self.finish();
        // Only what building checks: validators compile on first use.
        match &tool.inner.config_error {
            Some(error) => Err(error.clone()),
            None => Ok(tool),
        }
    }

    /// Replaces each schema nested deeper than [`MAX_SCHEMA_DEPTH`] (the
    /// input schema with `{}`, any other with none) and returns the error
    /// naming the first one and where.
    fn refuse_deep_schemas(&mut self) -> Option<BuildError> {
        let mut refused = None;
        let id = self.id.clone();
        let mut check = |which: &'static str, slot: &mut Option<Value>| {
            let path = too_deep(slot.as_ref()?, MAX_SCHEMA_DEPTH)?;
            if let Some(schema) = slot.take() {
                drop_iteratively(schema);
            }
            refused.get_or_insert(BuildError::SchemaTooDeep {
                id: id.clone(),
                which,
                path: path
                    .iter()
                    .map(|token| format!("/{}", escape_token(token)))
                    .collect(),
                limit: MAX_SCHEMA_DEPTH,
            });
            Some(())
        };
        if check("input", &mut self.input_schema).is_some() {
            self.input_schema = Some(serde_json::json!({}));
        }
        check("output", &mut self.output_schema);
        check("suspend", &mut self.suspend_schema);
        check("resume", &mut self.resume_schema);
        check("request context", &mut self.request_context_schema);
        check("workflow state", &mut self.workflow_state_schema);
        refused
    }

    /// Builds without failing: a schema that does not compile is kept as the
    /// tool's configuration error, which every call then reports.
    fn finish(mut self) -> Tool {
        let id = self.id.clone();
        // Every later step (compiling, copying, exporting) walks a schema
        // recursively: a schema nested beyond the limit is refused first and
        // taken apart without recursion.
        let mut config_error = self.refuse_deep_schemas();
        let derived = self.derived;
        let mut compile = |which: &'static str, schema: Option<&Value>, derived: bool| {
            let schema = schema?;
            let origin = if derived {
                SchemaOrigin::Derived
            } else {
                SchemaOrigin::Given
            };
            match LazyValidator::new(schema, origin) {
                Ok(compiled) => Some(compiled),
                Err(error) => {
                    // Every call reports this instead of running.
                    config_error.get_or_insert(invalid_schema(id.clone(), which, Arc::new(error)));
                    None
                }
            }
        };
        let input_schema = self
            .input_schema
            .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
        let input = compile("input", Some(&input_schema), derived.input);
        let has_integers = mentions_integers(&input_schema);
        let output = compile("output", self.output_schema.as_ref(), derived.output);
        let suspend = compile("suspend", self.suspend_schema.as_ref(), derived.suspend);
        let resume = compile("resume", self.resume_schema.as_ref(), derived.resume);
        let request_context = compile(
            "request context",
            self.request_context_schema.as_ref(),
            derived.request_context,
        );
        let state = compile(
            "workflow state",
            self.workflow_state_schema.as_ref(),
            derived.state,
        );
        // Made from the input schema, which building checked already.
        let edit_schema = (!self.editable.is_empty())
            .then(|| crate::editable::edit_schema(&input_schema, &self.editable));
        let edit = compile("edit", edit_schema.as_ref(), true);
        if let Err(error) = crate::editable::check_fields(&id, &input_schema, &self.editable) {
            config_error.get_or_insert(error);
        }
        let definition = ToolDefinition {
            id: id.clone(),
            description: self.description.unwrap_or_default(),
            title: self.title,
            input_schema,
            output_schema: self.output_schema,
            suspend_schema: self.suspend_schema,
            resume_schema: self.resume_schema,
            request_context_schema: self.request_context_schema,
            workflow_state_schema: self.workflow_state_schema,
            strict: self.strict,
            require_approval: self.require_approval,
            editable: self.editable,
            retry_safe: self.retry_safe,
            transactional: self.transactional,
            mcp: self.mcp,
            provider_options: self.provider_options,
            input_examples: self.input_examples,
            background: self.background,
            output_validation: self.output_validation,
        };
        Tool {
            inner: Arc::new(ToolInner {
                id: Arc::from(id.as_str()),
                definition,
                input,
                output,
                suspend,
                resume,
                request_context,
                state,
                edit_schema,
                edit,
                workflow_state_type: self.workflow_state_type,
                required_state: self.required_state.into_boxed_slice(),
                has_integers,
                config_error,
                compile_error: OnceLock::new(),
                executor: self.executor,
                reconciler: self.reconciler,
                maps_output: self.typed_maps_output || self.to_model_output.is_some(),
                to_model_output: self.to_model_output,
                approval_policy: self.approval_policy,
                transform: self.transform,
                hooks: self.hooks,
                derived: crate::derived::Derived::default(),
            }),
        }
    }
}

/// The requirement of tool `tool_id`'s policy that could not tell (`error`
/// says why), logged: approval is required.
fn failed_policy(tool_id: &str, error: &str) -> ApprovalRequirement {
    tracing::error!(%tool_id, %error, "approval policy failed; approval is required");
    ApprovalRequirement::required()
}
