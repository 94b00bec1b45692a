//! Declare LLM tools on annotated Rust functions.
//!
//! `#[tool]` on an async function derives the tool's input, output, suspend,
//! resume and request-context JSON Schemas from Rust types (via `schemars`),
//! and generates a `XxxTool` type that erases into a [`Tool`]. A tool
//! validates its arguments with model-readable errors, runs, validates its
//! output and maps it for the model, the way Mastra's `createTool()` does.
//!
//! Use this crate to declare tools, and on its own to run them in-process
//! ([`Tool::execute`], [`ToolSet`]) or to give them to a model whose HTTP API
//! you call yourself (`provider`: export, strict mode, results back, stream
//! decoders). Add `tool-runtime` when calls need approval, suspend and
//! resume, hooks, background tasks or storage that survives a crash;
//! `tool-mcp` to serve them over MCP; `tool-agent` for the model loop. The
//! repository's guide (`docs/`) has a page per capability.
//!
//! ```
//! use tool_core::{tool, CallContext, Tool, ToolError};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! pub struct WeatherInput {
//!     /// City name or coordinates
//!     location: String,
//! }
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! #[serde(rename_all = "camelCase")]
//! pub struct Weather { location: String, temperature_celsius: f64, conditions: String }
//!
//! /// Get the current weather for a location
//! #[tool(id = "weather-tool", strict, mcp(title = "Weather Lookup", read_only, idempotent))]
//! pub async fn weather(WeatherInput { location }: WeatherInput) -> Result<Weather, ToolError> {
//!     Ok(Weather { location, temperature_celsius: 21.0, conditions: "sunny".into() })
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let tool = Tool::from(WeatherTool);
//! assert_eq!(tool.definition().description, "Get the current weather for a location");
//! let outcome = tool.execute(r#"{"location": "Paris"}"#, CallContext::new("call-1")).await;
//! assert_eq!(outcome.output().unwrap()["temperatureCelsius"], 21.0);
//! # });
//! ```
//!
//! # Cargo features
//!
//! The tool contract (`Tool`, `ToolBuilder`, validation, model output,
//! transforms, hooks, contexts) is always there. Everything else is an add-on,
//! all on by default; `default-features = false` leaves the contract alone.
//!
//! | feature | adds |
//! |---|---|
//! | `macros` | the `#[tool]` attribute |
//! | `provider` | [`provider`]: exporting tools to OpenAI, Anthropic and Gemini, results back (needs `strict`, `decode`) |
//! | `strict` | [`strict`]: OpenAI strict-schema conversion |
//! | `decode` | [`decode`]: decoders of providers' streamed tool calls |
//! | `partial-json` | [`partial_json`]: the incremental partial-JSON parser |
//! | `preserve-order` | schemas and arguments keep their declaration order (`serde_json`'s and `schemars`' `preserve_order`) |

#![cfg_attr(docsrs, feature(doc_cfg))]

mod abort;
mod app_state;
mod approval;
mod context;
#[cfg(feature = "decode")]
#[cfg_attr(docsrs, doc(cfg(feature = "decode")))]
pub mod decode;
mod definition;
mod derived;
mod edit;
mod editable;
mod error;
mod excerpt;
mod extensions;
pub mod hooks;
mod host;
mod idempotency;
mod input;
mod locate;
mod model_output;
mod outcome;
mod panic;
mod parameter;
#[cfg(feature = "partial-json")]
#[cfg_attr(docsrs, doc(cfg(feature = "partial-json")))]
pub mod partial_json;
mod pipeline;
#[cfg(feature = "provider")]
#[cfg_attr(docsrs, doc(cfg(feature = "provider")))]
pub mod provider;
mod reconcile;
mod request_context;
mod schema;
// The engine of `strict` and `provider` (which turns `strict` on).
#[cfg(feature = "strict")]
mod schema_rewrite;
#[cfg(feature = "strict")]
#[cfg_attr(docsrs, doc(cfg(feature = "strict")))]
pub mod strict;
mod suspend;
mod tool;
mod toolset;
pub mod transform;
mod validate;

