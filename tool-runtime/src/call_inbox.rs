//! What waits for a person, and what people decided: [`CallInbox`].

use std::future::Future;

use crate::decide::{Approvals, Decisions};
use crate::decision::Decision;
use crate::error::RuntimeError;
use crate::principal::Decider;
use crate::store::{AuditEntry, AuditQuery, OutboxEntry, OutboxQuery, PendingQuery, StoredCall};

/// The calls waiting for a person and the record of what people decided,
/// from [`Runtime::inbox`](crate::Runtime::inbox): the waiting calls (all,
/// or a page at a time), any stored call by id, the approvals a call has
/// and needs, and the audit log. It reads the store, so it sees every
/// instance sharing it; the decisions themselves are the runtime's
/// ([`Runtime::decide_as`](crate::Runtime::decide_as) and its family).
/// This is what an approval inbox shows (the `tool-inbox` crate serves it
/// over HTTP). Cheap to clone.
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::{Runtime, ToolCall};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let transfer = Tool::builder("transfer").description("Moves money")
///     .require_approval(true)
///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(transfer).build().unwrap();
/// runtime.call(ToolCall::new("c1", "transfer", json!({ "amount": 5 }))).await;
/// let inbox = runtime.inbox();
/// assert_eq!(inbox.waiting().await.unwrap()[0].call.head.call_id, "c1");
/// assert_eq!(inbox.approvals("c1").await.unwrap().missing(), 1);
/// # });
/// ```
#[derive(Clone)]
pub struct CallInbox {
    decisions: Decisions,
}

impl std::fmt::Debug for CallInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallInbox").finish_non_exhaustive()
    }
}

impl CallInbox {
    pub(crate) fn new(decisions: Decisions) -> Self {
        CallInbox { decisions }
    }

