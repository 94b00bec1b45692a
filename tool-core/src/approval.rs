//! What an approval policy may return: a decision now, or a future of one;
//! the decision a `bool` or a `Result<bool, E>`. A policy that fails or
//! panics means approval is required; how long a runtime waits for one is
//! its rule (`tool_runtime::RuntimeBuilder::approval_timeout`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::hooks::{Awaits, Returns};
use crate::panic::catch_panic_async;
use crate::parameter::{
    ByStruct, ByValue, InputParameter, LoneInput, LoneValue, typed_input, wrapping,
};
use crate::request_context::RequestContext;

/// An approval policy's decision: `true` when the call needs approval.
/// An `Err` means it does (the policy could not tell), and is logged.
pub trait ApprovalDecision {
    /// Whether approval is required, or why the policy could not tell.
    fn into_decision(self) -> Result<bool, String>;
}

impl ApprovalDecision for bool {
    fn into_decision(self) -> Result<bool, String> {
        Ok(self)
    }
}

impl<E: fmt::Display> ApprovalDecision for Result<bool, E> {
    fn into_decision(self) -> Result<bool, String> {
        self.map_err(|e| e.to_string())
    }
}

/// What an approval policy may return: an [`ApprovalDecision`] (marker
/// [`Returns`]) or a `Send + 'static` future of one (marker [`Awaits`]);
/// the marker is inferred.
pub trait ApprovalPolicyReturn<M> {
    /// The decision, ready or to await.
    fn into_answer(self) -> PolicyAnswer;
}

impl<D: ApprovalDecision> ApprovalPolicyReturn<Returns> for D {
    fn into_answer(self) -> PolicyAnswer {
        PolicyAnswer(Answer::Ready(self.into_decision()))
    }
}

impl<F> ApprovalPolicyReturn<Awaits> for F
where
    F: Future + Send + 'static,
    F::Output: ApprovalDecision,
{
    fn into_answer(self) -> PolicyAnswer {
        PolicyAnswer(Answer::Pending(Box::pin(async move {
            self.await.into_decision()
        })))
    }
}

/// An answer already made passes through: a policy may hand on another's.
impl ApprovalPolicyReturn<Returns> for PolicyAnswer {
    fn into_answer(self) -> PolicyAnswer {
        self
    }
}

/// An approval policy's answer, ready or to await ([`resolve`](Self::resolve)).
///
/// ```
/// use tool_core::ApprovalPolicyReturn;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(true.into_answer().resolve().await, Ok(true));
/// let later = async { Err::<bool, _>("the ledger is down") }.into_answer();
/// assert_eq!(later.resolve().await, Err("the ledger is down".to_owned()));
/// # });
/// ```
pub struct PolicyAnswer(Answer);

enum Answer {
    Ready(Result<bool, String>),
    Pending(Pin<Box<dyn Future<Output = Result<bool, String>> + Send>>),
}

impl fmt::Debug for PolicyAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Answer::Ready(decision) => f.debug_tuple("Ready").field(decision).finish(),
            Answer::Pending(_) => f.write_str("Pending"),
        }
    }
}

impl PolicyAnswer {
    /// The decision: `Ok(true)` when approval is required, `Err` with why
    /// the policy could not tell (it failed, or its future panicked).
    pub async fn resolve(self) -> Result<bool, String> {
        match self.0 {
            Answer::Ready(decision) => decision,
            Answer::Pending(running) => catch_panic_async(|| running)
                .await
                .map_err(|panic| format!("it panicked: {panic}"))
                .and_then(|decision| decision),
        }
    }
}

/// An approval policy of a tool with one parameter of type `V`: a function
/// of the value, or of the generated input struct `S`, that returns its
/// decision or a future of it (marker `(ByStruct | ByValue, Returns | Awaits)`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an approval policy of this tool",
    label = "expected `fn(&T, &RequestContext) -> bool`",
    note = "a tool with one parameter of type `T` takes `fn(&T, &RequestContext) -> bool` (or a function of the generated input struct, `fn(&XxxToolInput, &RequestContext) -> bool`); it may return `Result<bool, E>`, or a `Send + 'static` future of either"
)]
pub trait LonePolicy<V, S, M>: Send + Sync + 'static {
    /// Whether the call needs approval; `to_struct` makes the generated
    /// struct from the value.
    fn requires_approval(
        &self,
        value: V,
        to_struct: fn(V) -> S,
        request_context: &RequestContext,
    ) -> PolicyAnswer;
}

impl<V, S, F, R, A> LonePolicy<V, S, (ByStruct, A)> for F
where
    F: Fn(&S, &RequestContext) -> R + Send + Sync + 'static,
    R: ApprovalPolicyReturn<A>,
{
    fn requires_approval(
        &self,
        value: V,
        to_struct: fn(V) -> S,
        request_context: &RequestContext,
    ) -> PolicyAnswer {
        self(&to_struct(value), request_context).into_answer()
    }
}

impl<V, S, F, R, A> LonePolicy<V, S, (ByValue, A)> for F
where
    F: Fn(&V, &RequestContext) -> R + Send + Sync + 'static,
    R: ApprovalPolicyReturn<A>,
{
    fn requires_approval(
        &self,
        value: V,
        _: fn(V) -> S,
        request_context: &RequestContext,
    ) -> PolicyAnswer {
        self(&value, request_context).into_answer()
    }
}

/// Runs a typed approval policy (sync or async) over validated JSON input,
/// read as a tool whose input type is `I` reads it (`parameter`: its
/// `TypedTool::INPUT_PARAMETER`); input that no longer fits the type needs
/// approval.
pub fn typed_policy<I, R, A>(
    input: &Value,
    request_context: &RequestContext,
    policy: impl Fn(&I, &RequestContext) -> R,
    parameter: Option<InputParameter>,
) -> PolicyAnswer
where
    I: DeserializeOwned + JsonSchema + 'static,
    R: ApprovalPolicyReturn<A>,
{
    match typed_input::<I>(input, wrapping::<I>(parameter)) {
        Ok(input) => policy(&input, request_context).into_answer(),
        Err(_) => true.into_answer(),
    }
}

/// Runs a [`LonePolicy`] of a one-parameter tool whose input type is `I`
/// over validated JSON input, as [`typed_policy`].
pub fn lone_policy<I, S, M>(
    input: &Value,
    request_context: &RequestContext,
    policy: &impl LonePolicy<LoneValue<I>, S, M>,
    to_struct: fn(LoneValue<I>) -> S,
    parameter: Option<InputParameter>,
) -> PolicyAnswer
where
    I: LoneInput + DeserializeOwned + JsonSchema + 'static,
{
    match typed_input::<I>(input, wrapping::<I>(parameter)) {
        Ok(input) => policy.requires_approval(input.into_value(), to_struct, request_context),
        Err(_) => true.into_answer(),
    }
}
