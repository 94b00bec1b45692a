//! Why a sink or a verifier could not be made.

/// A sink or verifier set up so that it could not work, refused when it is
/// made rather than at its first delivery. No variant holds a secret or a
/// URL's text (either may carry a credential): they name what is wrong.
///
/// ```
/// use tool_notify::NotifyError;
/// use tool_notify::webhook::WebhookSink;
///
/// let error = WebhookSink::new("hook", "ftp://example.com/", ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).unwrap_err();
/// assert!(matches!(error, NotifyError::Url { .. }));
/// assert_eq!(error.to_string(), "the webhook URL has the scheme \"ftp\", not http or https");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// The sink's name is empty: the dispatcher routes and records by it.
    #[error("a sink needs a name")]
    EmptyName,
    /// The URL does not parse, or is not `http` or `https`.
    #[error("the webhook URL {reason}")]
    Url {
        /// What is wrong with it.
        reason: String,
    },
    /// No secret was given: nothing would sign or verify.
    #[error("a webhook needs at least one secret")]
    NoSecret,
    /// A secret is not `whsec_` followed by a non-empty base64 key.
    #[error("secret {position} (counting from 1) {reason}")]
    Secret {
        /// Which one, counting from 1.
        position: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be made (its TLS setup failed).
    #[error("the HTTP client could not be made: {reason}")]
    Client {
        /// Why.
        reason: String,
    },
}
