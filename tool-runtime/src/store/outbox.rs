//! The outbox: notifications of what happened to calls (an approval asked for,
//! granted, decided, expired; a call suspended, resumed; a task ended),
//! written by the store in the same atomic step as the change each reports
//! and delivered from there to people ([`Outbox`]).
//!
//! A crash can neither lose a notification (it is stored with its change) nor
//! send one for a change that did not happen (a write that does not apply
//! stores none of its notifications). Delivery is a dispatcher's
//! ([`Dispatcher`](crate::Dispatcher)): it claims notifications under a lease
//! with a fencing token, as decisions claim calls, and settles each as
//! delivered, to be tried again, or dead.

use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Retention, StoreError};

/// What a [`Notification`] reports.
///
/// Its name on the wire (`serde`, [`as_str`](NotificationKind::as_str)) is
/// dotted, as webhook event types are: `approval.requested`.
///
/// ```
/// use tool_runtime::store::NotificationKind;
///
/// assert_eq!(NotificationKind::ApprovalRequested.as_str(), "approval.requested");
/// assert_eq!(serde_json::to_string(&NotificationKind::TaskFailed).unwrap(), r#""task.failed""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum NotificationKind {
    /// A call waits for approval: its data says what it needs
    /// (`requirement`: how many principals, of which group), until when
    /// (`expiresAtMs`), who asked (`requester`), its `input` as the tool's
    /// display transform shows it, and the `digest` of this version, which
    /// a decision on it names (a decision link's).
    #[serde(rename = "approval.requested")]
    ApprovalRequested,
    /// A principal gave one of the approvals a call needs (`by`, `digest`
    /// of the version granted, `requirement`): every grant counted, the
    /// one that completes the count too, before the decision it makes.
    #[serde(rename = "approval.granted")]
    ApprovalGranted,
    /// A decision took effect: `action` (`approve`, `decline`, `edit`,
    /// `respond`), `by`, and a decline's `reason`.
    #[serde(rename = "call.decided")]
    Decided,
    /// A call waiting for approval expired undecided (declined).
    #[serde(rename = "approval.expired")]
    Expired,
    /// A call suspended and waits for resume data (`payload` as the tool's
    /// display transforms show it, `resumeSchema`).
    #[serde(rename = "call.suspended")]
    Suspended,
    /// A suspended call was resumed (`by`).
    #[serde(rename = "call.resumed")]
    Resumed,
    /// A background task completed.
    #[serde(rename = "task.completed")]
    TaskCompleted,
    /// A background task failed for good (`error`) or was aborted.
    #[serde(rename = "task.failed")]
    TaskFailed,
}

impl NotificationKind {
    /// Every kind, in the order above.
    pub const ALL: [NotificationKind; 8] = [
        NotificationKind::ApprovalRequested,
        NotificationKind::ApprovalGranted,
        NotificationKind::Decided,
        NotificationKind::Expired,
        NotificationKind::Suspended,
        NotificationKind::Resumed,
        NotificationKind::TaskCompleted,
        NotificationKind::TaskFailed,
    ];

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::ApprovalRequested => "approval.requested",
            NotificationKind::ApprovalGranted => "approval.granted",
            NotificationKind::Decided => "call.decided",
            NotificationKind::Expired => "approval.expired",
            NotificationKind::Suspended => "call.suspended",
            NotificationKind::Resumed => "call.resumed",
            NotificationKind::TaskCompleted => "task.completed",
            NotificationKind::TaskFailed => "task.failed",
        }
    }

    /// The kind named `name` on the wire.
    pub fn from_name(name: &str) -> Option<Self> {
        NotificationKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }
}

/// A notification of one change to one call, as the outbox keeps it: what a
/// sink delivers (a webhook's body, an email, a chat message).
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::{Notification, NotificationKind};
///
/// let notification = Notification::new(NotificationKind::Decided, "c1", "refund", json!({ "action": "approve", "by": "alice" }));
/// assert!(notification.id.starts_with("ntf_") && notification.seq == 0);
/// let body = serde_json::to_value(&notification).unwrap();
/// assert_eq!(body["type"], "call.decided");
/// assert_eq!(body["data"]["by"], "alice");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Notification {
    /// Its id, the same on every delivery attempt of it: a receiver drops
    /// a notification whose id it has seen (delivery is at least once).
    pub id: String,
    /// Its place in the outbox, given by the store when written (0
    /// before): notifications of one call are delivered in this order.
    pub seq: u64,
    /// When the change happened, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The call it is about.
    pub call_id: String,
    /// The call's tool.
    pub tool_id: String,
    /// What it reports.
    #[serde(rename = "type")]
    pub kind: NotificationKind,
    /// What the change was, as a JSON object (see each [`NotificationKind`]);
    /// values of the call only as the tool's display transforms show them.
    pub data: Value,
}

