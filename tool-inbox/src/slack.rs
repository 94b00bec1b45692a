//! Slack's interactivity endpoint (`POST /slack/actions`): a button pressed
//! in a Slack message (an Approve or Decline of a notification, Block Kit)
//! becomes a decision by the principal the application maps the Slack
//! user to ([`SlackActions`]).
//!
//! Every request is checked first against Slack's signature: `v0=` and the
//! hex HMAC-SHA256, under the app's signing secret, of
//! `v0:{X-Slack-Request-Timestamp}:{body}`, with the timestamp within a
//! window of now (5 minutes by default), so that a request cannot be forged
//! nor replayed later. A button's `action_id` is `tool_inbox.approve` or
//! `tool_inbox.decline` ([`APPROVE_ACTION_ID`], [`DECLINE_ACTION_ID`]) and
//! its `value` the JSON `{"callId": ..., "digest": ...}` of the version the
//! message showed ([`button_value`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use hmac::{KeyInit, Mac};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::Sha256;
use tool_runtime::Principal;
use tool_runtime::store::{Notification, NotificationKind};

type HmacSha256 = hmac::Hmac<Sha256>;

/// The `action_id` of a notification's Approve button.
pub const APPROVE_ACTION_ID: &str = "tool_inbox.approve";
/// The `action_id` of a notification's Decline button.
pub const DECLINE_ACTION_ID: &str = "tool_inbox.decline";

/// The `value` of a notification's button about the call `call_id` in the
/// version `digest` names (a notification's `data.digest`): what the
/// endpoint decides on.
///
/// ```
/// let value = tool_inbox::slack::button_value("c1", "sha256:ab");
/// assert_eq!(value, r#"{"callId":"c1","digest":"sha256:ab"}"#);
/// ```
pub fn button_value(call_id: &str, digest: &str) -> String {
    json!({ "callId": call_id, "digest": digest }).to_string()
}

/// The most characters of a Block Kit section's text.
const MAX_SECTION_CHARS: usize = 3000;

/// A notification as a Slack message (Block Kit: `text` and `blocks`)
/// whose buttons this endpoint takes: a request for approval with its
/// arguments as displayed and Approve and Decline buttons naming its
/// version; any other notification as one line. Give it to a Slack sink
/// (`tool_notify::slack::SlackSink::render`).
///
/// ```
/// use serde_json::{Value, json};
/// use tool_runtime::store::{Notification, NotificationKind};
///
/// let data = json!({ "input": { "amount": 1200 }, "digest": "sha256:ab", "requirement": { "principals": 2, "group": "finance" } });
/// let asked = Notification::new(NotificationKind::ApprovalRequested, "c1", "refund", data);
/// let message = tool_inbox::slack::message(&asked).unwrap();
/// let buttons = &message["blocks"][2]["elements"];
/// assert_eq!(buttons[0]["action_id"], tool_inbox::slack::APPROVE_ACTION_ID);
/// assert_eq!(buttons[0]["value"], tool_inbox::slack::button_value("c1", "sha256:ab"));
/// ```
pub fn message(notification: &Notification) -> Option<Value> {
    let (call_id, tool_id, data) = (
        &notification.call_id,
        &notification.tool_id,
        &notification.data,
    );
    let digest = data["digest"].as_str();
    if notification.kind != NotificationKind::ApprovalRequested || digest.is_none() {
        let by = data["by"]
            .as_str()
            .map(|by| format!(" by {by}"))
            .unwrap_or_default();
        let text = format!(
            "{}{by}: {tool_id} (call {call_id})",
            notification.headline()
        );
        return Some(json!({
            "text": text,
            "blocks": [{ "type": "section", "text": { "type": "mrkdwn", "text": escaped(&text) } }],
        }));
    }
    let mut facts = format!(
        "*Approval needed:* {} (call `{}`)",
        escaped(tool_id),
        escaped(call_id)
    );
    if let Some(requester) = data["requester"].as_str() {
        facts.push_str(&format!("\nAsked by {}", escaped(requester)));
    }
    let required = &data["requirement"];
    if let Some(principals) = required["principals"].as_u64().filter(|n| *n > 1) {
        let from = required["group"]
            .as_str()
            .map(|g| format!(" of {}", escaped(g)))
            .unwrap_or_default();
        facts.push_str(&format!("\nNeeds {principals} approvals{from}"));
    }
    let shown = serde_json::to_string_pretty(&data["input"]).unwrap_or_default();
    let input: String = format!("```{}```", escaped(&shown))
        .chars()
        .take(MAX_SECTION_CHARS)
        .collect();
    let value = button_value(call_id, digest.unwrap_or_default());
    let button = |text: &str, action_id: &str, style: &str| json!({ "type": "button", "text": { "type": "plain_text", "text": text }, "action_id": action_id, "value": value, "style": style });
    Some(json!({
        "text": format!("Approval needed: {tool_id} (call {call_id})"),
        "blocks": [
            { "type": "section", "text": { "type": "mrkdwn", "text": facts } },
            { "type": "section", "text": { "type": "mrkdwn", "text": input } },
            { "type": "actions", "elements": [
                button("Approve", APPROVE_ACTION_ID, "primary"),
                button("Decline", DECLINE_ACTION_ID, "danger"),
            ] },
        ],
    }))
}

