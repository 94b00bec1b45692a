//! Where calls that wait for a human decision or for resume data are kept,
//! through their lifecycle (pending → running → settled): the store
//! traits, one a job ([`CallStore`] for the calls, [`RunStore`] for agent
//! runs, [`AuditLog`] for the audit log, [`RuleStore`] for standing
//! rules, [`Outbox`] for notifications to people), an in-memory store, a durable
//! SQLite store (feature `sqlite`) and a PostgreSQL store (feature
//! `postgres`), each of which implements all five. A runtime takes a store
//! that does all five jobs
//! ([`IntoStore`]).
//!
//! A decision is one atomic transition of the store ([`CallStore::decide`]),
//! so an approval or a resume runs a call at most once, even when several
//! runtimes share one store; a running call holds a lease, so a call whose
//! runtime died is recovered rather than lost.

mod audit;
mod erased;
mod memory;
mod outbox;
#[cfg(feature = "postgres")]
mod postgres;
mod rules;
mod run;
mod signal;
#[cfg(feature = "sqlite")]
mod sqlite;
mod state;
mod time;
mod transaction;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_core::{AgentContext, Excerpt};

pub use audit::{AuditEntry, AuditKind, AuditLog, AuditQuery, AuditRetention};
pub(crate) use erased::{
    DynAuditLog, DynCallStore, DynOutbox, DynRuleStore, DynRunStore, StoreFuture, Stores,
};
pub use memory::MemoryStore;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use outbox::Noted;
pub use outbox::{
    Delivery, DeliveryState, Notification, NotificationKind, Outbox, OutboxEntry, OutboxQuery,
};
pub(crate) use outbox::{lease_end_ms, storable_notifications};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::PostgresStore;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::{PostgresTransaction, TransactionError};
pub use rules::{FieldEquals, PredicateCall, Revocation, RuleCondition, RuleStore, StandingRule};
pub use run::{RunStore, StoredRun};
pub use signal::{TaskSignal, TaskSignaller};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::SqliteStore;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::SqliteTransaction;
pub use state::{
    CallState, Decided, Expected, RecordedOutcome, Settlement, StoredCall, Transition,
};
pub(crate) use time::epoch_ms_now;
pub use transaction::{CommitFuture, Committed, StoreTransaction, TransactionEnded};

/// The deepest JSON value a store keeps: 127 levels of arrays and objects,
/// the most serde_json parses back. Every value of a call (its arguments,
/// request context, messages, payload, resume data, outcome) and every run
/// record is checked against it before any store writes it, the memory
/// store too, so code tested on memory meets the same refusal as on SQLite
/// or PostgreSQL ([`StoreError::Refused`]).
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::{CallStore, MemoryStore, MAX_JSON_DEPTH};
/// use tool_runtime::{PendingCall, PendingKind, StoreError};
///
/// let nested = |levels: usize| (1..levels).fold(json!([]), |inner, _| json!([inner]));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let deepest = PendingCall::new("c1", "t", PendingKind::Approval, nested(MAX_JSON_DEPTH));
/// store.insert(deepest).await.unwrap();
/// let deeper = PendingCall::new("c2", "t", PendingKind::Approval, nested(MAX_JSON_DEPTH + 1));
/// let error = store.insert(deeper).await.unwrap_err();
/// assert!(matches!(error, StoreError::Refused { .. }));
/// assert!(error.to_string().contains("the arguments of call \"c2\""));
/// # });
/// ```
pub const MAX_JSON_DEPTH: usize = 127;

/// The longest id a store keeps, in bytes: a call's id, its tool's id and
/// a run's id are at most 1024 bytes and hold no NUL character, on every
/// store ([`StoreError::Refused`] otherwise, before anything is written).
///
/// The stores differ below this: PostgreSQL refuses NUL in `text` and an
/// id whose primary-key index entry passes 2704 bytes (measured: 2688
/// random bytes fit, 2700 do not; a compressible id fits far longer),
/// SQLite and the memory store keep both. One limit, well below
/// PostgreSQL's, holds whatever the id's bytes are.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::{CallStore, MemoryStore, MAX_ID_BYTES};
/// use tool_runtime::{PendingCall, PendingKind, StoreError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let longest = "c".repeat(MAX_ID_BYTES);
/// store.insert(PendingCall::new(longest, "t", PendingKind::Approval, json!({}))).await.unwrap();
/// let longer = "c".repeat(MAX_ID_BYTES + 1);
/// let error = store.insert(PendingCall::new(longer, "t", PendingKind::Approval, json!({}))).await.unwrap_err();
/// assert!(matches!(error, StoreError::Refused { .. }));
/// assert!(error.to_string().contains("at most 1024 bytes"));
/// let error = store.insert(PendingCall::new("a\0b", "t", PendingKind::Approval, json!({}))).await.unwrap_err();
/// assert!(error.to_string().contains("NUL"));
/// # });
/// ```
pub const MAX_ID_BYTES: usize = 1024;

/// Whether a store can keep `id` (see [`MAX_ID_BYTES`]): a lookup of an id
/// it cannot keep finds nothing, without asking the database (PostgreSQL
/// would fail on a NUL rather than find nothing).
#[cfg(feature = "postgres")]
pub(crate) fn storable_id(id: &str) -> bool {
    id.len() <= MAX_ID_BYTES && !id.contains('\0')
}

