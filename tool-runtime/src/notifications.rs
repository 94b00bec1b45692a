//! The notifications a runtime writes into its store's outbox with the changes
//! people should hear of ([`Notifications`]): what each says, in one place. The
//! store writes them in the same atomic step as the change
//! ([`store::Outbox`](crate::store::Outbox)); a
//! [`Dispatcher`](crate::Dispatcher) delivers them.

use serde_json::{Value, json};
use tool_core::Tool;

use crate::decision::Decision;
use crate::store::{
    Notification, NotificationKind, PendingCall, PendingKind, RecordedOutcome, RequiredApprovals,
    Settlement, StoredCall,
};

/// Whether this runtime writes notifications, and what each says. Off, every
/// method answers with no notification, and a change costs nothing more.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Notifications {
    on: bool,
}

impl Notifications {
    /// Notifications written (`on`) or not.
    pub(crate) fn new(on: bool) -> Self {
        Notifications { on }
    }

    /// Whether notifications are written: what a caller asks before computing
    /// what one shows.
    pub(crate) fn on(self) -> bool {
        self.on
    }

    fn one(
        self,
        kind: NotificationKind,
        call_id: &str,
        tool_id: &str,
        data: Value,
    ) -> Vec<Notification> {
        if !self.on {
            return Vec::new();
        }
        vec![Notification::new(kind, call_id, tool_id, data)]
    }

    /// `call` starts to wait for a person: for approval (what it needs,
    /// until when, its input as `shown`), or suspended (its payload as
    /// `shown`, the schema of the resume data `tool` takes). A call that
    /// waits for its output or for a runtime is nobody's to be told of.
    pub(crate) fn waiting(
        self,
        tool: &Tool,
        call: &PendingCall,
        shown: Value,
    ) -> Vec<Notification> {
        let (call_id, tool_id) = (&call.head.call_id, &call.head.tool_id);
        match call.kind {
            PendingKind::Approval => {
                let required = call
                    .approvals
                    .clone()
                    .unwrap_or_else(|| RequiredApprovals::new(1));
                // A new call's version: what a decision on it (a link in
                // the message) names.
                let digest = StoredCall::pending(call.clone()).digest();
                let mut data =
                    json!({ "requirement": required, "input": shown, "digest": digest.as_str() });
                add(
                    &mut data,
                    "expiresAtMs",
                    call.expires_at_ms.map(Value::from),
                );
                add(
                    &mut data,
                    "requester",
                    call.head.requester.clone().map(Value::from),
                );
                self.one(NotificationKind::ApprovalRequested, call_id, tool_id, data)
            }
            PendingKind::Suspended => self.suspended(tool, call_id, shown),
            PendingKind::Output | PendingKind::Task => Vec::new(),
        }
    }

    /// The call `call_id` of `tool` suspended, with its payload as `shown`.
    pub(crate) fn suspended(self, tool: &Tool, call_id: &str, shown: Value) -> Vec<Notification> {
        let schema = tool.definition().resume_schema.clone();
        let mut data = json!({ "payload": shown });
        add(&mut data, "resumeSchema", schema);
        self.one(NotificationKind::Suspended, call_id, tool.id(), data)
    }

    /// `by` gave one of the approvals `call` needs (`required`), on the
    /// version `digest` names.
    pub(crate) fn granted(
        self,
        call: &PendingCall,
        by: &str,
        digest: &str,
        required: &RequiredApprovals,
    ) -> Vec<Notification> {
        let data = json!({ "by": by, "digest": digest, "requirement": required });
        let head = &call.head;
        self.one(
            NotificationKind::ApprovalGranted,
            &head.call_id,
            &head.tool_id,
            data,
        )
    }

    /// `decision` on `call` took effect, by `by` (none: the application,
    /// without a principal), with the principals whose grants it completed.
    pub(crate) fn decided(
        self,
        call: &PendingCall,
        decision: &Decision,
        by: Option<&str>,
        approved_by: Option<&[String]>,
    ) -> Vec<Notification> {
        let head = &call.head;
        let mut data = json!({});
        add(&mut data, "by", by.map(Value::from));
        if let Decision::Resume(_) = decision {
            return self.one(
                NotificationKind::Resumed,
                &head.call_id,
                &head.tool_id,
                data,
            );
        }
        add(&mut data, "action", Some(Value::from(decision.step())));
        if let Decision::Decline(reason) = decision {
            add(&mut data, "reason", reason.clone().map(Value::from));
        }
        add(&mut data, "approvedBy", approved_by.map(|p| json!(p)));
        self.one(
            NotificationKind::Decided,
            &head.call_id,
            &head.tool_id,
            data,
        )
    }

    /// `call` waited for approval past its expiry and is declined.
    pub(crate) fn expired(self, call: &PendingCall) -> Vec<Notification> {
        let data = json!({ "expiresAtMs": call.expires_at_ms });
        let head = &call.head;
        self.one(
            NotificationKind::Expired,
            &head.call_id,
            &head.tool_id,
            data,
        )
    }

    /// What the settlement of the stored call `call_id` of `tool`
    /// notifies: a background task's end, by how it settled (which a
    /// refused commit may change); nothing for other calls, whose
    /// decisions were notified.
    pub(crate) fn settled<'a>(
        self,
        tool: &'a Tool,
        call_id: &'a str,
    ) -> impl Fn(&Settlement) -> Vec<Notification> + 'a {
        let background = tool
            .definition()
            .background
            .as_ref()
            .is_some_and(|b| b.enabled);
        move |settlement| match settlement {
            Settlement::Settled(outcome) if background => {
                self.task_ended(call_id, tool.id(), outcome)
            }
            Settlement::Settled(_) | Settlement::Suspended { .. } => Vec::new(),
        }
    }

    /// The background task `call_id` of `tool_id` ended with `outcome`.
    fn task_ended(
        self,
        call_id: &str,
        tool_id: &str,
        outcome: &RecordedOutcome,
    ) -> Vec<Notification> {
        let (kind, data) = match outcome {
            RecordedOutcome::Completed { .. } => (NotificationKind::TaskCompleted, json!({})),
            RecordedOutcome::Failed { error, .. } => {
                (NotificationKind::TaskFailed, json!({ "error": error }))
            }
            RecordedOutcome::Aborted => (NotificationKind::TaskFailed, json!({ "aborted": true })),
            RecordedOutcome::Declined { reason } => {
                (NotificationKind::TaskFailed, json!({ "declined": reason }))
            }
        };
        self.one(kind, call_id, tool_id, data)
    }
}

/// Sets `key` of the object `data` to `value` when there is one.
fn add(data: &mut Value, key: &str, value: Option<Value>) {
    if let (Some(object), Some(value)) = (data.as_object_mut(), value) {
        object.insert(key.to_owned(), value);
    }
}
