//! Lifecycle hooks on a call's streamed input and its output:
//! `on_input_start`, `on_input_delta`, `on_input_available`, `on_output`,
//! as Mastra's `createTool` has them.
//!
//! A hook takes its arguments by value (owned and cheap to clone: the
//! conversation is shared) and returns nothing, a `Result<(), E>`, or a
//! `Send + 'static` future of either: a plain closure, a closure returning
//! an `async` block and an `async fn` all fit the same setter (told apart
//! by [`HookReturn`]). `on_input_available` and `on_output` may see the
//! input and output as types of their own ([`Hooks::on_input_available_as`],
//! [`Hooks::on_output_as`]; `#[tool]` hooks always do).
//!
//! Hooks observe; they never fail a call. A hook that returns an error or
//! panics is logged with `tracing::error!` and the call goes on. How long a
//! runtime waits for an async hook, and how the hooks of streamed input are
//! ordered, is the runtime's rule (`tool_runtime::RuntimeBuilder::hook_timeout`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::abort::AbortSignal;
use crate::panic::{catch_panic, catch_panic_async};
use crate::parameter::{InputParameter, typed_input, wrapping};

/// Arguments of `on_input_start`: the model began streaming a call's arguments.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InputStart {
    /// The call's id.
    pub call_id: String,
    /// The conversation so far.
    pub messages: Arc<[Value]>,
    /// The call's abort signal.
    pub abort_signal: AbortSignal,
}

/// Arguments of `on_input_delta`: one more fragment of the arguments' text.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InputDelta {
    /// The new fragment.
    pub input_text_delta: String,
    /// The call's id.
    pub call_id: String,
    /// The conversation so far.
    pub messages: Arc<[Value]>,
    /// The call's abort signal.
    pub abort_signal: AbortSignal,
}

/// Arguments of `on_input_available`: the complete, validated arguments, as
/// JSON or (a typed hook) as `I`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InputAvailable<I = Value> {
    /// The arguments.
    pub input: I,
    /// The call's id.
    pub call_id: String,
    /// The conversation so far.
    pub messages: Arc<[Value]>,
    /// The call's abort signal.
    pub abort_signal: AbortSignal,
}

/// Arguments of `on_output`: the tool produced its output, as JSON or (a
/// typed hook) as `O`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OutputAvailable<O = Value> {
    /// The raw output (not the model-facing form).
    pub output: O,
    /// The call's id.
    pub call_id: String,
    /// The tool's id.
    pub tool_id: String,
    /// The call's abort signal.
    pub abort_signal: AbortSignal,
}

impl InputStart {
    /// Arguments for a call.
    pub fn new(
        call_id: impl Into<String>,
        messages: impl Into<Arc<[Value]>>,
        abort_signal: AbortSignal,
    ) -> Self {
        InputStart {
            call_id: call_id.into(),
            messages: messages.into(),
            abort_signal,
        }
    }
}

impl InputDelta {
    /// Arguments for a fragment of a call.
    pub fn new(
        input_text_delta: impl Into<String>,
        call_id: impl Into<String>,
        messages: impl Into<Arc<[Value]>>,
        abort_signal: AbortSignal,
    ) -> Self {
        InputDelta {
            input_text_delta: input_text_delta.into(),
            call_id: call_id.into(),
            messages: messages.into(),
            abort_signal,
        }
    }
}

impl<I> InputAvailable<I> {
    /// Arguments for the complete input of a call.
    pub fn new(
        input: I,
        call_id: impl Into<String>,
        messages: impl Into<Arc<[Value]>>,
        abort_signal: AbortSignal,
    ) -> Self {
        InputAvailable {
            input,
            call_id: call_id.into(),
            messages: messages.into(),
            abort_signal,
        }
    }
}

impl<O> OutputAvailable<O> {
    /// Arguments for the output of a call.
    pub fn new(
        output: O,
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        abort_signal: AbortSignal,
    ) -> Self {
        OutputAvailable {
            output,
            call_id: call_id.into(),
            tool_id: tool_id.into(),
            abort_signal,
        }
    }
}

/// What a hook's result may be: nothing, or a `Result` whose error is logged.
pub trait HookResult {
    /// The error message, if the hook failed.
    fn into_failure(self) -> Option<String>;
}