/// Refuses `id` unless a store can keep it; `subject` says whose id it is
/// (`call`, `tool of call "c1"`, `run`).
fn check_id(subject: std::fmt::Arguments<'_>, id: &str) -> Result<(), StoreError> {
    let problem = if id.len() > MAX_ID_BYTES {
        format!("it is {} bytes long", id.len())
    } else if id.contains('\0') {
        "it holds a NUL character".to_owned()
    } else {
        return Ok(());
    };
    Err(StoreError::Refused {
        subject: format!("the id of {subject} {:?}", Excerpt::of(id)),
        reason: format!(
            "{problem}; ids are at most {MAX_ID_BYTES} bytes, without NUL, on every store"
        ),
    })
}

/// The values of a call as the stores write them: each as JSON text,
/// checked (with the call's ids) against the stores' limits. The memory
/// store only checks: the texts are the durable stores'.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) struct CallTexts {
    pub(crate) input: String,
    pub(crate) request_context: String,
    pub(crate) messages: String,
    pub(crate) payload: Option<String>,
    pub(crate) agent: Option<String>,
    pub(crate) approvals: Option<String>,
}

/// Checks `call` against the limits every store enforces ([`MAX_ID_BYTES`],
/// [`MAX_JSON_DEPTH`]) before anything is written, and gives its values as
/// JSON text: the one check all three stores run, so that they refuse alike.
pub(crate) fn storable_call(call: &PendingCall) -> Result<CallTexts, StoreError> {
    let id = call.head.call_id.as_str();
    check_id(format_args!("call"), id)?;
    check_id(
        format_args!("the tool of call {:?}:", Excerpt::of(id)),
        &call.head.tool_id,
    )?;
    if let Some(requester) = &call.head.requester {
        check_id(
            format_args!("the requester of call {:?}:", Excerpt::of(id)),
            requester,
        )?;
    }
    Ok(CallTexts {
        input: storable_json(id, "arguments", &call.input)?,
        request_context: storable_json(id, "request context", &call.head.request_context)?,
        messages: storable_json(id, "messages", &call.head.messages)?,
        payload: call
            .payload
            .as_ref()
            .map(|payload| storable_json(id, "payload", payload))
            .transpose()?,
        agent: call
            .head
            .agent
            .as_ref()
            .map(|agent| storable_json(id, "agent context", agent))
            .transpose()?,
        approvals: call
            .approvals
            .as_ref()
            .map(|approvals| storable_json(id, "required approvals", approvals))
            .transpose()?,
    })
}

/// `value` as JSON text, checked to read back: a value nested deeper than
/// [`MAX_JSON_DEPTH`] is refused now, naming the call and what it was,
/// rather than stored unreadable.
fn storable_json(call_id: &str, what: &str, value: &impl Serialize) -> Result<String, StoreError> {
    checked_json(
        format_args!("the {what} of call {:?}", Excerpt::of(call_id)),
        value,
    )
}

/// The record of run `run_id` as JSON text, its id and depth checked as a
/// call's are; refused naming the run.
fn storable_run_record(run_id: &str, record: &Value) -> Result<String, StoreError> {
    check_id(format_args!("run"), run_id)?;
    checked_json(
        format_args!("the record of run {:?}", Excerpt::of(run_id)),
        record,
    )
}

/// `entry` as JSON text for the audit log, its call id and detail checked
/// as a call's are.
fn storable_audit(entry: &AuditEntry) -> Result<String, StoreError> {
    check_id(format_args!("the call of an audit entry"), &entry.call_id)?;
    checked_json(
        format_args!("the audit entry of call {:?}", Excerpt::of(&entry.call_id)),
        entry,
    )
}

/// `rule` as JSON text, its ids checked as a call's are and its values as
/// JSON is.
fn storable_rule(rule: &StandingRule) -> Result<String, StoreError> {
    check_id(format_args!("standing rule"), &rule.rule_id)?;
    let of_rule = Excerpt::of(&rule.rule_id);
    check_id(
        format_args!("the tool of standing rule {of_rule:?}:"),
        &rule.tool_id,
    )?;
    if let Some(requester) = &rule.requester {
        check_id(
            format_args!("the requester of standing rule {of_rule:?}:"),
            requester,
        )?;
    }
    check_id(
        format_args!("the author of standing rule {of_rule:?}:"),
        &rule.author,
    )?;
    checked_json(format_args!("standing rule {of_rule:?}"), rule)
}

/// `value` as JSON text, checked to read back; `subject` names it in the
/// error. The check parses a `Value`: serde_json skips an `IgnoredAny`
/// without its depth limit.
fn checked_json(
    subject: std::fmt::Arguments<'_>,
    value: &impl Serialize,
) -> Result<String, StoreError> {
    let refused = |e: serde_json::Error| StoreError::Refused {
        subject: subject.to_string(),
        reason: format!(
            "it cannot be read back ({e}); JSON deeper than {MAX_JSON_DEPTH} levels is refused on every store"
        ),
    };
    let text = serde_json::to_string(value).map_err(refused)?;
    serde_json::from_str::<Value>(&text).map_err(refused)?;
    Ok(text)
}

