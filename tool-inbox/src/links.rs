//! Decision links: a signed, single-use, expiring link that lets one
//! principal approve or decline one version of one call from a message
//! (an email, a chat), through a confirmation page of the inbox
//! ([`DecisionLinks`]).
//!
//! A link is `…/links/<token>`; the token carries the call, the digest of
//! the version it was made for, the principal (with their groups), the
//! action, when it expires and a nonce, signed with the application's key
//! (HMAC-SHA256). Opening it never decides (a mail scanner or a chat's
//! preview opens links): it shows the call as the tool's display
//! transforms show it and a button; the button's `POST` decides, once.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use tool_runtime::{Digest, Principal};

type HmacSha256 = hmac::Hmac<Sha256>;

/// Domain separation: the MAC means "a decision link of the inbox".
const CONTEXT: &[u8] = b"tool-inbox/decision-link/v1";

/// The longest token accepted: a longer one is refused before any work.
pub(crate) const MAX_TOKEN_BYTES: usize = 4096;

/// The shortest key accepted, in bytes: 256 bits.
const MIN_KEY_BYTES: usize = 32;

/// What a decision link does once confirmed.
///
/// ```
/// assert_eq!(tool_inbox::LinkAction::Approve.as_str(), "approve");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkAction {
    /// Approve the call (one grant, when it needs several).
    Approve,
    /// Decline the call.
    Decline,
}

impl LinkAction {
    /// `"approve"` or `"decline"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkAction::Approve => "approve",
            LinkAction::Decline => "decline",
        }
    }
}

/// Why decision links cannot be made as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// The key is shorter than 32 bytes.
    #[error("a decision link key needs at least {MIN_KEY_BYTES} bytes, this one has {0}")]
    ShortKey(usize),
    /// The base URL is not an `http` or `https` URL.
    #[error("the inbox's base URL must start with http:// or https://, not {0:?}")]
    BaseUrl(String),
}

/// What a token says, signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LinkClaims {
    /// The call.
    #[serde(rename = "c")]
    pub(crate) call_id: String,
    /// The digest of the version it was made for.
    #[serde(rename = "d")]
    pub(crate) digest: String,
    /// The principal's id.
    #[serde(rename = "p")]
    pub(crate) principal: String,
    /// The principal's groups.
    #[serde(rename = "g", default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) groups: Vec<String>,
    /// What it does.
    #[serde(rename = "a")]
    pub(crate) action: LinkAction,
    /// When it stops working, in milliseconds since the Unix epoch.
    #[serde(rename = "e")]
    pub(crate) expires_at_ms: u64,
    /// Tells apart two links of the same call, principal and action: each
    /// is used once.
    #[serde(rename = "n")]
    pub(crate) nonce: String,
}

impl LinkClaims {
    /// The principal it was made for.
    pub(crate) fn principal(&self) -> Principal {
        self.groups
            .iter()
            .fold(Principal::new(&self.principal), |principal, group| {
                principal.in_group(group)
            })
    }

    /// Whether it has expired at `now_ms`.
    pub(crate) fn expired(&self, now_ms: u64) -> bool {
        now_ms > self.expires_at_ms
    }
}

/// Makes decision links for the inbox to honor: give the same value to
/// the inbox ([`Inbox::decision_links`](crate::Inbox::decision_links)) and
/// to whatever sends the messages (a notification sink), so that links
/// made anywhere are accepted by every instance holding the key.
///
/// A link works for one principal, one call in the version its digest
/// names, one action, until it expires, once: another principal signed in
/// to the inbox cannot use it, a second use is refused, as are an expired
/// link and a link to a version that changed; every use is in the audit
/// log. Send it only to its principal: it is their credential for that one
/// decision (unless [`require_sign_in`](Self::require_sign_in), which also
/// asks the inbox's own authentication).
///
/// ```
/// use std::time::Duration;
/// use tool_inbox::{DecisionLinks, LinkAction, Principal};
/// use tool_runtime::Digest;
///
/// let links = DecisionLinks::new([7u8; 32], "https://ops.example.com/inbox").unwrap();
/// let alice = Principal::new("alice").in_group("finance");
/// let digest = Digest::new("sha256:0123");
/// let url = links.link("call-1", &digest, &alice, LinkAction::Approve, Duration::from_secs(3600));
/// assert!(url.starts_with("https://ops.example.com/inbox/links/"));
/// assert!(DecisionLinks::new([7u8; 16], "https://x").is_err(), "a short key");
/// ```
#[derive(Clone)]
pub struct DecisionLinks {
    key: Vec<u8>,
    base_url: String,
    require_sign_in: bool,
}

impl std::fmt::Debug for DecisionLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionLinks")
            .field("base_url", &self.base_url)
            .field("require_sign_in", &self.require_sign_in)
            .finish_non_exhaustive()
    }
}

