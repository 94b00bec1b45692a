//! What the HTTP sinks share: their client, and what a receiver's answer
//! (or its absence) means for the notification.

use std::time::Duration;

use reqwest::header::LOCATION;
use reqwest::redirect::Policy;
use reqwest::{Client, Response, StatusCode};
use tool_runtime::SinkError;

use crate::NotifyError;
use crate::text::one_line;

/// How long a request may take, its answer's start included, by default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of an answer (its body, a `Location`) an error message quotes,
/// and of a body ever read: a receiver's error page may be of any size.
const EXCERPT_BYTES: usize = 1024;

/// A client that follows no redirect (see [`answered`]).
pub(crate) fn client() -> Result<Client, NotifyError> {
    Client::builder()
        .redirect(Policy::none())
        .user_agent(concat!("tool-notify/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| NotifyError::Client {
            reason: causes(&error),
        })
}

/// A request that got no answer within `timeout`, or none at all: worth
/// trying again whatever stopped it, since the receiver may be back by
/// then.
pub(crate) fn unanswered(error: reqwest::Error, timeout: Duration) -> SinkError {
    if error.is_timeout() {
        return SinkError::retry(format!("no answer within {timeout:?}"));
    }
    // Without the URL: it may hold a credential, and the outbox keeps
    // this message.
    SinkError::retry(causes(&error.without_url()))
}

/// What the receiver's answer `response` means for the notification (the
/// table on [`WebhookSink`]).
pub(crate) async fn answered(response: Response) -> Result<(), SinkError> {
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
pub(crate) fn causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        message.push_str(": ");
        message.push_str(&error.to_string());
        cause = error.source();
    }
    message
}
