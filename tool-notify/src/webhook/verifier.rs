//! The receiving side: [`Verifier`].

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use http::HeaderMap;
use standardwebhooks::{
    HEADER_WEBHOOK_ID, HEADER_WEBHOOK_SIGNATURE, HEADER_WEBHOOK_TIMESTAMP, Webhook, WebhookError,
};
use tool_runtime::store::Notification;

use super::{secrets, unix_now};
use crate::NotifyError;

/// The widest window a timestamp may be in: the standardwebhooks crate's
/// verification has its window fixed at 5 minutes, so a wider one cannot
/// be had from it; [`Verifier::tolerance`] narrows it.
const MAX_TOLERANCE_SECS: u64 = 5 * 60;

/// Ids remembered at most, by default.
const DEFAULT_CAPACITY: usize = 100_000;

/// The longest `webhook-id` taken, so that remembering ids stays bounded
/// by their count (a notification's id is 36 bytes).
const MAX_ID_BYTES: usize = 256;

/// Verifies a webhook request as a receiver gets it, and returns the
/// notification it carries: its signature against the receiver's secrets
/// (any one matching), its timestamp within a window of now (default 5
/// minutes either way), and its id not seen before within that window.
///
/// An id is remembered from the request that verified until its timestamp
/// leaves the window (after that, the same request is refused as stale),
/// at most [`capacity`](Self::capacity) ids at once. A sender retries
/// with the same id, so a receiver that fails after verifying
/// [`forget`](Self::forget)s the id to take the retry.
///
/// ```
/// use http::HeaderMap;
/// use standardwebhooks::Webhook;
/// use tool_notify::webhook::{Verifier, VerifyError};
///
/// let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// let verifier = Verifier::new([secret]).unwrap();
///
/// // A request as a WebhookSink sends it.
/// let body = br#"{"id":"ntf_1","seq":1,"atMs":0,"callId":"c1","toolId":"refund","type":"approval.requested","data":{}}"#;
/// let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
/// let signature = Webhook::new(secret).unwrap().sign("ntf_1", now, body).unwrap();
/// let mut headers = HeaderMap::new();
/// headers.insert("webhook-id", "ntf_1".parse().unwrap());
/// headers.insert("webhook-timestamp", now.into());
/// headers.insert("webhook-signature", signature.parse().unwrap());
///
/// let notification = verifier.verify(&headers, body).unwrap();
/// assert_eq!(notification.call_id, "c1");
/// assert!(matches!(verifier.verify(&headers, body), Err(VerifyError::Replayed { .. })));
/// ```
pub struct Verifier {
    signers: Vec<Webhook>,
    tolerance_secs: u64,
    capacity: usize,
    seen: Mutex<SeenIds>,
}

impl Verifier {
    /// A verifier that takes a signature by any of `secrets` (`whsec_` and
    /// base64): during a rotation, the old and the new one. Refused when
    /// there is no secret or one does not decode.
    ///
    /// ```
    /// use tool_notify::NotifyError;
    /// use tool_notify::webhook::Verifier;
    ///
    /// let refused = Verifier::new(["hunter2"]).err().unwrap();
    /// assert!(matches!(refused, NotifyError::Secret { position: 1, .. }));
    /// ```
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Result<Self, NotifyError> {
        Ok(Verifier {
            signers: secrets::parse(secrets)?,
            tolerance_secs: MAX_TOLERANCE_SECS,
            capacity: DEFAULT_CAPACITY,
            seen: Mutex::new(SeenIds::default()),
        })
    }

    /// How far from now a request's timestamp may be, either way, in whole
    /// seconds: at most 5 minutes (longer is cut to 5 minutes), the
    /// window the standardwebhooks crate checks too.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_notify::webhook::Verifier;
    ///
    /// let verifier = Verifier::new(["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"])
    ///     .unwrap()
    ///     .tolerance(Duration::from_secs(60));
    /// # let _ = verifier;
    /// ```
    #[must_use]
    pub fn tolerance(mut self, window: Duration) -> Self {
        self.tolerance_secs = window.as_secs().min(MAX_TOLERANCE_SECS);
        self
    }

