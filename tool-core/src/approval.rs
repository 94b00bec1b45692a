//! What an approval policy may return: a decision now, or a future of one;
//! the decision a `bool` or a `Result<bool, E>`. A policy that fails or
//! panics means approval is required; how long a runtime waits for one is
//! its rule (`tool_runtime::RuntimeBuilder::approval_timeout`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::hooks::{Awaits, Returns};
use crate::panic::catch_panic_async;

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
