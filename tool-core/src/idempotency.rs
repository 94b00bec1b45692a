//! The idempotency key of a call: derived from the tool id and the call id,
//! for the external APIs a tool calls.

use std::fmt;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use sha2::{Digest, Sha256};

/// The idempotency key of one call of one tool: give it to external APIs
/// that take one (payments, email), so that a call run more than once has
/// its effect there once.
///
/// It is derived from the call's identity, never drawn at random: the
/// lowercase hex SHA-256 of the tool id, a `0` byte and the call id (64
/// characters, `[0-9a-f]`, within the limits of such APIs: Stripe takes up
/// to 255). So it is the same on every run of the call: a retry, a
/// recovery after a crash, another instance of the application. A call id
/// the application reuses for a different call gets the same key too (and
/// the API may answer with the first call's result): give each call its
/// own id.
///
/// A tool reads it with [`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key);
/// a host with [`CallContext::idempotency_key`](crate::CallContext::idempotency_key)
/// or [`Admitted::idempotency_key`](crate::Admitted::idempotency_key).
///
/// ```
/// use tool_core::IdempotencyKey;
///
/// let key = IdempotencyKey::derive("charge", "call-1");
/// assert_eq!(key.as_str().len(), 64);
/// assert_eq!(key, IdempotencyKey::derive("charge", "call-1"));
/// assert_ne!(key, IdempotencyKey::derive("charge", "call-2"));
/// assert_ne!(key, IdempotencyKey::derive("refund", "call-1"));
/// // As a header value, a JSON string, a `&str`:
/// let header = format!("Idempotency-Key: {key}");
/// let text: &str = key.as_ref();
/// assert_eq!(serde_json::to_value(&key).unwrap(), text);
/// # let _ = header;
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(Arc<str>);

impl IdempotencyKey {
    /// The key of call `call_id` of tool `tool_id`: the lowercase hex
    /// SHA-256 of `tool_id`, a `0` byte and `call_id`. The `0` byte keeps
    /// pairs apart that would concatenate to the same text (a tool id never
    /// contains it).
    ///
    /// ```
    /// use tool_core::IdempotencyKey;
    ///
    /// let key = IdempotencyKey::derive("send-email", "c1");
    /// assert!(key.as_str().bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    /// assert_ne!(IdempotencyKey::derive("ab", "c"), IdempotencyKey::derive("a", "bc"));
    /// ```
    pub fn derive(tool_id: &str, call_id: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(tool_id.as_bytes());
        hasher.update([0]);
        hasher.update(call_id.as_bytes());
        let digest = hasher.finalize();
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(digest.len() * 2);
        for byte in digest.iter() {
            text.push(char::from(HEX[usize::from(byte >> 4)]));
            text.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        IdempotencyKey(Arc::from(text))
    }

    /// The key as text.
    ///
    /// ```
    /// let key = tool_core::IdempotencyKey::derive("charge", "call-1");
    /// assert_eq!(key.as_str(), key.to_string());
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("IdempotencyKey").field(&&*self.0).finish()
    }
}

impl AsRef<str> for IdempotencyKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// As a string.
impl Serialize for IdempotencyKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}