impl HookResult for () {
    fn into_failure(self) -> Option<String> {
        None
    }
}

impl<E: fmt::Display> HookResult for Result<(), E> {
    fn into_failure(self) -> Option<String> {
        self.err().map(|e| e.to_string())
    }
}

/// Marks a hook or approval policy that returns its result at once
/// ([`HookReturn`], `ApprovalPolicyReturn`); never named by callers.
#[derive(Debug)]
pub enum Returns {}

/// Marks a hook or approval policy that returns a future of its result.
#[derive(Debug)]
pub enum Awaits {}

/// What a hook may return: a [`HookResult`] (marker [`Returns`]), or a
/// `Send + 'static` future of one (marker [`Awaits`]). The marker is
/// inferred: `Hooks::new().on_output(|out| ...)` takes either.
pub trait HookReturn<M> {
    /// The result, ready or to await.
    #[doc(hidden)]
    fn into_fired(self) -> Fired;
}

impl<R: HookResult> HookReturn<Returns> for R {
    fn into_fired(self) -> Fired {
        Fired::Done(self.into_failure())
    }
}

impl<F> HookReturn<Awaits> for F
where
    F: Future + Send + 'static,
    F::Output: HookResult,
{
    fn into_fired(self) -> Fired {
        Fired::Pending(Box::pin(async move { self.await.into_failure() }))
    }
}

/// What a hook returned: its failure, or the future of it.
#[doc(hidden)]
pub enum Fired {
    Done(Option<String>),
    Pending(Pin<Box<dyn Future<Output = Option<String>> + Send>>),
}

type HookFn<A> = Arc<dyn Fn(A) -> Fired + Send + Sync>;

/// The four lifecycle hooks of a tool (or of a whole runtime).
///
/// Each setter takes a plain closure or one returning a future (an `async
/// fn` too); firing one ([`input_start`](Self::input_start), ...) returns a
/// future that runs the hook when polled and logs its failure or panic.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tool_core::hooks::{Hooks, InputStart, OutputAvailable};
/// use tool_core::AbortSignal;
///
/// async fn audit(out: OutputAvailable) -> Result<(), String> {
///     // An async hook: awaits whatever it needs (a queue, a database).
///     tokio::task::yield_now().await;
///     if out.output.is_null() { Err("no output".into()) } else { Ok(()) }
/// }
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let hooks = Hooks::new()
///     .on_input_start(move |args: InputStart| log.lock().unwrap().push(args.call_id))
///     .on_output(audit);
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// hooks.input_start(InputStart::new("c1", Vec::new(), AbortSignal::new())).await;
/// assert_eq!(*seen.lock().unwrap(), ["c1"]);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct Hooks {
    input_start: Option<HookFn<InputStart>>,
    input_delta: Option<HookFn<InputDelta>>,
    input_available: Option<HookFn<InputAvailable>>,
    output: Option<HookFn<OutputAvailable>>,
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("on_input_start", &self.input_start.is_some())
            .field("on_input_delta", &self.input_delta.is_some())
            .field("on_input_available", &self.input_available.is_some())
            .field("on_output", &self.output.is_some())
            .finish()
    }
}

/// The hook as the type-erased form `Hooks` keeps.
fn erase<A, F, R, M>(hook: F) -> HookFn<A>
where
    F: Fn(A) -> R + Send + Sync + 'static,
    R: HookReturn<M>,
{
    Arc::new(move |args| hook(args).into_fired())
}

/// A hook on arguments `B` made from `A` by `convert`; arguments that do not
/// convert are the hook's failure, logged like any other, and the hook does
/// not run.
fn typed<A, B, F, R, M>(
    convert: impl Fn(A) -> Result<B, String> + Send + Sync + 'static,
    hook: F,
) -> HookFn<A>
where
    F: Fn(B) -> R + Send + Sync + 'static,
    R: HookReturn<M>,
{
    Arc::new(move |args| match convert(args) {
        Ok(args) => hook(args).into_fired(),
        Err(error) => Fired::Done(Some(error)),
    })
}

/// `value` as `S`, or why it is not one.
fn deserialize<S: DeserializeOwned>(value: Value) -> Result<S, String> {
    serde_json::from_value(value).map_err(|error| {
        format!(
            "the hook did not run: the value is not a `{}`: {error}",
            std::any::type_name::<S>()
        )
    })
}

