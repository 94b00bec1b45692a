//! The digest of a pending item: what a person decided on, named by the
//! server. A person may see a transformed view of a call, so a client
//! cannot compute it; the list returns it and a decision echoes it, so a
//! decision meant for one version of one call cannot land on another.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::store::StoredCall;

/// The digest of one version of a stored call ([`StoredCall::digest`]):
/// what a decision echoes ([`Decider`](crate::Decider)) so that it lands on
/// the version a person was shown. A type of its own, so that a decider's
/// principal and digest cannot be given in each other's place; read one
/// back from text (an HTTP body) with [`Digest::new`].
///
/// ```
/// use tool_runtime::Digest;
///
/// let digest = Digest::new("sha256:0f");
/// assert_eq!(digest.as_str(), "sha256:0f");
/// assert_eq!(digest.to_string(), "sha256:0f");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Digest(String);

impl Digest {
    /// The digest written as `text` (`sha256:` and 64 hex digits, as the
    /// store's listing gives it).
    pub fn new(text: impl Into<String>) -> Self {
        Digest(text.into())
    }

    /// Its text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Digest> for String {
    fn from(digest: Digest) -> Self {
        digest.0
    }
}

impl From<&Digest> for String {
    fn from(digest: &Digest) -> Self {
        digest.0.clone()
    }
}

impl StoredCall {
    /// `sha256:` and the hex SHA-256 of the canonical JSON (keys sorted,
    /// no whitespace) of `{"input": <raw input>, "toolId": ..., "version":
    /// <epoch>}`: it changes when the call's input, its tool or its
    /// version (every claim, so every suspension after a resume) does.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::{PendingCall, PendingKind, StoredCall};
    ///
    /// let call = |input| StoredCall::pending(PendingCall::new("c1", "transfer", PendingKind::Approval, input));
    /// let digest = call(json!({ "to": "bob", "amount": 5 })).digest();
    /// assert!(digest.as_str().starts_with("sha256:") && digest.as_str().len() == 71);
    /// assert_eq!(digest, call(json!({ "amount": 5, "to": "bob" })).digest(), "key order does not count");
    /// assert_ne!(digest, call(json!({ "to": "bob", "amount": 6 })).digest());
    /// ```
    pub fn digest(&self) -> Digest {
        let mut canonical = String::new();
        canonical.push_str("{\"input\":");
        write_canonical(&mut canonical, &self.call.input);
        canonical.push_str(",\"toolId\":");
        write_canonical(
            &mut canonical,
            &Value::from(self.call.head.tool_id.as_str()),
        );
        let _ = write!(canonical, ",\"version\":{}}}", self.epoch);
        let hash = Sha256::digest(canonical.as_bytes());
        let mut digest = String::with_capacity(71);
        digest.push_str("sha256:");
        for byte in hash {
            let _ = write!(digest, "{byte:02x}");
        }
        Digest(digest)
    }
}

/// `value` as JSON with every object's keys in sorted order, whatever
/// order its map keeps (serde_json's `preserve_order` keeps insertion).
fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_canonical(out, value);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let mut out = String::new();
        write_canonical(
            &mut out,
            &json!({ "b": [{ "z": 1, "a": "x\"" }], "a": null }),
        );
        assert_eq!(out, r#"{"a":null,"b":[{"a":"x\"","z":1}]}"#);
    }

    #[test]
    fn the_version_and_the_tool_change_the_digest() {
        let pending = crate::PendingCall::new("c1", "t", crate::PendingKind::Approval, json!({}));
        let first = StoredCall::pending(pending.clone());
        let mut claimed_again = first.clone();
        claimed_again.epoch = 3;
        let mut other_tool = first.clone();
        other_tool.call.head.tool_id = "u".into();
        assert_ne!(first.digest(), claimed_again.digest());
        assert_ne!(first.digest(), other_tool.digest());
    }
}