pub use abort::AbortSignal;
pub use app_state::{AppState, State, StateRequirement};
pub use approval::{ApprovalDecision, ApprovalPolicyReturn, ApprovalRequirement, PolicyAnswer};
pub use context::{CallContext, LogRecord, Observer, Progress, ToolContext, Writer};
pub use definition::{
    BackgroundConfig, Disposition, McpAnnotations, McpOptions, OutputValidation, ToolDefinition,
};
pub use error::{BuildError, ErrorKind, ModelError, ToolError, ValidationErrors, is_valid_tool_id};
pub use excerpt::{EXCERPT_CHARS, Excerpt};
pub use extensions::Extensions;
pub use hooks::Hooks;
pub use host::{AgentContext, Workflow, WorkflowContext, WorkflowState};
pub use idempotency::IdempotencyKey;
pub use input::{MAX_NESTING, MAX_SCHEMA_DEPTH, RawInput};
pub use model_output::{ContentPart, ModelOutput};
pub use outcome::{ModelFacing, Outcome};
pub use panic::catch_panic;
pub use parameter::InputParameter;
pub use pipeline::Admitted;
pub use reconcile::Reconciled;
pub use request_context::RequestContext;
pub use schema::schema_for;
pub use suspend::{NoSuspend, SuspendPayload};
pub use tool::{Tool, ToolBuilder, TypedTool};
pub use toolset::ToolSet;
pub use transform::ToolTransform;