/// `text` as Slack's `mrkdwn` shows it literally.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The Slack user who pressed a button, as the application maps it to a
/// principal.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct SlackUser {
    /// Slack's id of the user (`U…`).
    pub id: String,
    /// Their Slack user name, when Slack sends it.
    #[serde(default)]
    pub username: Option<String>,
    /// The workspace's id (`T…`), when Slack sends it.
    #[serde(default)]
    pub team_id: Option<String>,
}

/// Maps a Slack user to the principal who decides, or `None` for a user who
/// may not (the press is refused and audited).
type MapUser = Arc<dyn Fn(&SlackUser) -> Option<Principal> + Send + Sync>;

/// Turns Slack button presses into decisions: give it to the inbox
/// ([`Inbox::slack_actions`](crate::Inbox::slack_actions)) and set the Slack
/// app's interactivity Request URL to the inbox's `/slack/actions`.
///
/// ```
/// use tool_inbox::Principal;
/// use tool_inbox::slack::SlackActions;
///
/// let actions = SlackActions::new("8f742231b10e8888abcd99yyyzzz85a5", |user| match user.id.as_str() {
///     "U2CERLKJA" => Some(Principal::new("alice").in_group("finance")),
///     _ => None,
/// });
/// # let _ = actions;
/// ```
#[derive(Clone)]
pub struct SlackActions {
    signing_secret: Vec<u8>,
    map_user: MapUser,
    tolerance: Duration,
}

impl std::fmt::Debug for SlackActions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackActions")
            .field("tolerance", &self.tolerance)
            .finish_non_exhaustive()
    }
}

impl SlackActions {
    /// Requests signed with the Slack app's `signing_secret`; a press by a
    /// user `map_user` maps to a principal decides as them.
    pub fn new(
        signing_secret: impl AsRef<[u8]>,
        map_user: impl Fn(&SlackUser) -> Option<Principal> + Send + Sync + 'static,
    ) -> Self {
        SlackActions {
            signing_secret: signing_secret.as_ref().to_vec(),
            map_user: Arc::new(map_user),
            tolerance: Duration::from_secs(300),
        }
    }

    /// How far a request's timestamp may be from now (default 5 minutes,
    /// as Slack advises).
    #[must_use]
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Whether `body` with `headers` is Slack's, signed now (within the
    /// tolerance of `now`).
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use axum::http::HeaderMap;
    /// use tool_inbox::slack::SlackActions;
    ///
    /// // Slack's documented example ("Verifying requests from Slack").
    /// let actions = SlackActions::new("8f742231b10e8888abcd99yyyzzz85a5", |_| None);
    /// let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-slack-request-timestamp", "1531420618".parse().unwrap());
    /// headers.insert("x-slack-signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503".parse().unwrap());
    /// let then = UNIX_EPOCH + Duration::from_secs(1531420618 + 60);
    /// assert!(actions.verify(&headers, body.as_bytes(), then).is_ok());
    /// assert!(actions.verify(&headers, b"token=forged", then).is_err());
    /// assert!(actions.verify(&headers, body.as_bytes(), then + Duration::from_secs(3600)).is_err(), "a replay, later");
    /// ```
    pub fn verify(&self, headers: &HeaderMap, body: &[u8], now: SystemTime) -> Result<(), String> {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| format!("no {name} header"))
        };
        let timestamp: u64 = header("x-slack-request-timestamp")?
            .parse()
            .map_err(|_| "the timestamp is not a number of seconds".to_owned())?;
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        if now.abs_diff(timestamp) > self.tolerance.as_secs() {
            return Err(
                "the request's timestamp is outside the window: a replay, or a clock far off"
                    .to_owned(),
            );
        }
        let signature = header("x-slack-signature")?
            .strip_prefix("v0=")
            .and_then(unhex)
            .ok_or_else(|| "the signature is not v0=<hex>".to_owned())?;
        mac(&self.signing_secret, timestamp, body)
            .verify_slice(&signature)
            .map_err(|_| "the signature does not match".to_owned())
    }

    /// The principal a press by `user` decides as, if any.
    pub(crate) fn principal(&self, user: &SlackUser) -> Option<Principal> {
        (self.map_user)(user)
    }
}

/// The `X-Slack-Signature` of `body` sent at `timestamp` (seconds since
/// the Unix epoch) under `signing_secret`: what Slack sends, and what a
/// test or a stand-in for Slack signs with.
///
/// ```
/// // Slack's documented example ("Verifying requests from Slack"), shortened.
/// let signature = tool_inbox::slack::signature("8f742231b10e8888abcd99yyyzzz85a5", 1531420618, b"token=x");
/// assert!(signature.starts_with("v0=") && signature.len() == 3 + 64);
/// ```
pub fn signature(signing_secret: impl AsRef<[u8]>, timestamp: u64, body: &[u8]) -> String {
    let mac = mac(signing_secret.as_ref(), timestamp, body)
        .finalize()
        .into_bytes();
    let hex: String = mac.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("v0={hex}")
}

/// Slack's MAC of `body` at `timestamp`: HMAC-SHA256 of `v0:{timestamp}:{body}`.
fn mac(signing_secret: &[u8], timestamp: u64, body: &[u8]) -> HmacSha256 {
    // Any key length is valid for HMAC: `new_from_slice` cannot fail.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(signing_secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    mac
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