    /// How many ids it remembers at most (default 100,000): a request
    /// arriving when that many are within the window is refused
    /// ([`VerifyError::Busy`]) rather than an id forgotten early, which
    /// would let its replay through.
    ///
    /// ```
    /// use tool_notify::webhook::Verifier;
    ///
    /// let verifier = Verifier::new(["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).unwrap().capacity(10_000);
    /// # let _ = verifier;
    /// ```
    #[must_use]
    pub fn capacity(mut self, ids: usize) -> Self {
        self.capacity = ids;
        self
    }

    /// The notification in the request with `headers` and `body`, or why
    /// it is refused. Checks, in order: the headers are there, the
    /// timestamp is within the window, a signature matches a secret, the
    /// body is a notification with the header's id, and the id was not
    /// seen within the window (it is remembered from now on).
    ///
    /// ```
    /// use http::HeaderMap;
    /// use tool_notify::webhook::{Verifier, VerifyError};
    ///
    /// let verifier = Verifier::new(["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).unwrap();
    /// let refused = verifier.verify(&HeaderMap::new(), b"{}").unwrap_err();
    /// assert_eq!(refused, VerifyError::Header { name: "webhook-id", problem: "is missing" });
    /// ```
    pub fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<Notification, VerifyError> {
        let id = header(headers, HEADER_WEBHOOK_ID)?;
        if id.len() > MAX_ID_BYTES {
            return Err(VerifyError::Header {
                name: HEADER_WEBHOOK_ID,
                problem: "is longer than 256 bytes",
            });
        }
        let timestamp: i64 = header(headers, HEADER_WEBHOOK_TIMESTAMP)?
            .parse()
            .map_err(|_| VerifyError::Header {
                name: HEADER_WEBHOOK_TIMESTAMP,
                problem: "is not a whole number of seconds",
            })?;
        header(headers, HEADER_WEBHOOK_SIGNATURE)?;
        let now = unix_now();
        let age_secs = now.saturating_sub(timestamp);
        if age_secs.unsigned_abs() > self.tolerance_secs {
            return Err(self.stale(age_secs));
        }
        self.check_signature(headers, body, age_secs)?;
        let notification: Notification =
            serde_json::from_slice(body).map_err(|error| VerifyError::Body {
                reason: error.to_string(),
            })?;
        if notification.id != id {
            return Err(VerifyError::Body {
                reason: "its id is not the webhook-id header's".to_owned(),
            });
        }
        let remembered_until = timestamp.saturating_add_unsigned(self.tolerance_secs);
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remember(id, remembered_until, now, self.capacity)?;
        Ok(notification)
    }

    /// Forgets the id `id` was verified with, so that the sender's next
    /// attempt of it is taken: what a receiver does when it failed to act
    /// on a notification it verified, and answers with an error.
    ///
    /// ```
    /// use tool_notify::webhook::Verifier;
    ///
    /// let verifier = Verifier::new(["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).unwrap();
    /// verifier.forget("ntf_never_seen"); // nothing to forget: nothing happens
    /// ```
    pub fn forget(&self, id: &str) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .forget(id);
    }

    /// A signature of the request by any of the secrets, checked by the
    /// standardwebhooks crate (which checks the timestamp's window again,
    /// against its own fixed 5 minutes).
    fn check_signature(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        age_secs: i64,
    ) -> Result<(), VerifyError> {
        let mut refusal = VerifyError::Signature;
        for signer in &self.signers {
            match signer.verify(body, headers) {
                Ok(()) => return Ok(()),
                Err(WebhookError::TimestampTooOldError | WebhookError::FutureTimestampError) => {
                    refusal = self.stale(age_secs);
                }
                Err(WebhookError::InvalidPayload) => {
                    refusal = VerifyError::Body {
                        reason: "it is not UTF-8".to_owned(),
                    };
                }
                // The headers were read above: what is left is a signature
                // that matches no secret, or is malformed.
                Err(_) => {}
            }
        }
        Err(refusal)
    }

    fn stale(&self, age_secs: i64) -> VerifyError {
        VerifyError::Stale {
            age_secs,
            tolerance_secs: self.tolerance_secs,
        }
    }
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("secrets", &self.signers.len())
            .field("tolerance_secs", &self.tolerance_secs)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// The text of header `name`.
