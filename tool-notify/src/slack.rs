//! Slack: [`SlackSink`] posts each notification as a Block Kit message to
//! a Slack [incoming webhook](https://api.slack.com/messaging/webhooks).
//!
//! By default a message is the notification's subject and facts, as text.
//! An application whose inbox takes Slack's button presses renders
//! requests with Approve and Decline buttons instead: give the sink the
//! inbox's renderer (`tool_inbox::slack::message`), whose buttons its
//! interactivity endpoint reads ([`SlackSink::render`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use reqwest::{Client, Url};
use serde_json::{Value, json};
use tool_runtime::store::Notification;
use tool_runtime::{NotificationSink, SinkError};

use crate::render::Rendered;
use crate::{NotifyError, post};

/// The most characters of a section's text Slack takes.
const MAX_SECTION_CHARS: usize = 3000;

/// Makes a notification's message: a Block Kit payload (`text` and
/// `blocks`), or `None` for a notification not to post.
type Render = Arc<dyn Fn(&Notification) -> Option<Value> + Send + Sync>;

/// Posts each notification to a Slack incoming webhook as a Block Kit
/// message.
///
/// What Slack's answer means:
///
/// | answer | the notification |
/// |---|---|
/// | 2xx | delivered |
/// | 408, 429 (rate limited), 5xx, no connection, no answer within the [timeout](Self::timeout) | tried again |
/// | 3xx, any other 4xx (`invalid_payload`, `no_service`: the hook was removed) | dead |
///
/// ```
/// use tool_notify::slack::SlackSink;
///
/// let sink = SlackSink::new("slack", "https://hooks.slack.com/services/T000/B000/XXXX").unwrap();
/// # let _ = sink;
/// assert!(SlackSink::new("slack", "not a url").is_err());
/// ```
#[derive(Clone)]
pub struct SlackSink {
    name: String,
    hook: Url,
    client: Client,
    timeout: Duration,
    render: Render,
}

impl SlackSink {
    /// A sink named `name` posting to the incoming webhook at `url`;
    /// refused when the name is empty or the URL is not `http(s)`.
    pub fn new(name: impl Into<String>, url: &str) -> Result<Self, NotifyError> {
        let name = name.into();
        if name.is_empty() {
            return Err(NotifyError::EmptyName);
        }
        // The parser's message does not quote the URL: a hook's URL is its
        // credential.
        let hook = Url::parse(url).map_err(|error| NotifyError::Url {
            reason: format!("does not parse: {error}"),
        })?;
        if !matches!(hook.scheme(), "http" | "https") {
            return Err(NotifyError::Url {
                reason: format!("has the scheme {:?}, not http or https", hook.scheme()),
            });
        }
        Ok(SlackSink {
            name,
            hook,
            client: post::client()?,
            timeout: post::DEFAULT_TIMEOUT,
            render: Arc::new(|notification| Some(message(notification))),
        })
    }

    /// How long one post may take (default 10 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Makes each message with `render` instead of the default text (a
    /// notification it gives `None` for is not posted, and counts as
    /// delivered): for requests with Approve and Decline buttons, the
    /// inbox's `tool_inbox::slack::message`.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_notify::slack::SlackSink;
    ///
    /// let sink = SlackSink::new("slack", "https://hooks.slack.com/services/T000/B000/XXXX")
    ///     .unwrap()
    ///     .render(|n| Some(json!({ "text": format!("{} needs you", n.tool_id) })));
    /// # let _ = sink;
    /// ```
    #[must_use]
    pub fn render(
        mut self,
        render: impl Fn(&Notification) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.render = Arc::new(render);
        self
    }
}

/// The default message of `notification`: its subject as the
/// notification's text, and its facts in one section (as Slack's `mrkdwn`,
/// escaped).
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::{Notification, NotificationKind};
///
/// let notification = Notification::new(NotificationKind::ApprovalRequested, "c1", "refund", json!({ "input": { "note": "<b>" } }));
/// let message = tool_notify::slack::message(&notification);
/// assert_eq!(message["text"], "Approval needed: refund (call c1)");
/// assert!(message["blocks"][0]["text"]["text"].as_str().unwrap().contains("&lt;b&gt;"));
/// ```
pub fn message(notification: &Notification) -> Value {
    let rendered = Rendered::of(notification);
    let facts: String = escaped(&rendered.text)
        .chars()
        .take(MAX_SECTION_CHARS)
        .collect();
    json!({
        "text": rendered.subject,
        "blocks": [{ "type": "section", "text": { "type": "mrkdwn", "text": facts } }],
    })
}

/// `text` as Slack's `mrkdwn` shows it literally: `&`, `<` and `>`
/// escaped, as Slack asks.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl NotificationSink for SlackSink {
    fn name(&self) -> &str {
        &self.name
    }

    async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
        let Some(payload) = (self.render)(notification) else {
            return Ok(());
        };
        let request = self
            .client
            .post(self.hook.clone())
            .timeout(self.timeout)
            .header(CONTENT_TYPE, "application/json")
            .body(payload.to_string());
        match request.send().await {
            Ok(response) => post::answered(response).await,
            Err(error) => Err(post::unanswered(error, self.timeout)),
        }
    }
}

impl fmt::Debug for SlackSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The origin only: the hook's path is its credential.
        f.debug_struct("SlackSink")
            .field("name", &self.name)
            .field("origin", &self.hook.origin().ascii_serialization())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