/// Declares a tool on an async (or plain) function. See the crate docs, and
/// the repository's guide page `docs/tools.md` for every key.
///
/// The input is a struct generated from the parameters, one property each.
/// A single parameter is the whole input when its type's JSON Schema is an
/// object with named properties (a struct, a newtype of one), and otherwise
/// the one property of an input object (an enum, a `Vec`, a map, a string,
/// an alias of any of these): the schema decides, once per input type
/// ([`TypedTool::INPUT_PARAMETER`]), so every provider and MCP gets an
/// object. `input = params` always generates the struct; `input = whole` always takes the one parameter's type (a type
/// whose schema is not an object is then a compile error where the macro
/// can tell, as for `Vec`).
///
/// ```
/// use tool_core::{CallContext, Tool, tool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(tag = "kind", rename_all = "snake_case")]
/// pub enum Target {
///     City { name: String },
///     Coords { lat: f64, lon: f64 },
/// }
///
/// /// Locate a target
/// #[tool]
/// async fn locate(
///     /// What to locate
///     target: Target,
/// ) -> String {
///     match target {
///         Target::City { name } => name,
///         Target::Coords { lat, lon } => format!("{lat},{lon}"),
///     }
/// }
///
/// let tool = Tool::from(LocateTool);
/// let schema = &tool.definition().input_schema;
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["target"]));
/// # let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let located = runtime.block_on(tool.execute(
///     r#"{"target": {"kind": "city", "name": "Oslo"}}"#,
///     CallContext::new("call-1"),
/// ));
/// assert_eq!(located.output(), Some(&serde_json::json!("Oslo")));
/// ```
///
/// The context parameter is recognized by its name too: write
/// `ToolContext<S, R>` (any path to it) in the signature, not an alias.
///
/// `#[tool(require_approval(editable(amount, memo)))]` requires approval
/// of every call and lets a reviewer change those input fields before
/// approving ([`ToolBuilder::editable`], [`Tool::edit_schema`],
/// [`Tool::apply_edit`]); `require_approval(policy = path, editable(..))`
/// leaves the decision to a policy, as `require_approval = path` does. A
/// field is named as an identifier, or as a string for a property serde
/// renames (`editable("amountCents")`). With plain parameters each name
/// must be one of them (a compile error otherwise); the fields of a struct
/// taken as the whole input are not visible to the macro, so a wrong name
/// there is found when the tool is built: [`Tool::config_error`] is
/// [`BuildError::UnknownEditableField`] and every call fails with it.
///
/// ```
/// use serde_json::json;
/// use tool_core::{tool, Tool};
///
/// /// Transfer money
/// #[tool(require_approval(editable(amount, memo)))]
/// async fn transfer(to: String, amount: u32, memo: Option<String>) -> String {
///     format!("{amount} to {to}: {memo:?}")
/// }
///
/// let tool = Tool::from(TransferTool);
/// assert_eq!(tool.definition().editable, ["amount", "memo"]);
/// assert_eq!(tool.edit_schema().unwrap()["required"], json!(["amount"]));
/// let input = json!({ "to": "ann", "amount": 500 });
/// assert_eq!(tool.apply_edit(&input, &json!({ "amount": 50 })), Ok(json!({ "to": "ann", "amount": 50 })));
/// ```
///
/// `#[tool(transactional)]` (a flag, like `retry_safe`; also `transactional
/// = false`) declares that the tool's database work runs in the runtime's
/// own transaction: see [`ToolBuilder::transactional`].
///
/// `#[tool(reconcile = path)]` sets the tool's reconcile hook (see
/// [`ToolBuilder::reconcile`]): `path` names an `async fn(Input,
/// IdempotencyKey, ToolContext<S, R>) -> Result<Reconciled<Output>, E>`
/// taking what the tool's function takes and returning its output type.
/// `Input` is the function's one parameter's type, or, for several (or
/// none), the generated `XxxToolInput` struct (one field per parameter);
/// the context is the tool's (`ToolContext` when the function takes none);
/// `E` converts into [`ToolError`]. A function of another signature is a
/// compile error on `path`.
///
/// ```
/// use tool_core::{tool, CallContext, IdempotencyKey, Reconciled, Tool, ToolContext, ToolError};
///
/// /// Send an email
/// #[tool(reconcile = find_sent)]
/// async fn send_email(to: String, body: String) -> Result<String, ToolError> {
///     Ok(format!("sent to {to}: {body}"))
/// }
///
/// async fn find_sent(
///     input: SendEmailToolInput,
///     key: IdempotencyKey,
///     _ctx: ToolContext,
/// ) -> Result<Reconciled<String>, ToolError> {
///     // Ask the mail service for a message sent with `key`.
///     let _ = key;
///     Ok(Reconciled::Happened(format!("sent to {}: {}", input.to, input.body)))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tool = Tool::from(SendEmailTool);
/// let input = serde_json::json!({ "to": "ann@example.com", "body": "hi" });
/// let found = tool.reconcile(input, CallContext::new("c1")).unwrap().await.unwrap();
/// assert_eq!(found.output().and_then(|outcome| outcome.output()), Some(&serde_json::json!("sent to ann@example.com: hi")));
/// # });
/// ```
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use tool_core_macros::tool;

/// What code generated by `#[tool]` uses; not a stable API.
///
/// Named after the crate version, as serde and thiserror do: tool-core-macros
/// builds the path from its own version and tool-core depends on exactly
/// that version (`=`), so a mismatched pair fails on the module's name.
/// Compiled without the `macros` feature too: it costs nothing, and a
/// crate using a separately enabled `tool-core-macros` still finds it.
#[doc(hidden)]
pub mod __private_0_1_0 {
    /// The module's path, checked against the crate version below.
    pub(crate) const PATH: &str = module_path!();

    pub use schemars;
    pub use serde;
    pub use serde_json;

    /// The entries of a JSON object returned by a `provider_options` or
    /// `meta` function; anything else is reported and ignored.
    pub fn json_object(
        value: serde_json::Value,
        what: &str,
    ) -> serde_json::Map<String, serde_json::Value> {
        match value {
            serde_json::Value::Object(map) => map,
            other => {
                tracing::error!(%other, "{what} must be a JSON object; ignoring it");
                serde_json::Map::new()
            }
        }
    }

