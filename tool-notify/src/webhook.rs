//! Webhooks signed as the [Standard Webhooks](https://www.standardwebhooks.com/)
//! specification says: the sending side, [`WebhookSink`], and the receiving
//! side, [`Verifier`].
//!
//! A request is a `POST` of the notification's JSON
//! ([`Notification`](tool_runtime::store::Notification), `"type"` its kind)
//! with three headers:
//!
//! | header | value |
//! |---|---|
//! | `webhook-id` | the notification's id, the same on every attempt |
//! | `webhook-timestamp` | when this attempt was signed, in seconds since the Unix epoch |
//! | `webhook-signature` | `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one per secret, separated by spaces |
//!
//! Secrets are `whsec_` followed by the base64 of the key. To rotate one,
//! give the sink the new secret and the old one: it signs with both, so a
//! receiver that knows either verifies; once every receiver has the new
//! one, drop the old one from the sink.
//!
//! ```
//! use tool_notify::webhook::{Verifier, WebhookSink};
//!
//! let (new, old) = ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD");
//! // The sender signs with both while its receivers move to the new secret,
//! let sink = WebhookSink::new("ops", "https://ops.example.com/hooks", [new, old]).unwrap();
//! // and a receiver that still knows only the old one verifies.
//! let verifier = Verifier::new([old]).unwrap();
//! # let _ = (sink, verifier);
//! ```
//!
//! A whole receiver, on axum: the crate's `examples/webhook_receiver.rs`.

mod secrets;
mod sink;
mod verifier;

use std::time::{SystemTime, UNIX_EPOCH};

pub use sink::WebhookSink;
pub use verifier::{Verifier, VerifyError};

/// Now, in seconds since the Unix epoch: a webhook's timestamp (0 on a
/// clock set before 1970).
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        })
}