impl Notification {
    /// A notification of `kind` about call `call_id` of `tool_id`, now, with a
    /// new id.
    pub fn new(
        kind: NotificationKind,
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        data: Value,
    ) -> Self {
        Notification {
            id: new_notification_id(),
            seq: 0,
            at_ms: super::time::epoch_ms(std::time::SystemTime::now()),
            call_id: call_id.into(),
            tool_id: tool_id.into(),
            kind,
            data,
        }
    }
}

impl Notification {
    /// What happened, in a few words, for a person: a message's subject
    /// starts with it.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::store::{Notification, NotificationKind};
    ///
    /// let declined = Notification::new(NotificationKind::Decided, "c1", "refund", json!({ "action": "decline" }));
    /// assert_eq!(declined.headline(), "Declined");
    /// ```
    pub fn headline(&self) -> &'static str {
        match self.kind {
            NotificationKind::ApprovalRequested => "Approval needed",
            NotificationKind::ApprovalGranted => "Approval granted",
            NotificationKind::Decided => match self.data["action"].as_str() {
                Some("approve") => "Approved",
                Some("decline") => "Declined",
                Some("edit") => "Approved with edits",
                Some("respond") => "Answered",
                _ => "Decided",
            },
            NotificationKind::Expired => "Approval expired",
            NotificationKind::Suspended => "Input needed",
            NotificationKind::Resumed => "Resumed",
            NotificationKind::TaskCompleted => "Task completed",
            NotificationKind::TaskFailed => "Task failed",
        }
    }
}

/// A new notification id: `ntf_` and 128 random bits (std's per-hasher random
/// keys, mixed with the time and a counter: no two alike in a process, and
/// unguessable enough to name a notification, which is no secret).
fn new_notification_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now();
    let high = RandomState::new().hash_one((now, count));
    let low = RandomState::new().hash_one((count, now));
    format!("ntf_{high:016x}{low:016x}")
}

/// Where a notification is in its delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryState {
    /// Waiting to be sent, from its `next_at_ms` on.
    Waiting,
    /// Claimed by one dispatcher, which sends it and settles it before its
    /// lease ends; after that, anyone may claim it again.
    Sending {
        /// The dispatcher's instance.
        owner: String,
        /// When its lease ends, in milliseconds since the Unix epoch.
        lease_expires_at_ms: u64,
    },
    /// Every sink it was routed to took it.
    Delivered {
        /// When, in milliseconds since the Unix epoch.
        at_ms: u64,
    },
    /// Given up: it failed as many times as the dispatcher tries, or a
    /// sink refused it for good. Stays visible ([`Outbox::outbox`]) until
    /// sent again ([`Outbox::redeliver`]) or purged.
    Dead {
        /// When, in milliseconds since the Unix epoch.
        at_ms: u64,
    },
}

impl DeliveryState {
    /// Its name in a store and a query: `waiting`, `sending`, `delivered`,
    /// `dead`.
    pub fn as_str(&self) -> &'static str {
        match self {
            DeliveryState::Waiting => "waiting",
            DeliveryState::Sending { .. } => "sending",
            DeliveryState::Delivered { .. } => "delivered",
            DeliveryState::Dead { .. } => "dead",
        }
    }

    /// Whether it is delivered or dead: nothing more happens to it unless
    /// it is sent again.
    pub fn is_settled(&self) -> bool {
        matches!(
            self,
            DeliveryState::Delivered { .. } | DeliveryState::Dead { .. }
        )
    }
}

/// A notification in the outbox with where its delivery is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OutboxEntry {
    /// The notification.
    pub notification: Notification,
    /// Where its delivery is.
    pub state: DeliveryState,
    /// Delivery attempts started (claims).
    pub attempts: u32,
    /// The fencing token of its latest claim: only that claim settles it.
    pub epoch: u64,
    /// When it may be sent (again), in milliseconds since the Unix epoch.
    pub next_at_ms: u64,
    /// The sinks that took it so far (an attempt again skips them).
    pub delivered_to: Vec<String>,
    /// Why its latest attempt failed.
    pub last_error: Option<String>,
}