/// Which pending calls a page of [`CallStore::list_page`] holds: of these
/// kinds, of one tool or all, made by one agent run, thread or resource,
/// asked for by one principal, asked for within a time range, after a
/// call id (the last of the previous page), at most `limit`, ordered by
/// call id.
///
/// ```
/// use tool_runtime::PendingKind;
/// use tool_runtime::store::PendingQuery;
///
/// let query = PendingQuery::waiting_for_people().tool("transfer").after("c9").limit(50);
/// assert_eq!(query.kinds, [PendingKind::Approval, PendingKind::Suspended, PendingKind::Output]);
/// assert_eq!((query.tool_id.as_deref(), query.after.as_deref(), query.limit), (Some("transfer"), Some("c9"), 50));
///
/// // Asked for by one agent's run more than an hour before `now_ms`.
/// let now_ms = 1_767_225_600_000;
/// let stale = PendingQuery::waiting_for_people().run("run-7").asked_before_ms(now_ms - 3_600_000);
/// assert_eq!((stale.run_id.as_deref(), stale.asked_before_ms), (Some("run-7"), Some(now_ms - 3_600_000)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PendingQuery {
    /// The kinds of pending calls (none: no call).
    pub kinds: Vec<PendingKind>,
    /// Only this tool's calls, when set.
    pub tool_id: Option<String>,
    /// Only calls made by this agent run ([`AgentContext::run_id`](tool_core::AgentContext::run_id)).
    pub run_id: Option<String>,
    /// Only calls made in this agent thread.
    pub thread_id: Option<String>,
    /// Only calls made for this resource (the user or entity a thread
    /// belongs to).
    pub resource_id: Option<String>,
    /// Only calls this principal asked for ([`StoredHead::requester`]).
    pub requester: Option<String>,
    /// Only calls asked for before this time ([`PendingCall::asked_at_ms`];
    /// a call that does not say when is left out).
    pub asked_before_ms: Option<u64>,
    /// Only calls asked for after this time (as above).
    pub asked_after_ms: Option<u64>,
    /// Only calls whose tool id, requester or call id contains this text,
    /// ignoring case (a search box's words, as one).
    pub text: Option<String>,
    /// The page's order: by call id unless said.
    pub order: PendingOrder,
    /// Only calls after this one in the page's order: after its id (by
    /// bytes) by call id; in an order by time, after its id among the
    /// calls of [`after_key`](Self::after_key), and after every call of an
    /// earlier key ([`PendingQuery::after_position`]).
    pub after: Option<String>,
    /// In an order by time, the key ([`PendingOrder::key`]) of the call
    /// [`after`](Self::after) names.
    pub after_key: Option<u64>,
    /// At most this many.
    pub limit: usize,
}

/// The key of a call without the time an order reads: after every time
/// (the largest a SQL integer holds).
pub const NO_TIME: u64 = 9_223_372_036_854_775_807;

/// The order of a page of waiting calls ([`PendingQuery::order`]); ties
/// (and calls without the time) by call id.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::{NO_TIME, PendingOrder};
/// use tool_runtime::{PendingCall, PendingKind};
///
/// let mut call = PendingCall::new("c1", "t", PendingKind::Approval, json!({}));
/// call.asked_at_ms = Some(1_000);
/// assert_eq!(PendingOrder::Asked.key(&call), Some(1_000));
/// assert_eq!(PendingOrder::Expires.key(&call), Some(NO_TIME)); // it does not expire: last
/// assert_eq!(PendingOrder::CallId.key(&call), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PendingOrder {
    /// By call id (bytes order).
    #[default]
    CallId,
    /// The longest waiting first: by [`PendingCall::asked_at_ms`].
    Asked,
    /// The soonest to expire first: by [`PendingCall::expires_at_ms`].
    Expires,
}

impl PendingOrder {
    /// `call`'s key in this order, which its call id follows: its time
    /// ([`NO_TIME`] when it has none); `None` by call id.
    pub fn key(self, call: &PendingCall) -> Option<u64> {
        let time = |at: Option<u64>| Some(at.map_or(NO_TIME, |at| at.min(NO_TIME)));
        match self {
            PendingOrder::CallId => None,
            PendingOrder::Asked => time(call.asked_at_ms),
            PendingOrder::Expires => time(call.expires_at_ms),
        }
    }
}

impl PendingQuery {
    /// The calls waiting for a person (approval, suspended, output; not
    /// tasks), 100 at a time.
    pub fn waiting_for_people() -> Self {
        PendingQuery {
            kinds: vec![
                PendingKind::Approval,
                PendingKind::Suspended,
                PendingKind::Output,
            ],
            tool_id: None,
            run_id: None,
            thread_id: None,
            resource_id: None,
            requester: None,
            asked_before_ms: None,
            asked_after_ms: None,
            text: None,
            order: PendingOrder::CallId,
            after: None,
            after_key: None,
            limit: 100,
        }
    }

    /// Only the calls of `kind`.
    #[must_use]
    pub fn kind(mut self, kind: PendingKind) -> Self {
        self.kinds.retain(|k| *k == kind);
        self
    }

    /// Only the calls of `tool_id`.
    #[must_use]
    pub fn tool(mut self, tool_id: impl Into<String>) -> Self {
        self.tool_id = Some(tool_id.into());
        self
    }

