//! The audit log: an append-only record of what was asked of people and
//! what they decided, kept by the store beside the calls ([`AuditLog`]).
//! Entries are appended, never updated nor purged with the calls they are
//! about (a retention of their own bounds them: [`AuditRetention`]), and
//! carry values only as the tool's display transforms show them.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(doc)]
use super::CallStore;
use super::StoreError;

/// The audit log a store keeps: what the runtime asked of people (a call
/// that waits for an approval, resume data or an output) and what they
/// decided or tried to, appended by the runtime after the step it records
/// ([`CallInbox::audit`](crate::CallInbox::audit) reads it). A job of its own
/// beside the calls' lifecycle ([`CallStore`]); the stores of this crate
/// do every job, and a runtime's store must
/// ([`IntoStore`](super::IntoStore)).
///
/// The contract (the contract tests run it against every store):
/// - the log is appended to, never updated, and never purged with the
///   calls it is about ([`CallStore::purge_settled`] leaves it whole);
///   [`purge_audit`](AuditLog::purge_audit) removes the entries its
///   retention no longer keeps, never those of a call still pending;
/// - every entry appended gets a `seq` larger than every earlier one, also
///   of entries appended at once from several runtimes;
/// - an entry whose call id or detail a call could not have (see
///   [`MAX_ID_BYTES`](super::MAX_ID_BYTES),
///   [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH)) is refused, and nothing
///   is appended.
///
/// ```
/// use tool_runtime::store::{AuditEntry, AuditKind, AuditLog, AuditQuery, MemoryStore};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let asked = store.append_audit(AuditEntry::new(AuditKind::Requested, "c1", "transfer", "approval")).await.unwrap();
/// let decided = AuditEntry::new(AuditKind::Decided, "c1", "transfer", "approve").principal("alice");
/// let seq = store.append_audit(decided).await.unwrap();
/// assert!(seq > asked);
/// let log = store.audit(AuditQuery::all().call("c1")).await.unwrap();
/// assert_eq!(log.iter().map(|e| e.kind).collect::<Vec<_>>(), [AuditKind::Requested, AuditKind::Decided]);
/// # });
/// ```
// Adding a method costs this trait and the three stores; when the runtime
// calls it, also one line in the list of `DynAuditLog` (erased.rs).
pub trait AuditLog: Send + Sync + 'static {
    /// Appends `entry` to the audit log, which is never updated and never
    /// purged; returns the `seq` it was given (larger than every earlier
    /// one). Its call id is checked as a call's is, its detail as JSON is.
    fn append_audit(
        &self,
        entry: AuditEntry,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        self.append_audit_notifying(entry, Vec::new())
    }

    /// [`append_audit`](Self::append_audit), and `notifications` into the outbox
    /// ([`Outbox`](super::Outbox)) in the same atomic step: all of them if
    /// the entry is appended, none if it is refused.
    fn append_audit_notifying(
        &self,
        entry: AuditEntry,
        notifications: Vec<super::Notification>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// The audit log's entries `query` selects, in `seq` order.
    fn audit(
        &self,
        query: AuditQuery,
    ) -> impl Future<Output = Result<Vec<AuditEntry>, StoreError>> + Send;

    /// The `seq` of the newest entry (0 while the log is empty): where a
    /// reader that follows the log from now on starts
    /// ([`AuditQuery::after`]), without reading what came before.
    fn audit_end(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Removes the entries `retention` no longer keeps: those older than
    /// its age, then the oldest beyond its size; never an entry of a call
    /// still pending, whose requests, grants and dismissals count for what
    /// comes next. Returns how many went. Later entries keep their `seq`,
    /// and new ones still get larger ones.
    fn purge_audit(
        &self,
        retention: AuditRetention,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
}

/// What a store keeps of the audit log ([`AuditLog::purge_audit`]): for
/// how long, and how many entries at most. A runtime purges with its own
/// ([`RuntimeBuilder::audit_retention`](crate::RuntimeBuilder::audit_retention),
/// [`RuntimeBuilder::audit_limit`](crate::RuntimeBuilder::audit_limit)),
/// as it purges settled calls; export the log first where it must be kept
/// longer ([`AuditEntry::to_json_line`]).
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use tool_runtime::store::{AuditEntry, AuditKind, AuditLog, AuditQuery, AuditRetention, CallStore, MemoryStore};
/// use tool_runtime::{PendingCall, PendingKind};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// store.insert(PendingCall::new("waits", "t", PendingKind::Approval, json!({}))).await.unwrap();
/// for call_id in ["waits", "gone", "gone"] {
///     store.append_audit(AuditEntry::new(AuditKind::Noted, call_id, "t", "note")).await.unwrap();
/// }
/// // One entry at most: the oldest of "gone" goes, then the other; the
/// // pending call's stays.
/// assert_eq!(store.purge_audit(AuditRetention::new(Duration::from_secs(3600), 1)).await.unwrap(), 2);
/// let kept = store.audit(AuditQuery::all()).await.unwrap();
/// assert_eq!(kept.iter().map(|e| e.call_id.as_str()).collect::<Vec<_>>(), ["waits"]);
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditRetention {
    /// How long an entry is kept after it was appended (by its `at_ms`).
    pub age: Duration,
    /// How many entries are kept at most, the newest.
    pub max_entries: usize,
}

impl AuditRetention {
    /// Entries kept for `age`, `max_entries` of them at most.
    pub fn new(age: Duration, max_entries: usize) -> Self {
        AuditRetention { age, max_entries }
    }

    /// The `at_ms` before which entries are too old, now.
    pub(crate) fn cutoff_ms(&self) -> u64 {
        let cutoff = SystemTime::now()
            .checked_sub(self.age)
            .unwrap_or(UNIX_EPOCH);
        super::time::epoch_ms(cutoff)
    }
}

/// What an [`AuditEntry`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditKind {
    /// A call started waiting for a person (its `action` is the pending
    /// kind: `approval`, `suspended`, `output`).
    Requested,
    /// A person's (or the runtime's) decision took effect.
    Decided,
    /// A person gave one of the approvals a call needs
    /// ([`RuntimeBuilder::approvals_required`](crate::RuntimeBuilder::approvals_required));
    /// the call waits for the others. Counted for the version its `digest`
    /// names.
    Granted,
    /// A decision attempt was refused (its `reason` says why: a stale or
    /// foreign digest, an unauthorized principal, a foreign origin...).
    Refused,
    /// The application's own entry (an action taken outside the runtime, a
    /// note): recorded, never counted as a decision or a grant.
    Noted,
}

impl AuditKind {
    /// Whether an application may append an entry of this kind
    /// ([`CallInbox::append_audit`](crate::CallInbox::append_audit)): a
    /// refused attempt or a note. Requests, decisions and grants are the
    /// runtime's alone, so that only a decision it made counts.
    ///
    /// ```
    /// use tool_runtime::store::AuditKind;
    ///
    /// assert!(AuditKind::Refused.is_appendable() && AuditKind::Noted.is_appendable());
    /// assert!(!AuditKind::Granted.is_appendable());
    /// ```
    pub fn is_appendable(self) -> bool {
        matches!(self, AuditKind::Refused | AuditKind::Noted)
    }
}

/// One line of the audit log.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::{AuditEntry, AuditKind};
///
/// let entry = AuditEntry::new(AuditKind::Decided, "c1", "transfer", "decline")
///     .principal("alice")
///     .reason("too much");
/// let line = entry.to_json_line();
/// assert!(line.contains(r#""principal":"alice""#) && !line.contains('\n'));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditEntry {
    /// Its place in the log, given by the store when appended (increasing;
    /// 0 before).
    pub seq: u64,
    /// When, in milliseconds since the Unix epoch (the appending
    /// instance's clock).
    pub at_ms: u64,
    /// The call it is about.
    pub call_id: String,
    /// The call's tool.
    pub tool_id: String,
    /// What it records.
    pub kind: AuditKind,
    /// For a request, what the call waits for (`approval`, `suspended`,
    /// `output`); for a decision or a refused attempt, the action
    /// (`approve`, `decline`, `respond`, `resume`, `expire`).
    pub action: String,
    /// Who decided or tried to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The digest of the item the decision was taken on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A decline's reason, or why an attempt was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The values of the decision (resume data, an output) as the tool's
    /// display transforms show them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

impl AuditEntry {
    /// An entry of `kind` about call `call_id` of `tool_id`, now.
    pub fn new(
        kind: AuditKind,
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        action: impl Into<String>,
    ) -> Self {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_millis();
        AuditEntry {
            seq: 0,
            at_ms: u64::try_from(at_ms).unwrap_or(u64::MAX),
            call_id: call_id.into(),
            tool_id: tool_id.into(),
            kind,
            action: action.into(),
            principal: None,
            digest: None,
            reason: None,
            detail: None,
        }
    }

    /// Says who.
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// Says on which digest.
    #[must_use]
    pub fn digest(mut self, digest: impl Into<String>) -> Self {
        self.digest = Some(digest.into());
        self
    }

    /// Says why.
    #[must_use]
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Adds the decision's values, as displayed.
    #[must_use]
    pub fn detail(mut self, detail: Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// The entry as one line of JSON (no newline), for an export in JSON
    /// lines.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Which entries [`AuditLog::audit`] reads: those after `after` (a `seq`),
/// of one call or of all, at most `limit`, in order.
///
/// ```
/// use tool_runtime::store::AuditQuery;
///
/// let query = AuditQuery::all().call("c1").after(10).limit(50);
/// assert_eq!((query.call_id.as_deref(), query.after, query.limit), (Some("c1"), 10, 50));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditQuery {
    /// Only this call's entries, when set.
    pub call_id: Option<String>,
    /// Only entries with a larger `seq`.
    pub after: u64,
    /// At most this many.
    pub limit: usize,
}

impl AuditQuery {
    /// Every entry from the start, 1,000 at a time.
    pub fn all() -> Self {
        AuditQuery {
            call_id: None,
            after: 0,
            limit: 1_000,
        }
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
    pub(crate) fn matches(&self, entry: &AuditEntry) -> bool {
        entry.seq > self.after && self.call_id.as_ref().is_none_or(|c| *c == entry.call_id)
    }
}