fn header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, VerifyError> {
    let value = headers.get(name).ok_or(VerifyError::Header {
        name,
        problem: "is missing",
    })?;
    value.to_str().map_err(|_| VerifyError::Header {
        name,
        problem: "is not visible ASCII",
    })
}

/// Why [`Verifier::verify`] refused a request. A receiver answers a
/// [`Replayed`](Self::Replayed) with a 2xx without acting again (a
/// sender's retry after a lost answer looks the same), a
/// [`Busy`](Self::Busy) with a 503 (the sender tries again later), and
/// the others with a 4xx (the sender gives up).
///
/// ```
/// use tool_notify::webhook::VerifyError;
///
/// let stale = VerifyError::Stale { age_secs: 600, tolerance_secs: 300 };
/// assert_eq!(stale.to_string(), "the timestamp is 600 s old, outside the 300 s window either way");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// A header is missing or malformed.
    #[error("header {name} {problem}")]
    Header {
        /// The header.
        name: &'static str,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// The timestamp is outside the window.
    #[error("the timestamp is {age_secs} s old, outside the {tolerance_secs} s window either way")]
    Stale {
        /// Now less the timestamp, in seconds: negative for one ahead.
        age_secs: i64,
        /// The window, in seconds either way of now.
        tolerance_secs: u64,
    },
    /// No signature matches one of the secrets.
    #[error("no signature matches a secret")]
    Signature,
    /// The body, signed, is not a notification with the header's id.
    #[error("the body is not a notification: {reason}")]
    Body {
        /// Why.
        reason: String,
    },
    /// A request with this id verified already, within the window.
    #[error("notification {id} was received already")]
    Replayed {
        /// The id.
        id: String,
    },
    /// As many ids as the verifier remembers are within the window.
    #[error(
        "{capacity} notifications were received within the window: no more until some leave it"
    )]
    Busy {
        /// The verifier's capacity.
        capacity: usize,
    },
}

/// The ids of requests verified, each until its timestamp leaves the
/// window: by id, to refuse a replay, and by that time, to forget them.
#[derive(Default)]
struct SeenIds {
    until_by_id: HashMap<String, i64>,
    by_until: BTreeSet<(i64, String)>,
}

impl SeenIds {
    /// Remembers `id` until `until` (seconds since the epoch), now `now`;
    /// refused when it is remembered already, or `capacity` ids are.
    fn remember(
        &mut self,
        id: &str,
        until: i64,
        now: i64,
        capacity: usize,
    ) -> Result<(), VerifyError> {
        while self.by_until.first().is_some_and(|(until, _)| *until < now) {
            if let Some((_, gone)) = self.by_until.pop_first() {
                self.until_by_id.remove(&gone);
            }
        }
        if self.until_by_id.contains_key(id) {
            return Err(VerifyError::Replayed { id: id.to_owned() });
        }
        if self.until_by_id.len() >= capacity {
            return Err(VerifyError::Busy { capacity });
        }
        self.until_by_id.insert(id.to_owned(), until);
        self.by_until.insert((until, id.to_owned()));
        Ok(())
    }

    fn forget(&mut self, id: &str) {
        if let Some(until) = self.until_by_id.remove(id) {
            self.by_until.remove(&(until, id.to_owned()));
        }
    }
}