    pub use crate::approval::{LonePolicy, lone_policy, typed_policy};
    pub use crate::parameter::{
        ByStruct, ByValue, LoneExamples, LoneInput, Param, ParamDeserialize, ParamSchema,
        ParamSerialize, example_to_value, lone_examples, wrapping,
    };

    // Helpers whose bounds carry `#[diagnostic::on_unimplemented]` messages,
    // so a type missing a trait is reported once, on that type, in words
    // about the tool rather than about serde or schemars internals.

    /// `deserialize_with` of the generated input struct's fields.
    pub fn deserialize_param<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: serde::Deserializer<'de>,
        T: ParamDeserialize<'de>,
    {
        T::deserialize(deserializer)
    }

    /// `schema_with` of the generated input struct's fields: the schema the
    /// field would have had without it.
    pub fn param_schema<T: ParamSchema>(
        generator: &mut schemars::SchemaGenerator,
    ) -> schemars::Schema {
        generator.subschema_for::<T>()
    }

    /// `Self` is `T`: lets [`serialize_param`] take its value through a
    /// type parameter of its own.
    pub trait Is<T: ?Sized> {
        /// `self`, as `T`.
        fn is(&self) -> &T;
    }

    impl<T: ?Sized> Is<T> for T {
        fn is(&self) -> &T {
            self
        }
    }

    /// `serialize_with` of the generated input struct's fields, called as
    /// `serialize_param::<FieldType, _, _>`: `T` is named in the path (on the
    /// parameter's type) and appears in no argument, so a missing trait is
    /// reported there rather than at the call inside the derive.
    pub fn serialize_param<T, V, S>(value: &V, serializer: S) -> Result<S::Ok, S::Error>
    where
        T: ParamSerialize + ?Sized,
        V: Is<T> + ?Sized,
        S: serde::Serializer,
    {
        value.is().serialize(serializer)
    }

