//! The sending side: [`WebhookSink`].

use std::fmt;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderValue, LOCATION};
use reqwest::redirect::Policy;
use reqwest::{Client, RequestBuilder, Response, StatusCode, Url};
use standardwebhooks::{
    HEADER_WEBHOOK_ID, HEADER_WEBHOOK_SIGNATURE, HEADER_WEBHOOK_TIMESTAMP, Webhook,
};
use tool_runtime::store::Notification;
use tool_runtime::{NotificationSink, SinkError};

use super::{secrets, unix_now};
use crate::NotifyError;
use crate::text::one_line;

/// How long a request may take, its answer's start included, by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of an answer (its body, a `Location`) an error message quotes,
/// and of a body ever read: a receiver's error page may be of any size.
const EXCERPT_BYTES: usize = 1024;

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
        let client = Client::builder()
            .redirect(Policy::none())
            .user_agent(concat!("tool-notify/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| NotifyError::Client {
                reason: causes(&error),
            })?;
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

    /// A request that got no answer: worth trying again whatever stopped
    /// it, since the receiver may be back by then.
    fn unanswered(&self, error: reqwest::Error) -> SinkError {
        if error.is_timeout() {
            return SinkError::retry(format!("no answer within {:?}", self.timeout));
        }
        // Without the URL: it may hold a credential, and the outbox keeps
        // this message.
        SinkError::retry(causes(&error.without_url()))
    }
}

impl NotificationSink for WebhookSink {
    fn name(&self) -> &str {
        &self.name
    }

    async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
        let request = self.signed_request(notification)?;
        match request.send().await {
            Ok(response) => answered(response).await,
            Err(error) => Err(self.unanswered(error)),
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

/// What the receiver's answer `response` means for the notification (the
/// table on [`WebhookSink`]).
async fn answered(response: Response) -> Result<(), SinkError> {
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    if status.is_redirection() {
        // Following one would send the signed notification wherever the
        // receiver points; a moved endpoint is a configuration to correct.
        let location = response
            .headers()
            .get(LOCATION)
            .map(|to| format!(" to {}", excerpt(to.as_bytes())))
            .unwrap_or_default();
        return Err(SinkError::permanent(format!(
            "HTTP {status}{location}: redirects are not followed"
        )));
    }
    let passing = matches!(
        status,
        StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS
    ) || status.is_server_error();
    let reason = format!("HTTP {status}{}", body_excerpt(response).await);
    Err(if passing {
        SinkError::retry(reason)
    } else {
        SinkError::permanent(reason)
    })
}

/// The start of `response`'s body as `": <text>"` (nothing for an empty
/// one): at most [`EXCERPT_BYTES`] kept, and no more chunks read once
/// they are there. Dropping the response then closes its connection
/// rather than reading the rest.
async fn body_excerpt(mut response: Response) -> String {
    let mut start = Vec::new();
    while start.len() < EXCERPT_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = EXCERPT_BYTES - start.len();
                start.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            // The end, or a body cut short: what came is the excerpt.
            Ok(None) | Err(_) => break,
        }
    }
    let text = excerpt(&start);
    if text.is_empty() {
        text
    } else {
        format!(": {text}")
    }
}

/// The first [`EXCERPT_BYTES`] of `bytes` as one line of text, for a
/// message (invalid UTF-8 replaced).
fn excerpt(bytes: &[u8]) -> String {
    one_line(&String::from_utf8_lossy(
        &bytes[..bytes.len().min(EXCERPT_BYTES)],
    ))
}

/// `error` and its causes, as one message: reqwest's own names the step
/// only ("error sending request"), its causes what went wrong.
fn causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        message.push_str(": ");
        message.push_str(&error.to_string());
        cause = error.source();
    }
    message
}