    /// Every call waiting for a decision (approval, resume data, or its
    /// output: see each one's [`kind`](crate::PendingCall::kind)), as
    /// stored: each with its version, for the
    /// [`digest`](StoredCall::digest) a person's decision echoes
    /// ([`decide_as`](crate::Runtime::decide_as)).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let transfer = Tool::builder("transfer").description("Moves money")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(transfer).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "transfer", json!({ "amount": 5 }))).await;
    /// let waiting = runtime.inbox().waiting().await.unwrap();
    /// assert_eq!(waiting[0].digest(), runtime.inbox().stored("c1").await.unwrap().unwrap().digest());
    /// # });
    /// ```
    pub fn waiting(
        &self,
    ) -> impl Future<Output = Result<Vec<StoredCall>, RuntimeError>> + Send + 'static {
        self.decisions.waiting()
    }

    /// One page of the calls [`waiting`](Self::waiting) lists, as `query`
    /// selects them (kinds, tool, after a call id, at most a limit), by
    /// call id: what a listing of many calls reads, from the store's
    /// index where it has one (PostgreSQL). Calls past their expiry are
    /// declined on the way and left out, so a page may hold fewer than
    /// the limit; the next starts after the last id of this one.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::store::PendingQuery;
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let transfer = Tool::builder("transfer").description("Moves money")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(transfer).build().unwrap();
    /// for id in ["c1", "c2", "c3"] {
    ///     runtime.call(ToolCall::new(id, "transfer", json!({}))).await;
    /// }
    /// let page = runtime.inbox().waiting_page(PendingQuery::waiting_for_people().after("c1").limit(1)).await.unwrap();
    /// assert_eq!(page[0].call.head.call_id, "c2");
    /// # });
    /// ```
    pub fn waiting_page(
        &self,
        query: PendingQuery,
    ) -> impl Future<Output = Result<Vec<StoredCall>, RuntimeError>> + Send + 'static {
        self.decisions.waiting_page(query)
    }

    /// The stored call `call_id` in whatever state it is (pending, running,
    /// settled with its outcome), or `None`: how a client that lost a
    /// response finds out what became of a call.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallState, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let delete = Tool::builder("delete-file").description("Delete a file")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("deleted")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(delete).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "delete-file", json!({}))).await;
    /// assert_eq!(runtime.inbox().stored("c1").await.unwrap().unwrap().state, CallState::Pending);
    /// runtime.approve("c1").await.unwrap();
    /// let settled = runtime.inbox().stored("c1").await.unwrap().unwrap();
    /// assert!(matches!(settled.state, CallState::Settled { .. }));
    /// # });
    /// ```
    pub fn stored(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Option<StoredCall>, RuntimeError>> + Send + 'static {
        self.decisions.path().stored().stored(call_id)
    }

    /// The approvals call `call_id` has so far, on every instance sharing
    /// the store, and how many it needs
    /// ([`RuntimeBuilder::approvals_required`](crate::RuntimeBuilder::approvals_required)); a call not waiting for
    /// approval is [`RuntimeError::NotAwaitingApproval`] (or why not).
    /// See [`approvals_required`](crate::RuntimeBuilder::approvals_required) for
    /// an example.
    pub fn approvals(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Approvals, RuntimeError>> + Send + 'static {
        self.decisions.approvals(call_id)
    }

    /// How many different principals must approve a call of `tool_id`
    /// ([`RuntimeBuilder::approvals_required`](crate::RuntimeBuilder::approvals_required)).
    ///
    /// ```
    /// use tool_runtime::Runtime;
    ///
    /// let runtime = Runtime::builder().tool_approvals_required("transfer", 2).build().unwrap();
    /// assert_eq!((runtime.inbox().approvals_required("transfer"), runtime.inbox().approvals_required("weather")), (2, 1));
    /// ```
    pub fn approvals_required(&self, tool_id: &str) -> u32 {
        self.decisions
            .path()
            .approval_rules()
            .approvals_required(tool_id)
    }

    /// Whether the approval rules let `decider` take `decision` on
    /// `stored` as it is now (its digest, the principal, the group a call
    /// needs, separation of duties), without taking it or recording
    /// anything: what a page asks to show only the decisions a person may
    /// take. The decision's values are not checked (its tool's schemas do
    /// that when it is taken).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{Decider, Decision, Principal, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let transfer = Tool::builder("transfer").description("Moves money").require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(transfer).forbid_self_approval(true).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "transfer", json!({})).with_requester("alice")).await;
    /// let stored = runtime.inbox().stored("c1").await.unwrap().unwrap();
    /// let as_ = |who: &str| Decider::new(Principal::new(who), stored.digest());
    /// assert!(runtime.inbox().permits(&stored, &Decision::Approve, &as_("alice")).is_err());
    /// assert!(runtime.inbox().permits(&stored, &Decision::Decline(None), &as_("alice")).is_ok());
    /// assert!(runtime.inbox().permits(&stored, &Decision::Approve, &as_("bob")).is_ok());
    /// # });
    /// ```
    pub fn permits(
        &self,
        stored: &StoredCall,
        decision: &Decision,
        decider: &Decider,
    ) -> Result<(), RuntimeError> {
        self.decisions
            .path()
            .approval_rules()
            .check(stored, decision, Some(decider))
            .map_err(|refusal| refusal.error)
    }

    /// The entries of the audit log `query` selects, in order: the
    /// requests (a call starting to wait for a person), the decisions
    /// taken through [`decide_as`](crate::Runtime::decide_as) and the refused
    /// attempts, from the store (every instance's). The log is
    /// append-only and kept when the calls are purged; export it with
    /// [`AuditEntry::to_json_line`](crate::store::AuditEntry::to_json_line).
    pub fn audit(
        &self,
        query: AuditQuery,
    ) -> impl Future<Output = Result<Vec<AuditEntry>, RuntimeError>> + Send + 'static {
        self.decisions.path().stored().read_audit(query)
    }

    /// The `seq` of the audit log's newest entry (0 while it is empty):
    /// where a reader that follows the log from now on starts, reading
    /// [`audit`](Self::audit) `after` it (what a live page does to see
    /// grants and decisions made on any instance).
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_runtime::store::{AuditEntry, AuditKind, AuditQuery};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().build().unwrap();
    /// assert_eq!(runtime.inbox().audit_end().await.unwrap(), 0);
    /// let note = AuditEntry::new(AuditKind::Noted, "c1", "transfer", "note");
    /// let seq = runtime.inbox().append_audit(note).await.unwrap();
    /// let end = runtime.inbox().audit_end().await.unwrap();
    /// assert_eq!(end, seq);
    /// assert!(runtime.inbox().audit(AuditQuery::all().after(end)).await.unwrap().is_empty());
    /// # });
    /// ```
    pub fn audit_end(&self) -> impl Future<Output = Result<u64, RuntimeError>> + Send + 'static {
        self.decisions.path().stored().audit_end()
    }

    /// Appends `entry` to the audit log: what an application records
    /// beside the runtime's own entries (a decision attempt it refused
    /// before reaching the runtime: an unauthorized principal, a foreign
    /// origin; or a note of its own). Returns its `seq`. Only
    /// [`Refused`](crate::store::AuditKind::Refused) and [`Noted`](crate::store::AuditKind::Noted)
    /// entries: requests, decisions and grants are the runtime's, written
    /// as they take effect, so that an approval counts only when a
    /// decision made it ([`RuntimeError::ReservedAuditKind`] otherwise).
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_runtime::store::{AuditEntry, AuditKind, AuditQuery};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().build().unwrap();
    /// let entry = AuditEntry::new(AuditKind::Refused, "c1", "transfer", "approve")
    ///     .principal("mallory")
    ///     .reason("not authorized");
    /// let seq = runtime.inbox().append_audit(entry).await.unwrap();
    /// assert_eq!(runtime.inbox().audit(AuditQuery::all()).await.unwrap()[0].seq, seq);
    /// # });
    /// ```
    pub fn append_audit(
        &self,
        entry: AuditEntry,
    ) -> impl Future<Output = Result<u64, RuntimeError>> + Send + 'static {
        let kind = entry.kind;
        let appending = kind.is_appendable().then(|| {
            let stored = self.decisions.path().stored();
            stored.append_audit(entry, Vec::new())
        });
        async move {
            match appending {
                Some(appending) => appending.await,
                None => Err(RuntimeError::ReservedAuditKind { kind }),
            }
        }
    }

    /// The outbox's notifications `query` selects, with where each one's
    /// delivery is: those waiting, delivered, or dead after the
    /// dispatcher gave up on them (`OutboxQuery::all().state("dead")`),
    /// with why.
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_runtime::store::OutboxQuery;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().notifications(true).build().unwrap();
    /// let dead = runtime.inbox().outbox(OutboxQuery::all().state("dead")).await.unwrap();
    /// assert!(dead.is_empty());
    /// # });
    /// ```
    pub fn outbox(
        &self,
        query: OutboxQuery,
    ) -> impl Future<Output = Result<Vec<OutboxEntry>, RuntimeError>> + Send + 'static {
        let outbox = self.decisions.path().stored().outbox();
        async move { Ok(outbox.outbox(query).await?) }
    }

    /// Sends the dead notification `seq` again: it waits for the next
    /// dispatch, to the sinks that did not take it; `false` when it is not
    /// dead.
    ///
    /// ```
    /// use tool_runtime::Runtime;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let runtime = Runtime::builder().notifications(true).build().unwrap();
    /// assert!(!runtime.inbox().redeliver(1).await.unwrap());
    /// # });
    /// ```
    pub fn redeliver(
        &self,
        seq: u64,
    ) -> impl Future<Output = Result<bool, RuntimeError>> + Send + 'static {
        let outbox = self.decisions.path().stored().outbox();
        async move { Ok(outbox.redeliver(seq).await?) }
    }
}