impl DecisionLinks {
    /// Links signed with `key` (at least 32 bytes, secret, the same on
    /// every instance), to the inbox served at `base_url` (where its page
    /// is: `https://ops.example.com/inbox`).
    pub fn new(key: impl AsRef<[u8]>, base_url: impl Into<String>) -> Result<Self, LinkError> {
        let key = key.as_ref().to_vec();
        if key.len() < MIN_KEY_BYTES {
            return Err(LinkError::ShortKey(key.len()));
        }
        let base_url = base_url.into();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(LinkError::BaseUrl(base_url));
        }
        let base_url = base_url.trim_end_matches('/').to_owned();
        Ok(DecisionLinks {
            key,
            base_url,
            require_sign_in: false,
        })
    }

    /// Also asks the inbox's own authentication, as the link's principal,
    /// before a link decides (default: the link is the credential): for an
    /// inbox behind a sign-in proxy ([`TrustedHeader`](crate::TrustedHeader)).
    #[must_use]
    pub fn require_sign_in(mut self, required: bool) -> Self {
        self.require_sign_in = required;
        self
    }

    /// Whether a link decides only for a request the inbox authenticates
    /// as its principal.
    pub(crate) fn sign_in_required(&self) -> bool {
        self.require_sign_in
    }

    /// A link for `principal` to take `action` on call `call_id`, in the
    /// version `digest` names (a notification's `data.digest`), working
    /// for `valid_for` from now.
    pub fn link(
        &self,
        call_id: &str,
        digest: &Digest,
        principal: &Principal,
        action: LinkAction,
        valid_for: Duration,
    ) -> String {
        let claims = LinkClaims {
            call_id: call_id.to_owned(),
            digest: digest.as_str().to_owned(),
            principal: principal.id().to_owned(),
            groups: principal.groups().to_vec(),
            action,
            expires_at_ms: millis(SystemTime::now() + valid_for),
            nonce: nonce(),
        };
        format!("{}/links/{}", self.base_url, self.token(&claims))
    }

    /// The signed token of `claims`.
    pub(crate) fn token(&self, claims: &LinkClaims) -> String {
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).unwrap_or_default());
        let mac = self.mac(&body).finalize().into_bytes();
        format!("{body}.{}", URL_SAFE_NO_PAD.encode(mac))
    }

    /// What `token` says, if this key signed it (whatever its expiry:
    /// the caller tells an expired link apart, to say so).
    pub(crate) fn verify(&self, token: &str) -> Option<LinkClaims> {
        if token.len() > MAX_TOKEN_BYTES {
            return None;
        }
        let (body, mac) = token.split_once('.')?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        self.mac(body).verify_slice(&mac).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).ok()?).ok()
    }

    fn mac(&self, body: &str) -> HmacSha256 {
        // Any key length is valid for HMAC: `new_from_slice` cannot fail.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(CONTEXT);
        mac.update(body.as_bytes());
        mac
    }
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// 128 bits that differ between links (std's per-hasher random keys,
/// mixed with the time and a counter).
fn nonce() -> String {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = SystemTime::now();
    let high = RandomState::new().hash_one((now, count));
    let low = RandomState::new().hash_one((count, now));
    format!("{high:016x}{low:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links() -> DecisionLinks {
        DecisionLinks::new([1u8; 32], "https://inbox.example/").unwrap()
    }

    fn token_of(url: &str) -> &str {
        url.rsplit_once("/links/").unwrap().1
    }

    #[test]
    fn a_link_says_what_it_was_made_for_and_nothing_else_verifies() {
        let alice = Principal::new("alice").in_group("finance");
        let digest = Digest::new("sha256:ab");
        let url = links().link(
            "c1",
            &digest,
            &alice,
            LinkAction::Decline,
            Duration::from_secs(60),
        );
        assert!(url.starts_with("https://inbox.example/links/"), "{url}");
        let claims = links().verify(token_of(&url)).unwrap();
        assert_eq!(
            (claims.call_id.as_str(), claims.digest.as_str()),
            ("c1", "sha256:ab")
        );
        assert_eq!(claims.principal(), alice);
        assert_eq!(claims.action, LinkAction::Decline);
        assert!(!claims.expired(millis(SystemTime::now())));

        // Another key, a changed body, a truncated or oversized token: nothing.
        let other = DecisionLinks::new([2u8; 32], "https://inbox.example").unwrap();
        assert!(other.verify(token_of(&url)).is_none());
        let (body, mac) = token_of(&url).split_once('.').unwrap();
        let mut forged = claims.clone();
        forged.principal = "mallory".into();
        let forged_body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert!(links().verify(&format!("{forged_body}.{mac}")).is_none());
        assert!(links().verify(body).is_none());
        assert!(links().verify(&"a".repeat(MAX_TOKEN_BYTES + 1)).is_none());
        // Two links for the same are two links.
        let again = links().link(
            "c1",
            &digest,
            &alice,
            LinkAction::Decline,
            Duration::from_secs(60),
        );
        assert_ne!(
            links().verify(token_of(&again)).unwrap().nonce,
            claims.nonce
        );
    }

    #[test]
    fn a_short_key_or_a_base_that_is_not_http_is_refused() {
        assert_eq!(
            DecisionLinks::new([0u8; 31], "https://x").unwrap_err(),
            LinkError::ShortKey(31)
        );
        assert!(matches!(
            DecisionLinks::new([0u8; 32], "ftp://x"),
            Err(LinkError::BaseUrl(_))
        ));
    }
}
