//! What a tool's reconcile hook found out about an interrupted call.

use std::future::Future;

use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::idempotency::IdempotencyKey;

/// What became of an interrupted call, as the tool's reconcile hook found
/// out ([`ToolBuilder::reconcile`](crate::ToolBuilder::reconcile),
/// `#[tool(reconcile = path)]`).
///
/// A call whose run was interrupted (its lease ran out before an outcome
/// was recorded: the process running it died, or lost its store) and whose
/// tool is not retry-safe may or may not have had its effect. A tool with a
/// reconcile hook can tell: it asks the system it acts on, usually by the
/// call's [`IdempotencyKey`](crate::IdempotencyKey) (was a payment with
/// this key made? an email with this key sent?), and answers with one of
/// these. `O` is the tool's output type (`serde_json::Value` for a tool
/// built over JSON values).
///
/// ```
/// use serde_json::json;
/// use tool_core::Reconciled;
///
/// let found: Reconciled = Reconciled::Happened(json!({ "charged": 500 }));
/// assert!(found.happened());
/// assert_eq!(found.output(), Some(&json!({ "charged": 500 })));
/// let missing: Reconciled<u32> = Reconciled::NotHappened;
/// assert_eq!(missing.output(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciled<O = Value> {
    /// The effect happened: the call produced this output. It is validated
    /// against the output schema, as an executed call's output is, and the
    /// call settles with it.
    Happened(O),
    /// The effect did not happen: nothing of the call is left to undo.
    NotHappened,
}

impl<O> Reconciled<O> {
    /// Whether the effect happened.
    ///
    /// ```
    /// assert!(tool_core::Reconciled::Happened(1).happened());
    /// assert!(!tool_core::Reconciled::<u8>::NotHappened.happened());
    /// ```
    pub fn happened(&self) -> bool {
        matches!(self, Reconciled::Happened(_))
    }

    /// The output, when the effect happened.
    ///
    /// ```
    /// assert_eq!(tool_core::Reconciled::Happened(7).output(), Some(&7));
    /// ```
    pub fn output(&self) -> Option<&O> {
        match self {
            Reconciled::Happened(output) => Some(output),
            Reconciled::NotHappened => None,
        }
    }

    /// The same answer with the output mapped by `f`.
    ///
    /// ```
    /// use tool_core::Reconciled;
    ///
    /// assert_eq!(Reconciled::Happened(2).map(|n| n * 10), Reconciled::Happened(20));
    /// assert_eq!(Reconciled::<u8>::NotHappened.map(|n| n * 10), Reconciled::NotHappened);
    /// ```
    pub fn map<P>(self, f: impl FnOnce(O) -> P) -> Reconciled<P> {
        match self {
            Reconciled::Happened(output) => Reconciled::Happened(f(output)),
            Reconciled::NotHappened => Reconciled::NotHappened,
        }
    }
}

/// A reconcile function of a typed tool whose function takes `I`, returns
/// `O` and has the context `ToolContext<S, R>`: an `async fn(I,
/// IdempotencyKey, ToolContext<S, R>) -> Result<Reconciled<O>, E>` with
/// `E: Into<ToolError>`. What `#[tool(reconcile = path)]` requires of the
/// path, through `__private`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a reconcile function of this tool",
    label = "expected an `async fn({I}, IdempotencyKey, ToolContext<{S}, {R}>) -> Result<Reconciled<{O}>, E>`",
    note = "a reconcile function takes what the tool's function takes (its input, here `{I}`, and the same `ToolContext`) with the call's `IdempotencyKey`, and returns `Result<Reconciled<Output>, E>` with the tool's output type and an error type that converts into `ToolError`"
)]
pub trait ReconcileFunction<I, O, S, R>: Send + Sync + 'static {
    /// Runs the function, its error converted.
    fn call(
        &self,
        input: I,
        key: IdempotencyKey,
        ctx: ToolContext<S, R>,
    ) -> impl Future<Output = Result<Reconciled<O>, ToolError>> + Send + 'static;
}

impl<F, Fut, I, O, S, R, E> ReconcileFunction<I, O, S, R> for F
where
    F: Fn(I, IdempotencyKey, ToolContext<S, R>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Reconciled<O>, E>> + Send + 'static,
    E: Into<ToolError>,
    I: 'static,
    O: 'static,
    S: 'static,
    R: 'static,
    E: 'static,
{
    fn call(
        &self,
        input: I,
        key: IdempotencyKey,
        ctx: ToolContext<S, R>,
    ) -> impl Future<Output = Result<Reconciled<O>, ToolError>> + Send + 'static {
        let running = self(input, key, ctx);
        async move { running.await.map_err(Into::into) }
    }
}