impl<I> InputAvailable<I> {
    /// The same arguments with the input made into another type.
    fn try_map<J>(
        self,
        f: impl FnOnce(I) -> Result<J, String>,
    ) -> Result<InputAvailable<J>, String> {
        Ok(InputAvailable {
            input: f(self.input)?,
            call_id: self.call_id,
            messages: self.messages,
            abort_signal: self.abort_signal,
        })
    }
}

impl<O> OutputAvailable<O> {
    /// The same arguments with the output made into another type.
    fn try_map<P>(
        self,
        f: impl FnOnce(O) -> Result<P, String>,
    ) -> Result<OutputAvailable<P>, String> {
        Ok(OutputAvailable {
            output: f(self.output)?,
            call_id: self.call_id,
            tool_id: self.tool_id,
            abort_signal: self.abort_signal,
        })
    }
}

/// Runs `hook` (when set) on `args` once polled, and logs its failure or panic.
fn fire<A: Send + 'static>(
    name: &'static str,
    hook: Option<&HookFn<A>>,
    call_id: fn(&A) -> &str,
    args: A,
) -> impl Future<Output = ()> + Send + 'static + use<A> {
    let hook = hook.map(|hook| (Arc::clone(hook), call_id(&args).to_owned()));
    async move {
        let Some((hook, call_id)) = hook else {
            return;
        };
        let ended = match catch_panic(|| hook(args)) {
            Err(panic) => Err(panic),
            Ok(Fired::Done(failure)) => Ok(failure),
            Ok(Fired::Pending(running)) => catch_panic_async(|| running).await,
        };
        match ended {
            Ok(None) => {}
            Ok(Some(error)) => {
                tracing::error!(hook = name, call_id, %error, "tool hook failed; the call goes on");
            }
            Err(panic) => {
                tracing::error!(hook = name, call_id, %panic, "tool hook panicked; the call goes on");
            }
        }
    }
}

impl Hooks {
    /// No hooks.
    pub fn new() -> Self {
        Hooks::default()
    }

    /// Sets `on_input_start`.
    #[must_use]
    pub fn on_input_start<F, R, M>(mut self, hook: F) -> Self
    where
        F: Fn(InputStart) -> R + Send + Sync + 'static,
        R: HookReturn<M>,
    {
        self.input_start = Some(erase(hook));
        self
    }

    /// Sets `on_input_delta`.
    #[must_use]
    pub fn on_input_delta<F, R, M>(mut self, hook: F) -> Self
    where
        F: Fn(InputDelta) -> R + Send + Sync + 'static,
        R: HookReturn<M>,
    {
        self.input_delta = Some(erase(hook));
        self
    }

    /// Sets `on_input_available`, with the input as JSON.
    #[must_use]
    pub fn on_input_available<F, R, M>(mut self, hook: F) -> Self
    where
        F: Fn(InputAvailable) -> R + Send + Sync + 'static,
        R: HookReturn<M>,
    {
        self.input_available = Some(erase(hook));
        self
    }

    /// Sets `on_input_available`, with the input deserialized into `I` (the
    /// type the tool's input schema describes). Input that does not
    /// deserialize (it passed the schema, so the type and the schema
    /// disagree) is logged as the hook's failure, and the hook does not run.
    ///
    /// ```
    /// use serde::Deserialize;
    /// use tool_core::hooks::{Hooks, InputAvailable};
    ///
    /// #[derive(Deserialize)]
    /// struct Transfer { amount: u64 }
    ///
    /// let hooks = Hooks::new().on_input_available_as(|args: InputAvailable<Transfer>| {
    ///     println!("{} asks to move {}", args.call_id, args.input.amount);
    /// });
    /// assert!(hooks.has_on_input_available());
    /// ```
    #[must_use]
    pub fn on_input_available_as<I, F, R, M>(mut self, hook: F) -> Self
    where
        I: DeserializeOwned + 'static,
        F: Fn(InputAvailable<I>) -> R + Send + Sync + 'static,
        R: HookReturn<M>,
    {
        let convert = |args: InputAvailable| args.try_map(deserialize);
        self.input_available = Some(typed(convert, hook));
        self
    }