    /// The error type of a `#[tool]` function.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the error type of a tool: it does not convert into `ToolError`",
        label = "the error type must implement `Into<ToolError>`",
        note = "implement `std::error::Error` for it (any `Error + Send + Sync + 'static` converts), implement `From<{Self}> for ToolError`, or return `ToolError`"
    )]
    pub trait IntoToolError {
        /// The conversion.
        fn into_tool_error(self) -> crate::ToolError;
    }

    impl<E: Into<crate::ToolError>> IntoToolError for E {
        fn into_tool_error(self) -> crate::ToolError {
            self.into()
        }
    }

    /// Converts the error a `#[tool]` function returned.
    pub fn into_tool_error<E: IntoToolError>(error: E) -> crate::ToolError {
        error.into_tool_error()
    }

    /// The future of an `async fn` tool that returns `Result<T, E>`, its
    /// error converted by `convert` ([`into_tool_error`], whose bound is
    /// checked where the generated code names it, on the error type): one
    /// generic function rather than an async block in every tool's
    /// expansion.
    pub async fn result<T, E>(
        future: impl Future<Output = Result<T, E>>,
        convert: fn(E) -> crate::ToolError,
    ) -> Result<T, crate::ToolError> {
        // A match, not `map_err`: that would be one more function per tool.
        match future.await {
            Ok(output) => Ok(output),
            Err(error) => Err(convert(error)),
        }
    }

    /// The kind of an `async fn` tool's error type that is [`ToolError`](crate::ToolError):
    /// the function's future is the tool's, with no future around it.
    pub struct IsToolError;

    impl IsToolError {
        /// The function's `future` itself. `convert` is named by the
        /// generated code either way, so that its bound is checked alike.
        pub fn future<F, T>(self, future: F, convert: fn(crate::ToolError) -> crate::ToolError) -> F
        where
            F: Future<Output = Result<T, crate::ToolError>>,
        {
            let _ = convert;
            future
        }
    }

    /// The kind of any other error type: converted by [`result`].
    pub struct ConvertsError;

    impl ConvertsError {
        /// [`result`] of `future` and `convert`.
        pub fn future<F, T, E>(
            self,
            future: F,
            convert: fn(E) -> crate::ToolError,
        ) -> impl Future<Output = Result<T, crate::ToolError>>
        where
            F: Future<Output = Result<T, E>>,
        {
            result(future, convert)
        }
    }

    /// Picked for [`ToolError`](crate::ToolError) (by value, before
    /// [`OtherErrorKind`]'s `&self`), whatever its name in the signature.
    pub trait ToolErrorKind: Sized {
        /// The kind.
        fn error_kind(self) -> IsToolError {
            IsToolError
        }
    }

    impl ToolErrorKind for Probe<crate::ToolError> {}

    /// Picked for every other error type.
    pub trait OtherErrorKind {
        /// The kind.
        fn error_kind(&self) -> ConvertsError {
            ConvertsError
        }
    }

    impl<T: ?Sized> OtherErrorKind for Probe<T> {}

    /// The future of a (sync) `fn` tool, which calls it when first polled,
    /// as an async block would.
    pub async fn call<T>(
        function: impl FnOnce() -> Result<T, crate::ToolError>,
    ) -> Result<T, crate::ToolError> {
        function()
    }

    /// The type of a `State<T>` parameter.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be application state: each call gets a clone, shared across threads",
        label = "`State<T>` needs `T: Clone + Send + Sync + 'static`",
        note = "wrap it in an `Arc` (`State<Arc<{Self}>>`, given as `RuntimeBuilder::state(Arc::new(..))`), or derive `Clone`"
    )]
    pub trait StateValue: Clone + Send + Sync + 'static {}

    impl<T: Clone + Send + Sync + 'static> StateValue for T {}

    /// A `State<T>` parameter's value: a clone of the call's state of type
    /// `T` (admission refuses a call without it, as the tool declares it).
    pub fn state<T: StateValue, S, R>(ctx: &crate::ToolContext<S, R>) -> Option<crate::State<T>> {
        ctx.state::<T>().cloned().map(crate::State)
    }

    /// The future of a tool with `State<T>` parameters: `future`, made once
    /// every state was there; without it (only when `TypedTool::execute` is
    /// called directly, skipping admission) the call fails.
    pub async fn with_state<T>(
        future: Option<impl Future<Output = Result<T, crate::ToolError>>>,
    ) -> Result<T, crate::ToolError> {
        match future {
            Some(future) => future.await,
            None => Err(crate::ToolError::new(
                "the tool was called without the application state it declares",
            )),
        }
    }

    /// The future of an `async fn` tool that returns its output.
    pub async fn ok<T>(future: impl Future<Output = T>) -> Result<T, crate::ToolError> {
        Ok(future.await)
    }

    /// The suspend payload type of a `#[tool]` (from `suspend = Type` or the
    /// `ToolContext<Payload, Resume>` generics).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool's suspend payload type: it does not implement `serde::Serialize`",
        label = "the payload is serialized when the tool suspends, and stored",
        note = "derive it with `#[derive(serde::Serialize)]`, or use a type that implements it"
    )]
    pub trait SuspendSerialize: serde::Serialize {}

    impl<T: serde::Serialize + ?Sized> SuspendSerialize for T {}

    /// Checks, at compile time, that a declared suspend payload type is `Serialize`.
    pub const fn suspend_payload<T: SuspendSerialize + ?Sized>() {}

    // Probes of a parameter's type, for what `#[tool]` decides from type
    // names (it cannot see through aliases): each picks, by method
    // resolution on `Probe<T>` (a by-value method where the type has the
    // property, else a `&self` one: autoref specialization), a kind type
    // that the check function then accepts or rejects with a message.

    /// The traits a probe's method resolution picks from, imported by one
    /// glob in the generated code.
    pub mod probe {
        pub use super::{
            ContextKind, MaybeObjectKind, NotContextKind, NotObjectKind, OtherErrorKind,
            ToolErrorKind,
        };
    }

    /// The subject of a probe.
    pub struct Probe<T: ?Sized>(core::marker::PhantomData<T>);

    impl<T: ?Sized> Probe<T> {
        /// The probe of `T`.
        pub const OF: Self = Probe(core::marker::PhantomData);
    }

    /// Types whose JSON Schema is not an object (scalars, sequences,
    /// options, any-JSON `Value`): such a type cannot be a whole input.
    pub trait NotAnObject {}

    macro_rules! not_an_object {
        ($($ty:ty),* $(,)?) => { $(impl NotAnObject for $ty {})* };
    }
    not_an_object!(
        String,
        str,
        bool,
        char,
        u8,
        u16,
        u32,
        u64,
        u128,
        usize,
        i8,
        i16,
        i32,
        i64,
        i128,
        isize,
        f32,
        f64,
        (),
        serde_json::Value,
    );

    macro_rules! not_an_object_generic {
        ($($ty:ty),* $(,)?) => { $(impl<T> NotAnObject for $ty {})* };
    }
    not_an_object_generic!(
        Option<T>,
        [T],
        Vec<T>,
        std::collections::VecDeque<T>,
        std::collections::LinkedList<T>,
        std::collections::BinaryHeap<T>,
        std::collections::BTreeSet<T>,
    );

    impl<T, S> NotAnObject for std::collections::HashSet<T, S> {}
    impl<T, const N: usize> NotAnObject for [T; N] {}
    impl<T: NotAnObject + ?Sized> NotAnObject for Box<T> {}
    impl<T: NotAnObject + ?Sized> NotAnObject for std::rc::Rc<T> {}
    impl<T: NotAnObject + ?Sized> NotAnObject for std::sync::Arc<T> {}
    impl<T: NotAnObject + ToOwned + ?Sized> NotAnObject for std::borrow::Cow<'_, T> {}

    macro_rules! not_an_object_tuple {
        ($(($($t:ident),+))*) => { $(impl<$($t),+> NotAnObject for ($($t,)+) {})* };
    }
    not_an_object_tuple!((A)(A, B)(A, B, C)(A, B, C, D)(A, B, C, D, E)(
        A, B, C, D, E, F
    ));

    /// The kind of a whole input whose schema is an object, or may be.
    pub struct MaybeObject;

    /// The kind of a whole input whose schema is not an object.
    pub struct NotObject;

    /// Picked for `T: NotAnObject` (by value, before [`MaybeObjectKind`]'s
    /// `&self`).
    pub trait NotObjectKind: Sized {
        /// The kind.
        fn object_kind(self) -> NotObject {
            NotObject
        }
    }

    impl<T: NotAnObject + ?Sized> NotObjectKind for Probe<T> {}

    /// Picked for every other `T`.
    pub trait MaybeObjectKind {
        /// The kind.
        fn object_kind(&self) -> MaybeObject {
            MaybeObject
        }
    }

    impl<T: ?Sized> MaybeObjectKind for Probe<T> {}

    /// A whole-input kind that is accepted.
    #[diagnostic::on_unimplemented(
        message = "`{T}` cannot be the whole input of a tool: its JSON Schema is not an object",
        label = "`input = whole` takes this parameter as the whole input",
        note = "providers and MCP take an object as a tool's input",
        note = "without `input = whole`, a lone parameter whose schema is not an object is the one property of a generated input struct"
    )]
    pub trait WholeInput<T: ?Sized> {}

    impl<T: ?Sized> WholeInput<T> for MaybeObject {}

    /// Accepts the kind of a whole input `T`.
    pub fn whole_input<T: ?Sized, K: WholeInput<T>>(_: K) {}

    /// The kind of a parameter that is not a `ToolContext`.
    pub struct NotContext;

    /// The kind of a parameter that is a `ToolContext` under another name.
    pub struct ContextByAnotherName;

    /// Picked for `ToolContext<S, R>` (by value, before
    /// [`NotContextKind`]'s `&self`).
    pub trait ContextKind: Sized {
        /// The kind.
        fn context_kind(self) -> ContextByAnotherName {
            ContextByAnotherName
        }
    }

    impl<S, R> ContextKind for Probe<crate::ToolContext<S, R>> {}

    /// Picked for every other type.
    pub trait NotContextKind {
        /// The kind.
        fn context_kind(&self) -> NotContext {
            NotContext
        }
    }

    impl<T: ?Sized> NotContextKind for Probe<T> {}

    /// A parameter kind that is accepted.
    #[diagnostic::on_unimplemented(
        message = "this parameter is a `{T}`, but `#[tool]` did not recognize it as the context",
        label = "written under another name (an alias?), so it was taken as part of the input",
        note = "`#[tool]` recognizes the context by its name: write `ToolContext<..>` in the signature"
    )]
    pub trait InputParam<T: ?Sized> {}

    impl<T: ?Sized> InputParam<T> for NotContext {}

    /// Accepts the kind of an input parameter `T`.
    pub fn input_param<T: ?Sized, K: InputParam<T>>(_: K) {}

    /// The `request_context = Type` of a `#[tool]`.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool's request context type: it does not implement `schemars::JsonSchema`",
        label = "the request context is validated against this type's JSON Schema",
        note = "derive it with `#[derive(schemars::JsonSchema)]`, or use a type that implements it"
    )]
    pub trait RequestContextSchema: schemars::JsonSchema + 'static {}

    impl<T: schemars::JsonSchema + 'static> RequestContextSchema for T {}

    /// Sets the request-context schema from `C`.
    pub fn request_context_type<C: RequestContextSchema>(
        builder: crate::ToolBuilder,
    ) -> crate::ToolBuilder {
        builder.request_context_type::<C>()
    }

    /// The `reconcile = path` of a `#[tool]`: the function's signature,
    /// checked where the path is written, and the wiring of it.
    pub use crate::reconcile::ReconcileFunction;
    pub use crate::tool::typed_reconcile;

    /// The `state = Type` of a `#[tool]`: declares the workflow state type
    /// (its bound's message is reported on the user's type).
    pub fn workflow_state_type<T: crate::WorkflowState>(
        builder: crate::ToolBuilder,
    ) -> crate::ToolBuilder {
        builder.workflow_state_type::<T>()
    }
}

