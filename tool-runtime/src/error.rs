//! What can go wrong when using a runtime: misuse (an unknown call id, a
//! second approval) and store failures. Tool failures are not errors here:
//! they are [`CallOutcome::Failed`](crate::CallOutcome::Failed) results the model reads.

use tool_core::{BuildError, Excerpt};

use crate::store::StoreError;

/// A misuse of the runtime or a failure of its pending store.
///
/// ```
/// use tool_runtime::{Runtime, RuntimeError};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let runtime = Runtime::builder().build().unwrap();
/// let error = runtime.approve("no-such-call").await.unwrap_err();
/// assert!(matches!(error, RuntimeError::UnknownCall { .. }));
/// assert!(error.to_string().contains("no-such-call"));
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A tool could not be added (for example two tools share one id).
    #[error("cannot build the runtime: {0}")]
    Build(#[from] BuildError),
    /// No stored call has this id: it never paused (or it settled longer
    /// ago than the runtime's retention).
    #[error(
        "no stored call with id {:?}: it never waited for approval or resume data, or it settled longer ago than the retention", Excerpt::of(.call_id)
    )]
    UnknownCall {
        /// The id asked for.
        call_id: String,
    },
    /// The call settled, but the store no longer keeps its outcome: it was
    /// among the oldest settled calls beyond the size bound of the
    /// retention ([`RuntimeBuilder::settled_limit`](crate::RuntimeBuilder::settled_limit)),
    /// purged while younger than the time bound.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tool = Tool::builder("echo").description("Echo").require_approval(true)
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(tool).settled_limit(1).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "echo", json!({}))).await;
    /// runtime.call(ToolCall::new("c2", "echo", json!({}))).await;
    /// runtime.decline("c1", None).await.unwrap();
    /// runtime.decline("c2", None).await.unwrap();
    /// // One settled call kept: c1's outcome was purged, and the answer says so.
    /// let error = runtime.approve("c1").await.unwrap_err();
    /// assert!(matches!(error, RuntimeError::Purged { limit: 1, .. }), "{error}");
    /// assert!(error.to_string().contains("purged"));
    /// # });
    /// ```
    #[error(
        "call {:?} settled, but its outcome was purged: the store keeps the most recently settled calls only ({limit} by this runtime's RuntimeBuilder::settled_limit), and this one was older", Excerpt::of(.call_id)
    )]
    Purged {
        /// The id asked for.
        call_id: String,
        /// How many settled calls this runtime keeps.
        limit: usize,
    },
    /// The call was decided and is running now (on this or another runtime
    /// instance); ask again once it settles to get its outcome.
    #[error(
        "call {:?} was already decided and is running; ask again once it settles to get its outcome", Excerpt::of(.call_id)
    )]
    Running {
        /// The id asked for.
        call_id: String,
    },
    /// The call is suspended, not waiting for approval (nor for its output).
    #[error("call {:?} is not waiting for approval: it is suspended; use resume", Excerpt::of(.call_id))]
    NotAwaitingApproval {
        /// The id asked for.
        call_id: String,
    },
    /// The call is waiting for approval, not suspended.
    #[error(
        "call {:?} is not suspended: it is waiting for approval; use approve or decline", Excerpt::of(.call_id)
    )]
    NotSuspended {
        /// The id asked for.
        call_id: String,
    },
    /// The call is to a declaration-only tool and waits for its output:
    /// it cannot be approved or resumed.
    #[error(
        "call {:?} waits for its output from the application (its tool has no execute function): use respond or decline", Excerpt::of(.call_id)
    )]
    AwaitingOutput {
        /// The id asked for.
        call_id: String,
    },
    /// A typed decision or read ([`Runtime::resume_as`](crate::Runtime::resume_as),
    /// [`PendingCall::suspend_payload`](crate::PendingCall::suspend_payload))
    /// does not fit the call: it is another tool's call, or a value does
    /// not convert to or from the tool's type.
    #[error("call {:?} does not fit the typed decision: {reason}", Excerpt::of(.call_id))]
    TypeMismatch {
        /// The call.
        call_id: String,
        /// What does not fit.
        reason: String,
    },
    /// A decision named the item by a digest ([`Runtime::decide_as`](crate::Runtime::decide_as))
    /// that is not the call's as it is now: the call changed since the
    /// person saw it, or the digest is another call's. Nothing changed;
    /// the attempt is in the audit log.
    #[error(
        "call {:?} is not the item decided on: its digest changed (it was decided, resumed or edited since it was read) or belongs to another call; read it again",
        Excerpt::of(.call_id)
    )]
    StaleDigest {
        /// The call.
        call_id: String,
    },
    /// Another decision on the call took effect first
    /// ([`Runtime::decide_as`](crate::Runtime::decide_as)); this one changed nothing.
    #[error("call {:?} was decided already: {}", Excerpt::of(.call_id), .outcome.to_model_value())]
    AlreadyDecided {
        /// The call.
        call_id: String,
        /// What the decision that took effect recorded.
        outcome: Box<crate::CallOutcome>,
    },
    /// The principal who asked for the call tried to approve it (or edit
    /// it, or answer in its place) on a runtime that forbids it
    /// ([`RuntimeBuilder::forbid_self_approval`](crate::RuntimeBuilder::forbid_self_approval)).
    /// Nothing changed; the attempt is in the audit log.
    #[error(
        "call {:?} was asked for by {:?}, who may not approve it: another principal must decide it",
        Excerpt::of(.call_id),
        Excerpt::of(.principal)
    )]
    SelfApproval {
        /// The call.
        call_id: String,
        /// Who asked for it and tried to approve it.
        principal: String,
    },
    /// A decision that makes the call go on (approve, edit, respond,
    /// resume) named no principal where the rules need one: separation of
    /// duties is on, or the call needs several approvals. Decide with
    /// [`Runtime::decide_as`](crate::Runtime::decide_as); code that decides
    /// without a person names the system
    /// ([`Principal::system`](crate::Principal::system)).
    #[error(
        "call {:?} cannot be decided without naming who decides: {why}; decide with decide_as (code deciding alone names Principal::system)", Excerpt::of(.call_id)
    )]
    PrincipalRequired {
        /// The call.
        call_id: String,
        /// Which rule needs a principal.
        why: String,
    },
    /// The call needs the approval of principals in a group (its approval
    /// policy said so), and this one is not in it.
    #[error(
        "call {:?} needs the approval of principals in group {:?}, and {:?} is not in it", Excerpt::of(.call_id), Excerpt::of(.group), Excerpt::of(.principal)
    )]
    NotInGroup {
        /// The call.
        call_id: String,
        /// Who tried.
        principal: String,
        /// The group it needs.
        group: String,
    },
    /// An application tried to append an audit entry of a kind the
    /// runtime alone writes (a request, a decision, a grant).
    #[error(
        "an audit entry of kind {kind:?} is the runtime's to write, as the decision takes effect: append Refused or Noted entries only"
    )]
    ReservedAuditKind {
        /// The kind refused.
        kind: crate::store::AuditKind,
    },
    /// A standing rule was not made or revoked: its author may not make
    /// rules, its tool or predicate is unknown, its condition cannot hold,
    /// or its id is taken ([`StandingRules`](crate::StandingRules)).
    #[error("standing rule {:?} refused: {reason}", Excerpt::of(.rule_id))]
    RuleRefused {
        /// The rule.
        rule_id: String,
        /// Why.
        reason: String,
    },
    /// No call with this id is running, so there is nothing to cancel.
    #[error("no running call with id {:?}", Excerpt::of(.call_id))]
    NotRunning {
        /// The id asked for.
        call_id: String,
    },
    /// No background task has this id.
    #[error("no background task with id {:?}", Excerpt::of(.task_id))]
    UnknownTask {
        /// The id asked for.
        task_id: String,
    },
    /// A tool needs application state the runtime was not given
    /// ([`RuntimeBuilder::state`](crate::RuntimeBuilder::state)).
    #[error(
        "tool {:?} needs application state the runtime was not given: {types} (give it with RuntimeBuilder::state)", Excerpt::of(.tool_id)
    )]
    MissingState {
        /// The tool.
        tool_id: String,
        /// The missing types, as `std::any::type_name` names them.
        types: String,
    },
    /// A transactional tool cannot run as declared (see
    /// `ToolBuilder::transactional`): the store cannot run a tool in its
    /// transactions, or the tool runs in the background.
    #[error("tool {:?} is transactional, but {reason}", Excerpt::of(.tool_id))]
    Transactional {
        /// The tool.
        tool_id: String,
        /// Why it cannot run.
        reason: String,
    },
    /// A stored call names a tool this runtime does not have; it stays stored.
    #[error(
        "pending call {:?} is for tool {:?}, which this runtime does not have; it stays pending", Excerpt::of(.call_id), Excerpt::of(.tool_id)
    )]
    MissingTool {
        /// The stored call.
        call_id: String,
        /// The tool it names.
        tool_id: String,
    },
    /// The call ran on this instance, but how it ended here is not what the
    /// store records, or not yet: its claim was taken over or ran out while
    /// the store could not be reached (the call was stopped here), or the
    /// store has not taken the outcome within one lease (this instance goes
    /// on offering it in the background). Ask again with the call id
    /// (`approve`, `resume`, `wait`, `stored`): a decision on a settled
    /// call answers with the outcome the store recorded.
    #[error(
        "the outcome of call {:?} is not recorded: {reason}; ask again with its id for the outcome the store records", Excerpt::of(.call_id)
    )]
    NotRecorded {
        /// The call.
        call_id: String,
        /// Why.
        reason: String,
    },
    /// A dispatcher's setup cannot work
    /// ([`DispatcherBuilder::build`](crate::DispatcherBuilder::build)): no
    /// sink, two of one name, a sink's timeout as long as the lease...
    #[error("cannot build the dispatcher: {reason}")]
    Dispatcher {
        /// What is wrong with it.
        reason: String,
    },
    /// The pending store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
