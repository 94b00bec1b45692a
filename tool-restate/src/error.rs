//! What can go wrong serving tools on Restate or calling them through its
//! ingress.

use tool_runtime::RuntimeError;

/// An error of [`RestateTools`](crate::RestateTools) or
/// [`RestateClient`](crate::RestateClient).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestateError {
    /// The application's runtime does not build.
    #[error("the runtime does not build: {0}")]
    Build(#[from] RuntimeError),
    /// The decision came after another one: the call's outcome, as the
    /// runtime's [`RuntimeError::AlreadyDecided`] carries it.
    #[error("call {call_id:?} was decided already")]
    AlreadyDecided {
        /// The call.
        call_id: String,
        /// Its outcome.
        outcome: Box<tool_runtime::CallOutcome>,
    },
    /// A step could not enter its call's fence (the ingress did not
    /// answer) before running a tool that is not retry-safe: nothing ran,
    /// and Restate takes the step again.
    #[error("call {call_id:?}: its fence could not be entered; the step is taken again")]
    Fence {
        /// The call.
        call_id: String,
    },
    /// The runtime writes notifications, which no outbox keeps here.
    #[error(
        "the runtime writes notifications, which tool-restate keeps no outbox for: build it with notifications(false)"
    )]
    Notifications,
    /// [`RestateClient::waiting`](crate::RestateClient::waiting) needs the
    /// admin API's address ([`RestateClient::admin`](crate::RestateClient::admin)).
    #[error("the Restate admin API's address is not known: give it with RestateClient::admin")]
    NoAdmin,
    /// A call's document in the server's state does not read as one.
    #[error("the document of call {call_id:?} does not read: {error}")]
    Document {
        /// The call.
        call_id: String,
        /// Why.
        #[source]
        error: serde_json::Error,
    },
    /// The ingress could not be reached, or answered with a body that is
    /// not what the handler answers.
    #[error("the Restate ingress: {0}")]
    Http(#[source] reqwest::Error),
    /// A handler refused the request (the status is the handler's
    /// terminal error code: 404 no such call, 403 a principal the rules
    /// refuse, 409 a stale version or a call already decided), or the
    /// ingress did.
    #[error("refused with status {status}: {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// Why, as the handler or the ingress said it.
        message: String,
    },
}