    /// Sets `on_input_available` with the input read as a tool whose input
    /// type is `S` reads it (`parameter`: its `TypedTool::INPUT_PARAMETER`),
    /// then made into `I` by `to`: what `#[tool]` sets (`I` what its
    /// function takes).
    #[doc(hidden)]
    #[must_use]
    pub fn on_input_available_via<S, I, F, R, M>(
        mut self,
        hook: F,
        parameter: Option<InputParameter>,
        to: fn(S) -> I,
    ) -> Self
    where
        S: DeserializeOwned + JsonSchema + 'static,
        I: 'static,
        F: Fn(InputAvailable<I>) -> R + Send + Sync + 'static,
        R: HookReturn<M>,
    {
        let wraps = wrapping::<S>(parameter);
        let convert = move |args: InputAvailable| {
            args.try_map(|value| match typed_input::<S>(&value, wraps) {
                Ok(input) => Ok(to(input)),
                Err(mismatch) => Err(format!(
                    "the hook did not run: the value is not a `{}`: {mismatch}",
                    std::any::type_name::<S>(),
                )),
            })
        };
        self.input_available = Some(typed(convert, hook));
        self
    }

    /// Sets `on_output`, with the output as JSON.
    #[must_use]
    pub fn on_output<F, R, M>(mut self, hook: F) -> Self
    where
        F: Fn(OutputAvailable) -> R + Send + Sync + 'static,
        R: HookReturn<M>,
    {
        self.output = Some(erase(hook));
        self
    }

    /// Sets `on_output`, with the output deserialized into `O` (for a
    /// `#[tool]` function, its return type). Output that does not
    /// deserialize is logged as the hook's failure, and the hook does not run.
    ///
    /// ```
    /// use tool_core::hooks::{Hooks, OutputAvailable};
    ///
    /// let hooks = Hooks::new().on_output_as(|out: OutputAvailable<String>| async move {
    ///     println!("{} said {}", out.tool_id, out.output.to_uppercase());
    /// });
    /// assert!(hooks.has_on_output());
    /// ```
    #[must_use]
    pub fn on_output_as<O, F, R, M>(mut self, hook: F) -> Self
    where
        O: DeserializeOwned + 'static,
        F: Fn(OutputAvailable<O>) -> R + Send + Sync + 'static,
        R: HookReturn<M>,
    {
        let convert = |args: OutputAvailable| args.try_map(deserialize);
        self.output = Some(typed(convert, hook));
        self
    }

    /// Whether `on_input_start` is set.
    pub fn has_on_input_start(&self) -> bool {
        self.input_start.is_some()
    }

    /// Whether `on_input_delta` is set.
    pub fn has_on_input_delta(&self) -> bool {
        self.input_delta.is_some()
    }

    /// Whether `on_input_available` is set.
    pub fn has_on_input_available(&self) -> bool {
        self.input_available.is_some()
    }

    /// Whether `on_output` is set.
    pub fn has_on_output(&self) -> bool {
        self.output.is_some()
    }

    /// Fires `on_input_start`: the returned future runs the hook (when set)
    /// to its end and logs its failure; nothing runs until it is polled.
    pub fn input_start(
        &self,
        args: InputStart,
    ) -> impl Future<Output = ()> + Send + 'static + use<> {
        fire(
            "on_input_start",
            self.input_start.as_ref(),
            |a| &a.call_id,
            args,
        )
    }

    /// Fires `on_input_delta`, as [`input_start`](Self::input_start).
    pub fn input_delta(
        &self,
        args: InputDelta,
    ) -> impl Future<Output = ()> + Send + 'static + use<> {
        fire(
            "on_input_delta",
            self.input_delta.as_ref(),
            |a| &a.call_id,
            args,
        )
    }

    /// Fires `on_input_available`, as [`input_start`](Self::input_start).
    pub fn input_available(
        &self,
        args: InputAvailable,
    ) -> impl Future<Output = ()> + Send + 'static + use<> {
        fire(
            "on_input_available",
            self.input_available.as_ref(),
            |a| &a.call_id,
            args,
        )
    }

    /// Fires `on_output`, as [`input_start`](Self::input_start).
    pub fn output(
        &self,
        args: OutputAvailable,
    ) -> impl Future<Output = ()> + Send + 'static + use<> {
        fire("on_output", self.output.as_ref(), |a| &a.call_id, args)
    }
}