// The hidden module must be named `__private_` plus this crate's version with
// `_` for every other character than a letter or digit: tool-core-macros, which
// shares the workspace version, generates exactly that path. Rename the
// module when the version changes.
const _: () = assert!(
    names_version(__private_0_1_0::PATH, env!("CARGO_PKG_VERSION")),
    "rename `__private_*` in tool-core/src/lib.rs after the crate version"
);

/// Whether `path` is `tool_core::__private_` followed by `version` with
/// `_` for every character that is not an ASCII letter or digit.
const fn names_version(path: &str, version: &str) -> bool {
    let prefix = b"tool_core::__private_";
    let (path, version) = (path.as_bytes(), version.as_bytes());
    if path.len() != prefix.len() + version.len() {
        return false;
    }
    let mut i = 0;
    while i < path.len() {
        let expected = if i < prefix.len() {
            prefix[i]
        } else if version[i - prefix.len()].is_ascii_alphanumeric() {
            version[i - prefix.len()]
        } else {
            b'_'
        };
        if path[i] != expected {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::names_version;

    #[test]
    fn the_hidden_module_is_named_after_the_version() {
        assert!(names_version("tool_core::__private_0_1_0", "0.1.0"));
        assert!(names_version(
            "tool_core::__private_1_2_3_rc_1",
            "1.2.3-rc.1"
        ));
        assert!(!names_version("tool_core::__private_0_1_0", "0.1.1"));
        assert!(!names_version("tool_core::__private_0_1_0", "0.1.10"));
        assert!(!names_version("tool_core::__private", "0.1.0"));
    }
}