    /// Only the calls made by agent run `run_id`.
    #[must_use]
    pub fn run(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Only the calls made in agent thread `thread_id`.
    #[must_use]
    pub fn thread(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// Only the calls made for resource `resource_id`.
    #[must_use]
    pub fn resource(mut self, resource_id: impl Into<String>) -> Self {
        self.resource_id = Some(resource_id.into());
        self
    }

    /// Only the calls `principal` asked for.
    #[must_use]
    pub fn requester(mut self, principal: impl Into<String>) -> Self {
        self.requester = Some(principal.into());
        self
    }

    /// Only the calls asked for before `ms` (milliseconds since the Unix
    /// epoch): those waiting longer than `now - ms`.
    #[must_use]
    pub fn asked_before_ms(mut self, ms: u64) -> Self {
        self.asked_before_ms = Some(ms);
        self
    }

    /// Only the calls asked for after `ms` (milliseconds since the Unix
    /// epoch).
    #[must_use]
    pub fn asked_after_ms(mut self, ms: u64) -> Self {
        self.asked_after_ms = Some(ms);
        self
    }

    /// Only the calls whose tool id, requester or call id contains `text`,
    /// ignoring case.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::store::PendingQuery;
    /// use tool_runtime::{PendingCall, PendingKind};
    ///
    /// let mut call = PendingCall::new("c-17", "transfer", PendingKind::Approval, json!({}));
    /// call.head.requester = Some("Alice".to_owned());
    /// let search = |text: &str| PendingQuery::waiting_for_people().text(text).selects(&call);
    /// assert!(search("TRANS") && search("alice") && search("c-1"));
    /// assert!(!search("bob"));
    /// ```
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Only the calls after `call_id`.
    #[must_use]
    pub fn after(mut self, call_id: impl Into<String>) -> Self {
        self.after = Some(call_id.into());
        self
    }

    /// In `order` (by call id unless said).
    #[must_use]
    pub fn order(mut self, order: PendingOrder) -> Self {
        self.order = order;
        self
    }

    /// Only the calls after the call `call_id`, whose key in the page's
    /// order is `key` ([`PendingOrder::key`]): where the page after one
    /// ending with that call starts.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::store::{PendingOrder, PendingQuery};
    /// use tool_runtime::{PendingCall, PendingKind};
    ///
    /// let asked = |id: &str, at: u64| {
    ///     let mut call = PendingCall::new(id, "t", PendingKind::Approval, json!({}));
    ///     call.asked_at_ms = Some(at);
    ///     call
    /// };
    /// let after_b = PendingQuery::waiting_for_people().order(PendingOrder::Asked).after_position(20, "b");
    /// assert!(after_b.selects(&asked("a", 30)) && after_b.selects(&asked("c", 20)));
    /// assert!(!after_b.selects(&asked("z", 10)) && !after_b.selects(&asked("a", 20)));
    /// ```
    #[must_use]
    pub fn after_position(mut self, key: u64, call_id: impl Into<String>) -> Self {
        self.after_key = Some(key);
        self.after = Some(call_id.into());
        self
    }

    /// At most `limit` calls.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Whether `call` (pending) is one this query selects.
    pub fn selects(&self, call: &PendingCall) -> bool {
        let is = |wanted: &Option<String>, got: Option<&str>| {
            wanted.as_deref().is_none_or(|wanted| got == Some(wanted))
        };
        let agent = call.head.agent.as_ref();
        let asked = |bound: Option<u64>, within: fn(u64, u64) -> bool| {
            bound.is_none_or(|bound| call.asked_at_ms.is_some_and(|at| within(at, bound)))
        };
        self.kinds.contains(&call.kind)
            && is(&self.tool_id, Some(&call.head.tool_id))
            && is(&self.run_id, agent.map(|a| a.run_id.as_str()))
            && is(&self.thread_id, agent.and_then(|a| a.thread_id.as_deref()))
            && is(
                &self.resource_id,
                agent.and_then(|a| a.resource_id.as_deref()),
            )
            && is(&self.requester, call.head.requester.as_deref())
            && asked(self.asked_before_ms, |at, bound| at < bound)
            && asked(self.asked_after_ms, |at, bound| at > bound)
            && self.text.as_deref().is_none_or(|text| {
                let text = text.to_lowercase();
                [
                    Some(call.head.tool_id.as_str()),
                    call.head.requester.as_deref(),
                    Some(call.head.call_id.as_str()),
                ]
                .into_iter()
                .flatten()
                .any(|field| field.to_lowercase().contains(&text))
            })
            && self.after.as_deref().is_none_or(|after| {
                let id = call.head.call_id.as_str();
                match self.order.key(call) {
                    Some(key) => (key, id) > (self.after_key.unwrap_or(0), after),
                    None => id > after,
                }
            })
    }
}

/// Why a call is pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PendingKind {
    /// Waiting for `approve` or `decline`.
    Approval,
    /// Suspended by the tool, waiting for `resume`.
    Suspended,
    /// A background task, waiting for a runtime to claim and run it: its
    /// creator at once, unless it leaves tasks to workers; a
    /// [`Worker`](crate::Worker) (or [`Runtime::recover`](crate::Runtime::recover))
    /// on any instance otherwise.
    Task,
    /// A call of a declaration-only tool (no execute function), waiting
    /// for the application to give its output with
    /// [`Runtime::respond`](crate::Runtime::respond) (or to `decline` it).
    Output,
}

impl PendingKind {
    /// `"approval"`, `"suspended"`, `"task"` or `"output"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PendingKind::Approval => "approval",
            PendingKind::Suspended => "suspended",
            PendingKind::Task => "task",
            PendingKind::Output => "output",
        }
    }
}

