//! What an approval policy may return: a decision now, or a future of one;
//! the decision an [`ApprovalRequirement`] (not required, required from N
//! principals of a group, refused), a `bool` (required or not), or a
//! `Result` of either. A policy that fails or panics means approval is
//! required; how long a runtime waits for one is its rule
//! (`tool_runtime::RuntimeBuilder::approval_timeout`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::hooks::{Awaits, Returns};
use crate::panic::catch_panic_async;
use crate::parameter::{ByStruct, ByValue, InputParameter, LoneInput, LoneValue, input_if_fits};
use crate::request_context::RequestContext;

/// What an approval policy says about one call, decided on the call's
/// input (and request context): it runs without a person, it waits for
/// the approvals of some principals (optionally from a named group of the
/// application's), or it is refused outright with a reason the model
/// reads.
///
/// ```
/// use tool_core::ApprovalRequirement;
///
/// let refund = |amount: u32| match amount {
///     0..=100 => ApprovalRequirement::NotRequired,
///     101..=1_000 => ApprovalRequirement::required(),
///     1_001..=10_000 => ApprovalRequirement::approvals(2).from_group("finance"),
///     _ => ApprovalRequirement::refused("refunds above 10,000 are made by the bank, not by this agent"),
/// };
/// assert_eq!(refund(50), ApprovalRequirement::NotRequired);
/// assert_eq!(refund(5_000), ApprovalRequirement::Required { approvals: Some(2), group: Some("finance".into()) });
/// assert!(matches!(refund(50_000), ApprovalRequirement::Refused { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[non_exhaustive]
pub enum ApprovalRequirement {
    /// The call runs without a person.
    NotRequired,
    /// The call waits for approval.
    Required {
        /// How many different principals must approve it; `None`: as many
        /// as the runtime's rules say for the tool (one by default).
        approvals: Option<u32>,
        /// The group each of them must be in, when named (as the
        /// application's authentication puts principals in groups).
        group: Option<String>,
    },
    /// The call is refused without asking anyone; the model reads why.
    Refused {
        /// Why, as the model reads it.
        reason: String,
    },
}

impl ApprovalRequirement {
    /// Approval by as many principals as the runtime's rules say (one by
    /// default): what `true` means.
    pub fn required() -> Self {
        ApprovalRequirement::Required {
            approvals: None,
            group: None,
        }
    }

    /// Approval by `principals` different principals (0 counts as 1).
    pub fn approvals(principals: u32) -> Self {
        ApprovalRequirement::Required {
            approvals: Some(principals.max(1)),
            group: None,
        }
    }

    /// `self`, each approval from a principal in `group`; no change to
    /// [`NotRequired`](Self::NotRequired) or [`Refused`](Self::Refused).
    #[must_use]
    pub fn from_group(self, group: impl Into<String>) -> Self {
        match self {
            ApprovalRequirement::Required { approvals, .. } => ApprovalRequirement::Required {
                approvals,
                group: Some(group.into()),
            },
            other => other,
        }
    }

    /// Refused, for `reason` (the model reads it).
    pub fn refused(reason: impl Into<String>) -> Self {
        ApprovalRequirement::Refused {
            reason: reason.into(),
        }
    }

    /// Whether the call waits for a person.
    pub fn is_required(&self) -> bool {
        matches!(self, ApprovalRequirement::Required { .. })
    }
}

impl From<bool> for ApprovalRequirement {
    fn from(required: bool) -> Self {
        if required {
            ApprovalRequirement::required()
        } else {
            ApprovalRequirement::NotRequired
        }
    }
}

/// An approval policy's decision: an [`ApprovalRequirement`], or `true`
/// when the call needs approval. An `Err` means it does (the policy could
/// not tell), and is logged.
pub trait ApprovalDecision {
    /// What the call needs, or why the policy could not tell.
    fn into_decision(self) -> Result<ApprovalRequirement, String>;
}

impl ApprovalDecision for bool {
    fn into_decision(self) -> Result<ApprovalRequirement, String> {
        Ok(self.into())
    }
}