impl OutboxEntry {
    /// A notification just written: waiting, due at once.
    pub fn waiting(notification: Notification) -> Self {
        OutboxEntry {
            next_at_ms: notification.at_ms,
            notification,
            state: DeliveryState::Waiting,
            attempts: 0,
            epoch: 0,
            delivered_to: Vec::new(),
            last_error: None,
        }
    }
}

/// How one delivery attempt of a claimed notification ended
/// ([`Outbox::settle_notification`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Every sink it was routed to took it (`delivered_to`: all of them,
    /// this attempt's and earlier ones').
    Delivered {
        /// The sinks that took it.
        delivered_to: Vec<String>,
    },
    /// Some sink failed: try again at `next_at_ms`, skipping the sinks
    /// that took it.
    Retry {
        /// When to try again, in milliseconds since the Unix epoch.
        next_at_ms: u64,
        /// The sinks that took it so far.
        delivered_to: Vec<String>,
        /// Why it failed.
        error: String,
    },
    /// Give up: dead until sent again.
    Dead {
        /// The sinks that took it so far.
        delivered_to: Vec<String>,
        /// Why.
        error: String,
    },
}

/// What a settled delivery writes in a store's row: the state's name,
/// when to try again (a retry), the sinks that took it, why it failed.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) struct SettledRow<'a> {
    pub(crate) state: &'static str,
    pub(crate) next_at_ms: Option<u64>,
    pub(crate) delivered_to: &'a [String],
    pub(crate) error: Option<&'a str>,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl Delivery {
    /// The row this delivery settles a notification as.
    pub(crate) fn row(&self) -> SettledRow<'_> {
        match self {
            Delivery::Delivered { delivered_to } => SettledRow {
                state: "delivered",
                next_at_ms: None,
                delivered_to,
                error: None,
            },
            Delivery::Retry {
                next_at_ms,
                delivered_to,
                error,
            } => SettledRow {
                state: "waiting",
                next_at_ms: Some(*next_at_ms),
                delivered_to,
                error: Some(error),
            },
            Delivery::Dead {
                delivered_to,
                error,
            } => SettledRow {
                state: "dead",
                next_at_ms: None,
                delivered_to,
                error: Some(error),
            },
        }
    }
}

/// Which entries [`Outbox::outbox`] reads: in one state or all, of one
/// call or all, after a `seq`, at most `limit`, in `seq` order.
///
/// ```
/// use tool_runtime::store::OutboxQuery;
///
/// let dead = OutboxQuery::all().state("dead").limit(20);
/// assert_eq!((dead.state.as_deref(), dead.limit), (Some("dead"), 20));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutboxQuery {
    /// Only entries in this state ([`DeliveryState::as_str`]), when set.
    pub state: Option<String>,
    /// Only this call's entries, when set.
    pub call_id: Option<String>,
    /// Only entries with a larger `seq`.
    pub after: u64,
    /// At most this many.
    pub limit: usize,
}

impl OutboxQuery {
    /// Every entry from the start, 1,000 at a time.
    pub fn all() -> Self {
        OutboxQuery {
            state: None,
            call_id: None,
            after: 0,
            limit: 1_000,
        }
    }