/// A call's head as a store keeps it: what a [`CallHead`](crate::CallHead)
/// carries that outlives the process (its ids, request context,
/// conversation, who asked, its own time limit) and the agent that made
/// it. Extensions are the process's own values and are not kept. One unit,
/// written from the call when it starts to wait and read back into a
/// `CallHead` when it runs again, on any instance.
///
/// ```
/// use std::time::Duration;
/// use tool_runtime::CallHead;
/// use tool_runtime::store::StoredHead;
///
/// let mut head = StoredHead::new("call-1", "refund");
/// head.requester = Some("agent-7".into());
/// head.timeout_ms = Some(1_500);
/// let call = CallHead::from(head);
/// assert_eq!((call.requester.as_deref(), call.timeout), (Some("agent-7"), Some(Duration::from_millis(1_500))));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredHead {
    /// The call's id (the key).
    pub call_id: String,
    /// The tool to run.
    pub tool_id: String,
    /// The JSON values of the request context.
    #[serde(default)]
    pub request_context: Map<String, Value>,
    /// The conversation at the time of the call.
    #[serde(default)]
    pub messages: Vec<Value>,
    /// The agent that made the call (its id, run, thread and resource), when
    /// an agent made it: a decision that gives none (`Runtime::approve` on
    /// an agent's call) runs the call with this one, so the tool's
    /// `ctx.agent()` reads the same before and after the pause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentContext>,
    /// Who asked for the call ([`CallHead::requester`](crate::CallHead::requester)),
    /// kept for the decisions on it: with
    /// [`RuntimeBuilder::forbid_self_approval`](crate::RuntimeBuilder::forbid_self_approval),
    /// the requester may not approve it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    /// The call's own time limit in milliseconds
    /// ([`CallHead::timeout`](crate::CallHead::timeout)), kept so that it
    /// holds when the call runs after its pause, on any instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl StoredHead {
    /// The head of call `call_id` of tool `tool_id`, with nothing else.
    pub fn new(call_id: impl Into<String>, tool_id: impl Into<String>) -> Self {
        StoredHead {
            call_id: call_id.into(),
            tool_id: tool_id.into(),
            request_context: Map::new(),
            messages: Vec::new(),
            agent: None,
            requester: None,
            timeout_ms: None,
        }
    }
}

/// A stored call: everything needed to run it later, in this process or
/// in the next one: its head ([`StoredHead`], whose fields serialize as
/// this struct's own), why it waits and what with.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::{PendingCall, PendingKind};
///
/// let call = PendingCall::new("call-1", "delete-file", PendingKind::Approval, json!({ "path": "/tmp/x" }));
/// assert_eq!((call.head.call_id.as_str(), call.kind), ("call-1", PendingKind::Approval));
/// assert!(call.payload.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call's head: its ids, request context, conversation, agent,
    /// requester and own time limit.
    #[serde(flatten)]
    pub head: StoredHead,
    /// Why it waits.
    pub kind: PendingKind,
    /// The validated input.
    pub input: Value,
    /// For a suspended call, what it suspended with.
    #[serde(default)]
    pub payload: Option<Value>,
    /// When a call waiting for approval expires, in milliseconds since the
    /// Unix epoch ([`RuntimeBuilder::approval_ttl`](crate::RuntimeBuilder::approval_ttl)):
    /// from then on it is declined with the reason `expired` by the first
    /// runtime that notifications, and no decision runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// When the runtime first stored the call to wait (for a person, or
    /// for a worker), in milliseconds since the Unix epoch: how long it
    /// has waited, for listings that sort or filter by age.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at_ms: Option<u64>,
    /// For a call waiting for approval: how many principals must approve
    /// it and from which group, as the approval policy asked when it
    /// started to wait (`None`: the runtime's count for its tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<RequiredApprovals>,
}

/// The approvals a call waiting for approval needs
/// ([`PendingCall::approvals`]): what its approval policy's
/// [`ApprovalRequirement`](tool_core::ApprovalRequirement) said, with the
/// count resolved.
///
/// ```
/// use tool_runtime::store::RequiredApprovals;
///
/// let two_of_finance = RequiredApprovals::new(2).from_group("finance");
/// assert_eq!((two_of_finance.principals, two_of_finance.group.as_deref()), (2, Some("finance")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RequiredApprovals {
    /// How many different principals must approve it (at least 1).
    pub principals: u32,
    /// The group each of them must be in, when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl RequiredApprovals {
    /// `principals` approvals (0 counts as 1), from anyone.
    pub fn new(principals: u32) -> Self {
        RequiredApprovals {
            principals: principals.max(1),
            group: None,
        }
    }

    /// `self`, each from a principal in `group`.
    #[must_use]
    pub fn from_group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }
}

