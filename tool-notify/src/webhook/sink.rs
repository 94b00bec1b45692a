//! The sending side: [`WebhookSink`].

use std::fmt;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{Client, RequestBuilder, Url};
use standardwebhooks::{
    HEADER_WEBHOOK_ID, HEADER_WEBHOOK_SIGNATURE, HEADER_WEBHOOK_TIMESTAMP, Webhook,
};
use tool_runtime::store::Notification;
use tool_runtime::{NotificationSink, SinkError};

use super::{secrets, unix_now};
use crate::{NotifyError, post};

use post::DEFAULT_TIMEOUT;

/// POSTs each notification's JSON to one endpoint, signed with every
/// current secret (see [the module](super)).
///
/// What the receiver's answer means:
///
/// | answer | the notification |
/// |---|---|
/// | 2xx | delivered (the body is not read) |
/// | 408, 429, 5xx, no connection, no answer within the [timeout](Self::timeout) | tried again |
/// | 3xx | dead: redirects are not followed, the URL is to be corrected |
/// | any other 4xx | dead: the receiver refuses it as it is |
///
/// A failure's message quotes at most the first KiB of the answer's body,
/// which is all that is ever read of it, and never the URL (it may hold a
/// credential).
///
/// ```
/// use std::time::Duration;
/// use tool_notify::webhook::WebhookSink;
///
/// // The old secret stays until every receiver has the new one.
/// let new = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// let old = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
/// let sink = WebhookSink::new("ops", "https://ops.example.com/hooks", [new, old])
///     .unwrap()
///     .timeout(Duration::from_secs(5));
/// # let _ = sink;
/// ```
pub struct WebhookSink {
    name: String,
    endpoint: Url,
    signers: Vec<Webhook>,
    client: Client,
    timeout: Duration,
}

impl WebhookSink {
    /// A sink named `name` (as the dispatcher routes to it) that POSTs to
    /// `url`, signed with each of `secrets` (`whsec_` and base64); refused
    /// when the name is empty, the URL does not parse or is not `http` or
    /// `https`, there is no secret, or one does not decode.
    ///
    /// ```
    /// use tool_notify::NotifyError;
    /// use tool_notify::webhook::WebhookSink;
    ///
    /// let no_secret: [&str; 0] = [];
    /// let refused = WebhookSink::new("ops", "https://ops.example.com/hooks", no_secret);
    /// assert_eq!(refused.unwrap_err(), NotifyError::NoSecret);
    /// ```
    pub fn new<S: AsRef<str>>(
        name: impl Into<String>,
        url: &str,
        secrets: impl IntoIterator<Item = S>,
    ) -> Result<Self, NotifyError> {
        let name = name.into();
        if name.is_empty() {
            return Err(NotifyError::EmptyName);
        }
        // The parser's message does not quote the URL, which may hold a credential.
        let endpoint = Url::parse(url).map_err(|error| NotifyError::Url {
            reason: format!("does not parse: {error}"),
        })?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(NotifyError::Url {
                reason: format!("has the scheme {:?}, not http or https", endpoint.scheme()),
            });
        }
        let signers = secrets::parse(secrets)?;
        let client = post::client()?;
        Ok(WebhookSink {
            name,
            endpoint,
            signers,
            client,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// How long one request may take, from connecting until its answer
    /// (with the excerpt of an error's body) is read (default 10 s). Keep it
    /// below the dispatcher's [`SinkLimits::timeout`](tool_runtime::SinkLimits)
    /// for this sink, so that a slow receiver fails with this sink's own
    /// message.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_notify::webhook::WebhookSink;
    ///
    /// let sink = WebhookSink::new("ops", "http://127.0.0.1:8787/", ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"])
    ///     .unwrap()
    ///     .timeout(Duration::from_secs(3));
    /// # let _ = sink;
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The request delivering `notification`, signed now; a notification
    /// that cannot be sent as it is refused for good.
    fn signed_request(&self, notification: &Notification) -> Result<RequestBuilder, SinkError> {
        let body = serde_json::to_string(notification).map_err(|error| {
            SinkError::permanent(format!("the notification does not serialize: {error}"))
        })?;
        let id = HeaderValue::from_str(&notification.id)
            .map_err(|_| SinkError::permanent("the notification's id cannot be a header value"))?;
        let timestamp = unix_now();
        let signatures = self
            .signers
            .iter()
            .map(|signer| signer.sign(&notification.id, timestamp, body.as_bytes()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| {
                SinkError::permanent(format!("the notification could not be signed: {error}"))
            })?;
        Ok(self
            .client
            .post(self.endpoint.clone())
            .timeout(self.timeout)
            .header(CONTENT_TYPE, "application/json")
            .header(HEADER_WEBHOOK_ID, id)
            .header(HEADER_WEBHOOK_TIMESTAMP, timestamp)
            .header(HEADER_WEBHOOK_SIGNATURE, signatures.join(" "))
            .body(body))
    }
}

impl NotificationSink for WebhookSink {
    fn name(&self) -> &str {
        &self.name
    }

    async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
        let request = self.signed_request(notification)?;
        match request.send().await {
            Ok(response) => post::answered(response).await,
            Err(error) => Err(post::unanswered(error, self.timeout)),
        }
    }
}

impl fmt::Debug for WebhookSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The origin only: a path or query may hold a credential, as the
        // secrets are.
        f.debug_struct("WebhookSink")
            .field("name", &self.name)
            .field("origin", &self.endpoint.origin().ascii_serialization())
            .field("secrets", &self.signers.len())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
