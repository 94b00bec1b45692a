//! Lifecycle hooks on a call's streamed input and its output:
//! `on_input_start`, `on_input_delta`, `on_input_available`, `on_output`.
//!
//! Hooks observe; they never fail a call. A hook that returns an error or
//! panics is logged with `tracing::error!` and the call goes on.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::abort::AbortSignal;

/// Arguments of `on_input_start`: the model began streaming a call's arguments.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct InputStart<'a> {
    /// The call's id.
    pub call_id: &'a str,
    /// The conversation so far.
    pub messages: &'a [Value],
    /// The call's abort signal.
    pub abort_signal: &'a AbortSignal,
}

/// Arguments of `on_input_delta`: one more fragment of the arguments' text.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct InputDelta<'a> {
    /// The new fragment.
    pub input_text_delta: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// The conversation so far.
    pub messages: &'a [Value],
    /// The call's abort signal.
    pub abort_signal: &'a AbortSignal,
}

/// Arguments of `on_input_available`: the complete arguments.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct InputAvailable<'a> {
    /// The parsed arguments.
    pub input: &'a Value,
    /// The call's id.
    pub call_id: &'a str,
    /// The conversation so far.
    pub messages: &'a [Value],
    /// The call's abort signal.
    pub abort_signal: &'a AbortSignal,
}

/// Arguments of `on_output`: the tool produced its output.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct OutputAvailable<'a> {
    /// The raw output.
    pub output: &'a Value,
    /// The call's id.
    pub call_id: &'a str,
    /// The tool's id.
    pub tool_id: &'a str,
    /// The call's abort signal.
    pub abort_signal: &'a AbortSignal,
}

impl<'a> InputStart<'a> {
    /// Arguments for a call.
    pub fn new(call_id: &'a str, messages: &'a [Value], abort_signal: &'a AbortSignal) -> Self {
        InputStart {
            call_id,
            messages,
            abort_signal,
        }
    }
}

impl<'a> InputDelta<'a> {
    /// Arguments for a fragment of a call.
    pub fn new(
        input_text_delta: &'a str,
        call_id: &'a str,
        messages: &'a [Value],
        abort_signal: &'a AbortSignal,
    ) -> Self {
        InputDelta {
            input_text_delta,
            call_id,
            messages,
            abort_signal,
        }
    }
}

impl<'a> InputAvailable<'a> {
    /// Arguments for the complete input of a call.
    pub fn new(
        input: &'a Value,
        call_id: &'a str,
        messages: &'a [Value],
        abort_signal: &'a AbortSignal,
    ) -> Self {
        InputAvailable {
            input,
            call_id,
            messages,
            abort_signal,
        }
    }
}

impl<'a> OutputAvailable<'a> {
    /// Arguments for the output of a call.
    pub fn new(
        output: &'a Value,
        call_id: &'a str,
        tool_id: &'a str,
        abort_signal: &'a AbortSignal,
    ) -> Self {
        OutputAvailable {
            output,
            call_id,
            tool_id,
            abort_signal,
        }
    }
}

/// What a hook may return: nothing, or a `Result` whose error is logged.
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

type InputStartHook = Arc<dyn for<'a> Fn(&InputStart<'a>) -> Option<String> + Send + Sync>;
type InputDeltaHook = Arc<dyn for<'a> Fn(&InputDelta<'a>) -> Option<String> + Send + Sync>;
type InputAvailableHook = Arc<dyn for<'a> Fn(&InputAvailable<'a>) -> Option<String> + Send + Sync>;
type OutputHook = Arc<dyn for<'a> Fn(&OutputAvailable<'a>) -> Option<String> + Send + Sync>;

/// The four lifecycle hooks of a tool (or of a whole runtime).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tool_core::hooks::{Hooks, InputStart};
/// use tool_core::AbortSignal;
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let hooks = Hooks::new().on_input_start(move |args: &InputStart<'_>| {
///     log.lock().unwrap().push(args.call_id.to_owned());
/// });
/// hooks.input_start(&InputStart::new("c1", &[], &AbortSignal::new()));
/// assert_eq!(*seen.lock().unwrap(), ["c1"]);
/// ```
#[derive(Clone, Default)]
pub struct Hooks {
    input_start: Option<InputStartHook>,
    input_delta: Option<InputDeltaHook>,
    input_available: Option<InputAvailableHook>,
    output: Option<OutputHook>,
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

/// Runs a hook, turning its error or panic into a log line.
fn run_hook(name: &str, call_id: &str, hook: impl FnOnce() -> Option<String>) {
    match crate::panic::catch_panic(hook) {
        Ok(None) => {}
        Ok(Some(error)) => {
            tracing::error!(hook = name, call_id, %error, "tool hook failed; the call goes on");
        }
        Err(_) => tracing::error!(hook = name, call_id, "tool hook panicked; the call goes on"),
    }
}

impl Hooks {
    /// No hooks.
    pub fn new() -> Self {
        Hooks::default()
    }

    /// Sets `on_input_start`.
    #[must_use]
    pub fn on_input_start<F, R>(mut self, hook: F) -> Self
    where
        F: for<'a> Fn(&InputStart<'a>) -> R + Send + Sync + 'static,
        R: HookResult,
    {
        self.input_start = Some(Arc::new(move |args: &InputStart<'_>| {
            hook(args).into_failure()
        }));
        self
    }

    /// Sets `on_input_delta`.
    #[must_use]
    pub fn on_input_delta<F, R>(mut self, hook: F) -> Self
    where
        F: for<'a> Fn(&InputDelta<'a>) -> R + Send + Sync + 'static,
        R: HookResult,
    {
        self.input_delta = Some(Arc::new(move |args: &InputDelta<'_>| {
            hook(args).into_failure()
        }));
        self
    }

    /// Sets `on_input_available`.
    #[must_use]
    pub fn on_input_available<F, R>(mut self, hook: F) -> Self
    where
        F: for<'a> Fn(&InputAvailable<'a>) -> R + Send + Sync + 'static,
        R: HookResult,
    {
        self.input_available = Some(Arc::new(move |args: &InputAvailable<'_>| {
            hook(args).into_failure()
        }));
        self
    }

    /// Sets `on_output`.
    #[must_use]
    pub fn on_output<F, R>(mut self, hook: F) -> Self
    where
        F: for<'a> Fn(&OutputAvailable<'a>) -> R + Send + Sync + 'static,
        R: HookResult,
    {
        self.output = Some(Arc::new(move |args: &OutputAvailable<'_>| {
            hook(args).into_failure()
        }));
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

    /// Fires `on_input_start`.
    pub fn input_start(&self, args: &InputStart<'_>) {
        if let Some(hook) = &self.input_start {
            run_hook("on_input_start", args.call_id, || hook(args));
        }
    }

    /// Fires `on_input_delta`.
    pub fn input_delta(&self, args: &InputDelta<'_>) {
        if let Some(hook) = &self.input_delta {
            run_hook("on_input_delta", args.call_id, || hook(args));
        }
    }

    /// Fires `on_input_available`.
    pub fn input_available(&self, args: &InputAvailable<'_>) {
        if let Some(hook) = &self.input_available {
            run_hook("on_input_available", args.call_id, || hook(args));
        }
    }

    /// Fires `on_output`.
    pub fn output(&self, args: &OutputAvailable<'_>) {
        if let Some(hook) = &self.output {
            run_hook("on_output", args.call_id, || hook(args));
        }
    }
}