impl PendingCall {
    /// A pending call with no request context, messages or payload.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::store::StoredHead;
    /// use tool_runtime::{PendingCall, PendingKind};
    ///
    /// let call = PendingCall::new("c1", "t", PendingKind::Suspended, json!({}));
    /// assert_eq!(call, PendingCall::waiting(StoredHead::new("c1", "t"), PendingKind::Suspended, json!({})));
    /// ```
    pub fn new(
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        kind: PendingKind,
        input: Value,
    ) -> Self {
        PendingCall::waiting(StoredHead::new(call_id, tool_id), kind, input)
    }

    /// A pending call with head `head`, and no payload yet.
    pub fn waiting(head: StoredHead, kind: PendingKind, input: Value) -> Self {
        PendingCall {
            head,
            kind,
            input,
            payload: None,
            expires_at_ms: None,
            asked_at_ms: None,
            approvals: None,
        }
    }

    /// Whether the call expired by `now_ms` (milliseconds since the Unix
    /// epoch): it waits for approval past its
    /// [`expires_at_ms`](Self::expires_at_ms).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::{PendingCall, PendingKind};
    ///
    /// let mut call = PendingCall::new("c1", "t", PendingKind::Approval, json!({}));
    /// assert!(!call.expired(u64::MAX));
    /// call.expires_at_ms = Some(1_000);
    /// assert!(!call.expired(999) && call.expired(1_000));
    /// ```
    pub fn expired(&self, now_ms: u64) -> bool {
        self.kind == PendingKind::Approval && self.expires_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// What a store keeps of settled calls ([`CallStore::purge_settled`]): for
/// how long after they settled, and how many at most. A runtime purges
/// with its own ([`RuntimeBuilder::settled_retention`](crate::RuntimeBuilder::settled_retention),
/// [`RuntimeBuilder::settled_limit`](crate::RuntimeBuilder::settled_limit)).
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use tool_runtime::store::{CallStore, MemoryStore, RecordedOutcome, Retention, Transition};
/// use tool_runtime::{PendingCall, PendingKind};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// for id in ["c1", "c2", "c3"] {
///     store.insert(PendingCall::new(id, "t", PendingKind::Approval, json!({}))).await.unwrap();
///     let declined = RecordedOutcome::Declined { reason: None };
///     store.decide(id, PendingKind::Approval, Transition::Settle(declined)).await.unwrap();
/// }
/// let hour = Duration::from_secs(3600);
/// // Two settled calls kept: c1, the oldest settled, is purged and remembered so.
/// assert_eq!(store.purge_settled(Retention::new(hour, 2)).await.unwrap(), 1);
/// assert!(store.get("c1").await.unwrap().is_none());
/// assert!(store.purged("c1").await.unwrap().is_some());
/// assert!(store.get("c3").await.unwrap().is_some());
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// How long after it settled a call is kept (and a finished run after
    /// its last save, and the id of a call purged by the size bound).
    pub age: Duration,
    /// How many settled calls are kept at most, the most recently settled.
    pub max_settled: usize,
}

impl Retention {
    /// Settled calls kept for `age`, `max_settled` of them at most.
    pub fn new(age: Duration, max_settled: usize) -> Self {
        Retention { age, max_settled }
    }