impl ApprovalDecision for ApprovalRequirement {
    fn into_decision(self) -> Result<ApprovalRequirement, String> {
        Ok(self)
    }
}

impl<D: ApprovalDecision, E: fmt::Display> ApprovalDecision for Result<D, E> {
    fn into_decision(self) -> Result<ApprovalRequirement, String> {
        self.map_err(|e| e.to_string()).and_then(D::into_decision)
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
/// use tool_core::ApprovalRequirement;
/// assert_eq!(true.into_answer().resolve().await, Ok(ApprovalRequirement::required()));
/// let two = ApprovalRequirement::approvals(2).into_answer();
/// assert_eq!(two.resolve().await, Ok(ApprovalRequirement::approvals(2)));
/// let later = async { Err::<bool, _>("the ledger is down") }.into_answer();
/// assert_eq!(later.resolve().await, Err("the ledger is down".to_owned()));
/// # });
/// ```
pub struct PolicyAnswer(Answer);

enum Answer {
    Ready(Result<ApprovalRequirement, String>),
    Pending(Pin<Box<dyn Future<Output = Result<ApprovalRequirement, String>> + Send>>),
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
    /// A policy that could not tell, and why.
    pub(crate) fn failed(reason: String) -> Self {
        PolicyAnswer(Answer::Ready(Err(reason)))
    }

    /// The decision if the policy gave it already (a sync policy's), else
    /// the answer to [`resolve`](Self::resolve): what a caller with a time
    /// limit asks first, so that a sync policy costs no future.
    ///
    /// ```
    /// use tool_core::{ApprovalPolicyReturn, ApprovalRequirement};
    ///
    /// assert_eq!(false.into_answer().now().ok(), Some(Ok(ApprovalRequirement::NotRequired)));
    /// assert!(async { true }.into_answer().now().is_err(), "an async policy's answer is awaited");
    /// ```
    pub fn now(self) -> Result<Result<ApprovalRequirement, String>, PolicyAnswer> {
        match self.0 {
            Answer::Ready(decision) => Ok(decision),
            pending => Err(PolicyAnswer(pending)),
        }
    }

    /// The decision: what the call needs, or `Err` with why the policy
    /// could not tell (it failed, or its future panicked).
    pub async fn resolve(self) -> Result<ApprovalRequirement, String> {
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
    label = "expected `fn(&T, &RequestContext) -> bool` (or `-> ApprovalRequirement`)",
    note = "a tool with one parameter of type `T` takes `fn(&T, &RequestContext) -> bool` (or a function of the generated input struct, `fn(&XxxToolInput, &RequestContext) -> bool`); it may return an `ApprovalRequirement` instead of `bool`, a `Result` of either, or a `Send + 'static` future of any of these"
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
/// read as a tool whose input type is `I` reads it (`wraps`: the
/// `wrapping` of its
/// `TypedTool::INPUT_PARAMETER`, looked at once, when the tool is built);
/// input that no longer fits the type needs approval.
pub fn typed_policy<I, R, A>(
    input: &Value,
    request_context: &RequestContext,
    policy: impl Fn(&I, &RequestContext) -> R,
    wraps: Option<InputParameter>,
) -> PolicyAnswer
where
    I: DeserializeOwned,
    R: ApprovalPolicyReturn<A>,
{
    match input_if_fits::<I>(input, wraps) {
        Some(input) => policy(&input, request_context).into_answer(),
        None => true.into_answer(),
    }
}

/// Runs a [`LonePolicy`] of a one-parameter tool whose input type is `I`
/// over validated JSON input, as [`typed_policy`].
pub fn lone_policy<I, S, M>(
    input: &Value,
    request_context: &RequestContext,
    policy: &impl LonePolicy<LoneValue<I>, S, M>,
    to_struct: fn(LoneValue<I>) -> S,
    wraps: Option<InputParameter>,
) -> PolicyAnswer
where
    I: LoneInput + DeserializeOwned,
{
    match input_if_fits::<I>(input, wraps) {
        Some(input) => policy.requires_approval(input.into_value(), to_struct, request_context),
        None => true.into_answer(),
    }
}
