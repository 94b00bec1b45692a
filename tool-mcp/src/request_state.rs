//! The `requestState` of an `input_required` result, in one of two kinds,
//! each with when it stops being accepted and a MAC over it and the tool,
//! so that any server holding the key (this one after a restart, another
//! instance sharing the store) accepts the client's retry, and nobody can
//! forge or alter one:
//!
//! - a pending call's id (approval, suspension): the call waits in the
//!   store, and the retry's answer decides it;
//! - the answers a running tool's questions got in the rounds so far
//!   (`ctx.mcp()` on 2026-07-28): nothing waits; the retry runs the tool
//!   again with them (`input_rounds.rs`).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

/// Domain separation: the MAC means "an input_required state", nothing else.
const CONTEXT: &[u8] = b"tool-runtime/mcp/input-required/v1";

/// Domain separation of an answers state: never taken for a call's.
const ANSWERS_CONTEXT: &[u8] = b"tool-runtime/mcp/input-rounds/v1";

/// How an answers state begins (a call id never has this form's MAC).
const ANSWERS_PREFIX: &str = "answers";

/// The most bytes of answers (as JSON) one state carries: the client sends
/// the state back with each retry, so it stays small.
pub(crate) const MAX_ANSWERS_BYTES: usize = 64 * 1024;

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

    /// The state of an `input_required` result of a tool's own questions:
    /// the `answers` its earlier rounds got, for `tool_id`. `Err` says why
    /// they cannot be carried (larger than [`MAX_ANSWERS_BYTES`]).
    pub(crate) fn issue_answers(
        &self,
        tool_id: &str,
        answers: &BTreeMap<String, Value>,
    ) -> Result<String, String> {
        let json = serde_json::to_vec(answers).map_err(|e| e.to_string())?;
        if json.len() > MAX_ANSWERS_BYTES {
            return Err(format!(
                "the answers gathered so far take {} bytes as JSON, more than the {MAX_ANSWERS_BYTES} a requestState carries",
                json.len()
            ));
        }
        let body = hex(&json);
        let expires = millis(SystemTime::now() + self.lifetime);
        let mac = self
            .mac_of(ANSWERS_CONTEXT, tool_id, &body, expires)
            .finalize()
            .into_bytes();
        Ok(format!("{ANSWERS_PREFIX}.{body}.{expires}.{}", hex(&mac)))
    }

    /// The answers of `state` if this key issued it for `tool_id` and it
    /// has not expired.
    pub(crate) fn verify_answers(
        &self,
        tool_id: &str,
        state: &str,
    ) -> Option<BTreeMap<String, Value>> {
        let mut parts = state.split('.');
        let (prefix, body, expires, mac) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if prefix != ANSWERS_PREFIX || parts.next().is_some() {
            return None;
        }
        let expires: u64 = expires.parse().ok()?;
        let mac = unhex(mac)?;
        self.mac_of(ANSWERS_CONTEXT, tool_id, body, expires)
            .verify_slice(&mac)
            .ok()?;
        if millis(SystemTime::now()) > expires {
            return None;
        }
        serde_json::from_slice(&unhex(body)?).ok()
    }

    fn mac(&self, tool_id: &str, call_id: &str, expires: u64) -> HmacSha256 {
        self.mac_of(CONTEXT, tool_id, call_id, expires)
    }

    fn mac_of(&self, context: &[u8], tool_id: &str, body: &str, expires: u64) -> HmacSha256 {
        // Any key length is valid for HMAC: `new_from_slice` cannot fail here.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        for part in [context, tool_id.as_bytes(), body.as_bytes()] {
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

    #[test]
    fn an_answers_state_carries_its_answers_for_its_tool_and_is_never_a_calls() {
        let states = RequestStates::new(b"shared secret".to_vec(), Duration::from_secs(60));
        let answers = BTreeMap::from([(
            "user_name".to_owned(),
            serde_json::json!({ "action": "accept", "content": { "name": "Ada" } }),
        )]);
        let state = states.issue_answers("greet", &answers).unwrap();
        assert_eq!(
            states.verify_answers("greet", &state),
            Some(answers.clone())
        );
        assert_eq!(
            states.verify_answers("other", &state),
            None,
            "bound to its tool"
        );
        assert_eq!(states.verify("greet", &state), None, "not a call's state");
        let call = states.issue("greet", "mcp-abc");
        assert_eq!(
            states.verify_answers("greet", &call),
            None,
            "not an answers state"
        );
        for tampered in [
            format!("{state}-TAMPERED"),
            state.replacen("answers.7b", "answers.7c", 1),
            "answers.7b7d.1.00".to_owned(),
            "answers".to_owned(),
        ] {
            assert_eq!(
                states.verify_answers("greet", &tampered),
                None,
                "{tampered:?}"
            );
        }
        let huge = BTreeMap::from([(
            "big".to_owned(),
            serde_json::json!("x".repeat(MAX_ANSWERS_BYTES)),
        )]);
        let refused = states.issue_answers("greet", &huge).unwrap_err();
        assert!(refused.contains("more than the 65536"), "{refused}");
    }
}