    /// The time in milliseconds since the Unix epoch before which what
    /// settled is too old, now.
    pub(crate) fn cutoff_ms(&self) -> u64 {
        time::epoch_ms(
            SystemTime::now()
                .checked_sub(self.age)
                .unwrap_or(std::time::UNIX_EPOCH),
        )
    }
}

/// Why the pending store failed. Every variant names what it is about (the
/// file, the call id), so the message alone tells what to fix.
///
/// Where an underlying error caused it (SQLite's, the file system's, a record
/// that does not parse), it is the [`source`](std::error::Error::source),
/// boxed so that no storage crate's types are part of this API; its message
/// is also in `reason`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store file could not be opened or created.
    #[error("cannot open the pending store {}: {reason}", path.display())]
    Open {
        /// The store file.
        path: PathBuf,
        /// What SQLite or the OS reported.
        reason: String,
        /// The error SQLite or the OS reported, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The file exists but is not a readable pending store (corrupt, or
    /// another program's database). It is left untouched.
    #[error("the pending store {} is corrupt or not a tool-runtime store: {reason}; it was left untouched, move it away or fix it", path.display())]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
        /// The error that showed it (SQLite's, or a record's parse error), if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A pending call with this id is already stored.
    #[error("a pending call with id {:?} is already stored", Excerpt::of(.call_id))]
    Duplicate {
        /// The id.
        call_id: String,
    },
    /// A value no store keeps, refused before anything was written: an id
    /// longer than [`MAX_ID_BYTES`] or holding NUL, JSON nested deeper than
    /// [`MAX_JSON_DEPTH`]. Every store refuses the same values.
    #[error("cannot store {subject}: {reason}")]
    Refused {
        /// What was refused, naming its call or run (the id quoted as a
        /// bounded [`Excerpt`]): `the arguments of call "c1"`.
        subject: String,
        /// Why, with the limit.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("the pending store {location} failed: {reason}")]
    Io {
        /// The store (a file path, or `memory`).
        location: String,
        /// What failed.
        reason: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

/// Storage of stored calls, keyed by call id, through their lifecycle:
/// pending → running → settled (see [`CallState`]). Every method is async: a
/// store may do I/O (a file, a database server), and the runtime awaits it
/// inside the call's future, never on the thread that built the future.
///
/// One of the five jobs of a runtime's store, each a trait: this one,
/// [`RunStore`] (agent runs), [`AuditLog`] (what people were asked and
/// decided), [`RuleStore`] (standing rules) and [`Outbox`] (notifications to
/// people). A store of your own
/// implements all five to be given to
/// [`RuntimeBuilder::store`](crate::RuntimeBuilder::store) ([`IntoStore`]);
/// the stores of this crate do.
///
/// The contract, which every store meets (the runtime's contract tests run
/// against each):
/// - [`decide`](Self::decide) and [`recover_expired`](Self::recover_expired)
///   are atomic: of any number of concurrent decisions on one id (from any
///   number of runtimes sharing the store) exactly one wins; nothing is ever
///   removed and re-inserted.
/// - Every claim ([`decide`](Self::decide) with [`Transition::Run`],
///   [`claim_next`](Self::claim_next), [`recover_expired`](Self::recover_expired))
///   draws a new fencing token ([`StoredCall::epoch`]), larger than any the
///   store drew before. [`renew`](Self::renew) and [`finish`](Self::finish)
///   act only for the call's current token, checked in the same atomic
///   write: an execution whose claim was taken over changes nothing, even
///   on the instance that took it over. A finish for the current token
///   succeeds after its lease ran out, as long as nobody took the call.
/// - Lease times are the store's own clock.
/// - A store whose I/O blocks runs it off the async worker threads (as
///   [`SqliteStore`] does, on tokio's blocking pool).
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use tool_runtime::store::{Decided, MemoryStore, CallStore, Transition};
/// use tool_runtime::{PendingCall, PendingKind};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// store.insert(PendingCall::new("c1", "t", PendingKind::Suspended, json!({}))).await.unwrap();
/// let run = || Transition::Run { owner: "a".into(), lease: Duration::from_secs(30), resume_data: Some(json!(1)) };
/// assert!(matches!(store.decide("c1", PendingKind::Approval, run()).await.unwrap(), Decided::Lost(Some(_)))); // wrong kind
/// assert!(matches!(store.decide("c1", PendingKind::Suspended, run()).await.unwrap(), Decided::Won(_)));
/// assert!(matches!(store.decide("c1", PendingKind::Suspended, run()).await.unwrap(), Decided::Lost(Some(_)))); // once
/// # });
/// ```
// Adding a method costs this trait and the three stores (memory.rs,
// sqlite.rs, postgres.rs); when the runtime calls it, also one line in the
// list of `DynCallStore`, the object-safe twin the runtime keeps
// (erased.rs), which forwards to this trait.
pub trait CallStore: Send + Sync + 'static {
    /// Stores a new pending call; fails with [`StoreError::Duplicate`] if a
    /// call with its id is stored, in any state.
    fn insert(&self, call: PendingCall) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.insert_notifying(call, Vec::new())
    }

    /// [`insert`](Self::insert), and `notifications` into the outbox ([`Outbox`])
    /// in the same atomic step: all of them if the call is stored, none if
    /// it is not.
    fn insert_notifying(
        &self,
        call: PendingCall,
        notifications: Vec<Notification>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Applies `transition` to the call `call_id` if it is as `expected`
    /// (pending for a kind, or a [`PendingKind`] alone; at a fencing token),
    /// atomically; otherwise changes nothing and returns the call as it is.
    fn decide(
        &self,
        call_id: &str,
        expected: impl Into<Expected> + Send,
        transition: Transition,
    ) -> impl Future<Output = Result<Decided, StoreError>> + Send {
        self.decide_notifying(call_id, expected, transition, Vec::new())
    }

    /// [`decide`](Self::decide), and `notifications` into the outbox in the same
    /// atomic step: all of them if the transition applies (the answer is
    /// [`Decided::Won`]), none otherwise.
    fn decide_notifying(
        &self,
        call_id: &str,
        expected: impl Into<Expected> + Send,
        transition: Transition,
        notifications: Vec<Notification>,
    ) -> impl Future<Output = Result<Decided, StoreError>> + Send;

    /// Extends the lease of the running call `call_id` to `lease` from now,
    /// if its claim is still the one with fencing token `epoch`; `false`
    /// (and nothing changed) when it is not.
    fn renew(
        &self,
        call_id: &str,
        epoch: u64,
        lease: Duration,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Ends the running call `call_id` (settled with its outcome, or pending
    /// again, suspended) if its claim is still the one with fencing token
    /// `epoch`, whether or not its lease ran out; `false` (and nothing
    /// changed) when it is not.
    fn finish(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.finish_notifying(call_id, epoch, settlement, Vec::new())
    }

    /// [`finish`](Self::finish), and `notifications` into the outbox in the same
    /// atomic step: all of them if the call ends (`true`), none otherwise.
    fn finish_notifying(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Claims, for `owner` and `lease`, every running call whose lease has
    /// expired and whose tool is one of `tool_ids`, counting one more
    /// attempt; returns them as claimed.
    fn recover_expired(
        &self,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> impl Future<Output = Result<Vec<StoredCall>, StoreError>> + Send;

    /// Claims, for `owner` and `lease`, one pending call of `kind` whose tool
    /// is one of `tool_ids` (the first by call id), as `decide` with
    /// [`Transition::Run`] would; `None` when there is none. Concurrent
    /// claimers get different calls.
    fn claim_next(
        &self,
        kind: PendingKind,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> impl Future<Output = Result<Option<StoredCall>, StoreError>> + Send;

    /// Forgets what `retention` no longer keeps, and returns how many calls
    /// and runs it forgot, together:
    /// - settled calls that settled more than [`Retention::age`] ago;
    /// - then, of the settled calls left, all but the
    ///   [`Retention::max_settled`] most recently settled (oldest settled
    ///   first; of two settled at once, the smaller id first), each
    ///   remembered by its id as purged ([`purged`](Self::purged)) for
    ///   [`Retention::age`], so that a decision on it says so;
    /// - finished runs last saved more than [`Retention::age`] ago.
    ///
    /// Pending and running calls, and unfinished (paused) runs, are never
    /// purged.
    fn purge_settled(
        &self,
        retention: Retention,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;

    /// When the call `call_id` was purged by the size bound of a
    /// [`purge_settled`](Self::purge_settled) (its outcome forgotten while
    /// it was younger than the age bound); `None` when it was not, or
    /// longer ago than that purge's [`Retention::age`]. Asked only for an
    /// id the store does not have.
    fn purged(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Option<SystemTime>, StoreError>> + Send;

    /// The call `call_id`, in whatever state.
    fn get(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Option<StoredCall>, StoreError>> + Send;

    /// Every pending call, ordered by call id, as stored (its `epoch`
    /// names its version: [`StoredCall::digest`]).
    fn list(&self) -> impl Future<Output = Result<Vec<StoredCall>, StoreError>> + Send;

    /// One page of the pending calls `query` selects, ordered by call id:
    /// what a listing of many calls reads. By default the calls of
    /// [`list`](Self::list), filtered; a store with many calls answers
    /// from an index (PostgreSQL does).
    fn list_page(
        &self,
        query: PendingQuery,
    ) -> impl Future<Output = Result<Vec<StoredCall>, StoreError>> + Send {
        async move {
            let mut calls = self.list().await?;
            calls.retain(|stored| query.selects(&stored.call));
            calls.truncate(query.limit);
            Ok(calls)
        }
    }

    /// A signal that resolves when a task ([`PendingKind::Task`]) was
    /// stored through any runtime this store can hear of, so that a
    /// [`Worker`](crate::Worker) claims it at once; `None` (the default)
    /// when the store cannot tell, and workers only poll.
    fn task_signal(&self) -> Option<TaskSignal> {
        None
    }

    /// A new transaction for one transactional tool's call: the tool's
    /// handle, committed with the call's settlement. Nothing is opened until
    /// the tool uses it. `None` (the default) when the store cannot run a
    /// tool in its transactions; a runtime with a transactional tool
    /// refuses to build on such a store.
    fn transaction(&self) -> Option<Box<dyn StoreTransaction>> {
        None
    }
}

/// What [`RuntimeBuilder::store`](crate::RuntimeBuilder::store) takes: a
/// store that does every job of a runtime's store ([`CallStore`],
/// [`RunStore`], [`AuditLog`], [`RuleStore`], [`Outbox`]), or an `Arc` of
/// one. Runtimes given clones of one `Arc` share its calls, runs, audit
/// log, standing rules and outbox (as runtimes on one SQLite file do). Implemented for
/// both; a store of your own implements the five traits, not this one.
///
/// ```
/// use std::sync::Arc;
/// use tool_runtime::store::MemoryStore;
/// use tool_runtime::Runtime;
///
/// let store = Arc::new(MemoryStore::new());
/// let first = Runtime::builder().store(Arc::clone(&store)).build().unwrap();
/// let second = Runtime::builder().store(store).build().unwrap();
/// assert_ne!(first.instance_id(), second.instance_id());
/// ```
///
/// A value that is not such a store does not compile, and the error names
/// the trait it misses:
///
/// ```compile_fail,E0277
/// use tool_runtime::Runtime;
///
/// struct NotAStore;
/// let runtime = Runtime::builder().store(NotAStore); // `NotAStore` is not a store a runtime can keep
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a store a runtime can keep",
    note = "a runtime's store implements `CallStore`, `RunStore`, `AuditLog`, `RuleStore` and `Outbox` (module `tool_runtime::store`); an `Arc` of one is one too"
)]
pub trait IntoStore {
    /// The store.
    type Store: CallStore + RunStore + AuditLog + RuleStore + Outbox;

    /// The store, shared.
    fn into_arc(self) -> Arc<Self::Store>;
}

impl<S: CallStore + RunStore + AuditLog + RuleStore + Outbox> IntoStore for S {
    type Store = S;

    fn into_arc(self) -> Arc<S> {
        Arc::new(self)
    }
}

impl<S: CallStore + RunStore + AuditLog + RuleStore + Outbox> IntoStore for Arc<S> {
    type Store = S;

    fn into_arc(self) -> Arc<S> {
        self
    }
}