    /// Only entries in `state` (`waiting`, `sending`, `delivered`, `dead`).
    #[must_use]
    pub fn state(mut self, state: impl Into<String>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// Only the entries of `call_id`.
    #[must_use]
    pub fn call(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    /// Only the entries after `seq`.
    #[must_use]
    pub fn after(mut self, seq: u64) -> Self {
        self.after = seq;
        self
    }

    /// At most `limit` entries.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Whether `entry` is one this query reads (its place aside).
    pub(crate) fn matches(&self, entry: &OutboxEntry) -> bool {
        entry.notification.seq > self.after
            && self
                .call_id
                .as_ref()
                .is_none_or(|c| *c == entry.notification.call_id)
            && self
                .state
                .as_deref()
                .is_none_or(|s| s == entry.state.as_str())
    }
}

/// The outbox a store keeps: notifications written with the changes they report
/// ([`CallStore::insert_notifying`](crate::store::CallStore::insert_notifying), [`CallStore::decide_notifying`](crate::store::CallStore::decide_notifying),
/// [`CallStore::finish_notifying`](crate::store::CallStore::finish_notifying), [`AuditLog::append_audit_notifying`](crate::store::AuditLog::append_audit_notifying)), and
/// their delivery. A job of its own beside the calls' lifecycle; the
/// stores of this crate do every job, and a runtime's store must
/// ([`IntoStore`](super::IntoStore)).
///
/// The contract (the contract tests run it against every store):
/// - a write's notifications are stored if and only if the write applied, in
///   the same atomic step, each with a `seq` larger than every earlier one;
/// - [`claim_notifications`](Outbox::claim_notifications) claims only notifications that are
///   due (waiting from their `next_at_ms`, or sending under a lease that
///   ran out), never two of one call at once nor one while an earlier
///   notification of its call is unsettled (so a call's notifications go out in
///   order); each claim draws a new fencing token, counts an attempt, and
///   concurrent claimers get different notifications;
/// - [`settle_notification`](Outbox::settle_notification) acts only for the current
///   claim;
/// - [`purge_outbox`](Outbox::purge_outbox) removes only delivered or dead
///   notifications.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use tool_runtime::store::{CallStore, Delivery, MemoryStore, Notification, NotificationKind, Outbox};
/// use tool_runtime::{PendingCall, PendingKind};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let asked = Notification::new(NotificationKind::ApprovalRequested, "c1", "refund", json!({}));
/// let call = PendingCall::new("c1", "refund", PendingKind::Approval, json!({}));
/// store.insert_notifying(call, vec![asked.clone()]).await.unwrap();
///
/// let claimed = store.claim_notifications("dispatcher-1", Duration::from_secs(30), 10).await.unwrap();
/// assert_eq!(claimed.len(), 1);
/// assert_eq!(claimed[0].notification.id, asked.id);
/// let delivered = Delivery::Delivered { delivered_to: vec!["webhook".into()] };
/// assert!(store.settle_notification(claimed[0].notification.seq, claimed[0].epoch, delivered).await.unwrap());
/// assert!(store.claim_notifications("dispatcher-1", Duration::from_secs(30), 10).await.unwrap().is_empty());
/// # });
/// ```
// Adding a method costs this trait and the three stores; when the runtime
// calls it, also one line in the list of `DynOutbox` (erased.rs).
pub trait Outbox: Send + Sync + 'static {
    /// Claims, for `owner` and `lease`, up to `limit` notifications that are due
    /// (the contract above says which), oldest first.
    fn claim_notifications(
        &self,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<OutboxEntry>, StoreError>> + Send;

    /// Settles the claimed notification `seq` as `delivery` says, if its claim is
    /// still the one with fencing token `epoch`; `false` (and nothing
    /// changed) when it is not.
    fn settle_notification(
        &self,
        seq: u64,
        epoch: u64,
        delivery: Delivery,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The entries `query` selects, in `seq` order: dead letters among
    /// them ([`OutboxQuery::state`]).
    fn outbox(
        &self,
        query: OutboxQuery,
    ) -> impl Future<Output = Result<Vec<OutboxEntry>, StoreError>> + Send;

    /// Makes the dead notification `seq` wait to be sent again, now, to the sinks
    /// that did not take it; `false` when it is not dead.
    fn redeliver(&self, seq: u64) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Removes the delivered and dead notifications `retention` no longer keeps:
    /// those settled longer than its age ago, then the oldest beyond its
    /// size. Returns how many went.
    fn purge_outbox(
        &self,
        retention: Retention,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
}

/// A write's notifications with their data as JSON text, checked
/// ([`storable_notifications`]): what a SQL store writes.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) type Noted = (Vec<Notification>, Vec<String>);

/// `notifications` checked as a call's values are, each with its data as JSON
/// text: the one check every store runs before it writes.
pub(crate) fn storable_notifications(
    notifications: &[Notification],
) -> Result<Vec<String>, StoreError> {
    notifications
        .iter()
        .map(|notification| {
            super::check_id(
                format_args!("the call of a notification"),
                &notification.call_id,
            )?;
            super::check_id(format_args!("notification"), &notification.id)?;
            super::check_id(
                format_args!("the tool of a notification"),
                &notification.tool_id,
            )?;
            super::checked_json(
                format_args!(
                    "the notification of call {:?}",
                    tool_core::Excerpt::of(&notification.call_id)
                ),
                &notification.data,
            )
        })
        .collect()
}

/// Milliseconds from now until `lease` ends.
pub(crate) fn lease_end_ms(now_ms: u64, lease: Duration) -> u64 {
    now_ms.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX))
}
