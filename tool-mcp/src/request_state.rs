//! The `requestState` of an `input_required` result: the pending call's id,
//! when it stops being accepted, and a MAC over both and the tool, so that
//! any server holding the key (this one after a restart, another instance
//! sharing the store) accepts the client's retry, and nobody can forge one
//! for a call the server did not ask about.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

/// Domain separation: the MAC means "an input_required state", nothing else.
const CONTEXT: &[u8] = b"tool-runtime/mcp/input-required/v1";

/// Issues and checks request states under one key.
#[derive(Clone)]
pub(crate) struct RequestStates {
    key: Vec<u8>,
    lifetime: Duration,
}

impl std::fmt::Debug for RequestStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStates")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl RequestStates {
    pub(crate) fn new(key: Vec<u8>, lifetime: Duration) -> Self {
        RequestStates { key, lifetime }
    }

    /// A key nobody else has (two random UUIDs' bytes): states it signs are
    /// accepted by this server only.
    pub(crate) fn random_key() -> Vec<u8> {
        let mut key = uuid::Uuid::new_v4().as_bytes().to_vec();
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        key
    }

    /// The state of an `input_required` result about `call_id` of `tool_id`.
    pub(crate) fn issue(&self, tool_id: &str, call_id: &str) -> String {
        let expires = millis(SystemTime::now() + self.lifetime);
        let mac = self.mac(tool_id, call_id, expires).finalize().into_bytes();
        format!("{call_id}.{expires}.{}", hex(&mac))
    }

    /// The call id of `state` if this key issued it for `tool_id` and it has
    /// not expired.
    pub(crate) fn verify(&self, tool_id: &str, state: &str) -> Option<String> {
        let mut parts = state.rsplitn(3, '.');
        let (mac, expires, call_id) = (parts.next()?, parts.next()?, parts.next()?);
        let expires: u64 = expires.parse().ok()?;
        let mac = unhex(mac)?;
        self.mac(tool_id, call_id, expires)
            .verify_slice(&mac)
            .ok()?;
        (millis(SystemTime::now()) <= expires).then(|| call_id.to_owned())
    }

    fn mac(&self, tool_id: &str, call_id: &str, expires: u64) -> HmacSha256 {
        // Any key length is valid for HMAC: `new_from_slice` cannot fail here.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        for part in [CONTEXT, tool_id.as_bytes(), call_id.as_bytes()] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.update(&expires.to_be_bytes());
        mac
    }
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_accepted_by_its_key_for_its_tool_until_it_expires() {
        let states = RequestStates::new(b"shared secret".to_vec(), Duration::from_secs(60));
        let state = states.issue("delete-file", "mcp-abc");
        assert_eq!(
            states.verify("delete-file", &state).as_deref(),
            Some("mcp-abc")
        );
        // Another instance with the same key (or this one after a restart).
        let other = RequestStates::new(b"shared secret".to_vec(), Duration::from_secs(1));
        assert_eq!(
            other.verify("delete-file", &state).as_deref(),
            Some("mcp-abc")
        );

        assert_eq!(
            states.verify("other-tool", &state),
            None,
            "bound to its tool"
        );
        let stranger = RequestStates::new(RequestStates::random_key(), Duration::from_secs(60));
        assert_eq!(
            stranger.verify("delete-file", &state),
            None,
            "bound to its key"
        );
        let forged = state.replacen("mcp-abc", "mcp-xyz", 1);
        assert_eq!(
            states.verify("delete-file", &forged),
            None,
            "bound to its call"
        );
        for garbage in ["", "mcp-abc", "a.b.c", "mcp-abc.1.zz", "mcp-abc.x.00"] {
            assert_eq!(states.verify("delete-file", garbage), None, "{garbage:?}");
        }

        let expired = RequestStates::new(b"shared secret".to_vec(), Duration::ZERO);
        let state = expired.issue("delete-file", "mcp-abc");
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(expired.verify("delete-file", &state), None, "expired");
    }
}
