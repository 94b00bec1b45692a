//! Decisions on stored calls (approve, decline, resume, respond) and the recovery of
//! calls whose runtime died, written once.
//!
//! A decision looks the call up, checks what it can before anything changes
//! (the tool is here, resume data is valid), then makes one atomic
//! transition of the store: of concurrent decisions exactly one wins; the
//! others are told the call is running, or get its recorded outcome. The
//! winner runs the call under a lease. Each decision runs as a task of its
//! own, so dropping its future (a client that went away, a timeout) cannot
//! leave a claimed call half-run: it finishes and its outcome is recorded.

use std::time::Duration;

use serde::{Deserialize as _, Serialize};
use serde_json::{Value, json};
use tool_core::transform::{CallValues, Phase};
use tool_core::{
    AgentContext, ApprovalRequirement, ErrorKind, Extensions, ModelError, RawInput, Reconciled,
    Tool, TypedTool,
};
use tracing::Instrument as _;

use crate::approval_rules::{Quorum, granted_by, refused_attempt};
use crate::before_run::{BeforeRun, RunCheck, RunKind};
use crate::call::{CallHead, ToolCall};
use crate::call_outcome::CallOutcome;
use crate::call_path::{CallPath, Entry, call_span, now_ms};
use crate::claims::{Claim, Lease, LeaseLost, Lookup, NotRecorded, Verdict};
use crate::decision::Decision;
use crate::error::RuntimeError;
use crate::events::{EventKind, Payload};
use crate::principal::Decider;
use crate::store::{
    AuditEntry, AuditKind, CallState, Expected, PendingCall, PendingKind, PendingQuery,
    RecordedOutcome, RequiredApprovals, Settlement, StoredCall,
};

/// Typed reads of a stored call, for the application's typed decisions.
impl PendingCall {
    /// What the call suspended with, as the suspend type of the typed tool
    /// `T` (`#[tool]`'s generated struct): `None` when it is not suspended
    /// (it waits for approval or for its output). The JSON form is
    /// [`payload`](Self::payload). See [`Runtime::resume_as`](crate::Runtime::resume_as).
    ///
    /// # Errors
    ///
    /// Fails with [`RuntimeError::TypeMismatch`] when it
    /// is a call of another tool, or the payload does not read as `T`'s
    /// suspend type (stored by another version of the tool).
    pub fn suspend_payload<T: TypedTool>(&self) -> Result<Option<T::Suspend>, RuntimeError> {
        let mismatch = |reason: String| RuntimeError::TypeMismatch {
            call_id: self.head.call_id.clone(),
            reason,
        };
        if self.head.tool_id != T::ID {
            return Err(mismatch(format!(
                "it is a call of tool {:?}, not of {:?}",
                self.head.tool_id,
                T::ID
            )));
        }
        let Some(payload) = &self.payload else {
            return Ok(None);
        };
        T::Suspend::deserialize(payload).map(Some).map_err(|error| {
            mismatch(format!(
                "its suspend payload does not read as the tool's type: {error}"
            ))
        })
    }
}

/// A call [`Runtime::recover`](crate::Runtime::recover) found interrupted, and what became of it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Recovered {
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool_id: String,
    /// Whether it ran again (its tool is `retry_safe`); otherwise it was
    /// settled as failed, "interrupted".
    pub rerun: bool,
    /// Its final outcome, as recorded.
    pub outcome: CallOutcome,
}

/// The decisions on stored calls: approve, decline, resume, respond, and the
/// recovery of calls whose instance died. Each claims the call in one atomic
/// store transition and hands it to the call path. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Decisions {
    path: CallPath,
    before_run: Option<BeforeRun>,
}

impl Decisions {
    pub(crate) fn new(path: CallPath, before_run: Option<BeforeRun>) -> Self {
        Decisions { path, before_run }
    }

    /// The call path the decided calls run on.
    pub(crate) fn path(&self) -> &CallPath {
        &self.path
    }

    /// Makes `decision` on the stored call `call_id` as a task of its own
    /// ([`Runtime::decide`](crate::Runtime::decide)); with `tool_id`, only
    /// on a call of that tool (a typed decision names its tool).
    pub(crate) fn decide(
        &self,
        call_id: &str,
        decision: Decision,
        extensions: Extensions,
        tool_id: Option<&'static str>,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.decide_by(call_id, decision, extensions, tool_id, None)
    }

    /// [`decide`](Self::decide), by `decider` when given: the call must
    /// have the digest it names, a decision that loses to another is an
    /// error, and both are recorded in the audit log.
    pub(crate) fn decide_by(
        &self,
        call_id: &str,
        decision: Decision,
        extensions: Extensions,
        tool_id: Option<&'static str>,
        decider: Option<Decider>,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        let (decisions, call_id) = (self.clone(), call_id.to_owned());
        async move {
            let id = call_id.clone();
            detached(&id, async move {
                let deciding = DecidingCall {
                    call_id: &call_id,
                    tool_id,
                    decider: decider.as_ref(),
                };
                decisions.decide_here(deciding, decision, extensions).await
            })
            .await
        }
    }

    /// Makes a typed decision on a call of tool `tool_id`: `decision` is
    /// the typed value as JSON, or why it has none.
    pub(crate) fn decide_typed(
        &self,
        call_id: &str,
        decision: Result<Decision, RuntimeError>,
        tool_id: &'static str,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        let deciding = decision
            .map(|decision| self.decide(call_id, decision, Extensions::new(), Some(tool_id)));
        async move { deciding?.await }
    }

    /// A decision, in four steps: check it (before anything changes), make
    /// its claim (the values it brings checked), commit it (one atomic
    /// transition of the store, audited), and run the call it claimed.
    async fn decide_here(
        &self,
        deciding: DecidingCall<'_>,
        decision: Decision,
        extensions: Extensions,
    ) -> Result<CallOutcome, RuntimeError> {
        let (stored, approved_by) = match self.check(deciding, &decision).await? {
            Checked::GoesOn(stored, approved_by) => (stored, approved_by),
            Checked::Answered(outcome) => return Ok(outcome),
        };
        let span = call_span(decision.step(), &stored.call.head.tool_id, deciding.call_id);
        let claim = match self
            .claim_for(&stored, &decision)
            .instrument(span.clone())
            .await?
        {
            Ok(claim) => claim,
            Err(left_waiting) => return Ok(left_waiting),
        };
        let claim = match claim {
            Claim::RunEdited(edited) => match self
                .edited_claim(&stored, edited)
                .instrument(span.clone())
                .await?
            {
                Edited::Runs(claim) => claim,
                Edited::Revised(edited, approvals) => {
                    return self
                        .revise(
                            deciding,
                            &stored,
                            &decision,
                            (edited, approvals),
                            extensions,
                            span,
                        )
                        .await;
                }
                Edited::Refused(left_waiting) => return Ok(left_waiting),
            },
            claim => claim,
        };
        let committed = self
            .commit(deciding, &stored, &decision, claim, approved_by)
            .instrument(span.clone())
            .await?;
        match committed {
            Committed::Answered(outcome) => Ok(outcome),
            Committed::Claimed(stored, lease) => {
                self.run_decided(stored, lease, decision, extensions, span)
                    .await
            }
            // Only an edit under several approvals revises (above).
            Committed::Revised(_) => Err(RuntimeError::Running {
                call_id: deciding.call_id.to_owned(),
            }),
        }
    }

    /// What may be checked before anything changes: the call still waits
    /// (else the decision lost) and has not expired, the approval rules
    /// let this decider take this decision, the tool is the one named, and
    /// an approval completes the count of grants (else it is recorded and
    /// the call waits on).
    async fn check(
        &self,
        deciding: DecidingCall<'_>,
        decision: &Decision,
    ) -> Result<Checked, RuntimeError> {
        let DecidingCall {
            call_id,
            tool_id,
            decider,
        } = deciding;
        let calls = self.path.stored();
        let stored = match calls.lookup(call_id, decision.pending_kinds()).await? {
            Lookup::Settled(outcome) => {
                return self
                    .lost(deciding, decision, outcome)
                    .await
                    .map(Checked::Answered);
            }
            Lookup::Pending(stored) => stored,
        };
        if stored.call.expired(now_ms()) {
            let outcome = self.expire(&stored).await?;
            return self
                .lost(deciding, decision, outcome)
                .await
                .map(Checked::Answered);
        }
        let rules = self.path.approval_rules();
        if let Err(refusal) = rules.check(&stored, decision, decider) {
            if let Some(attempt) = refusal.audit {
                calls.audit(attempt).await;
            }
            return Err(refusal.error);
        }
        if let Some(expected) = tool_id.filter(|id| *id != stored.call.head.tool_id) {
            return Err(RuntimeError::TypeMismatch {
                call_id: call_id.to_owned(),
                reason: format!(
                    "it is a call of tool {:?}, not of {expected:?}",
                    stored.call.head.tool_id
                ),
            });
        }
        match rules.quorum(calls, &stored, decision, decider).await? {
            Quorum::NotNeeded => Ok(Checked::GoesOn(stored, None)),
            Quorum::Reached(principals) => Ok(Checked::GoesOn(stored, Some(principals))),
            Quorum::Waiting => Ok(Checked::Answered(CallOutcome::ApprovalRequired {
                call_id: call_id.to_owned(),
                input: stored.call.input.clone(),
                resume_schema: Some(crate::approval_policy::decision_schema()),
            })),
        }
    }

    /// The store transition `decision` makes on `stored`, its values
    /// checked first: an edit, resume data or an output the tool refuses
    /// leaves the call waiting, and the decider reads why (`Err`).
    async fn claim_for(
        &self,
        stored: &StoredCall,
        decision: &Decision,
    ) -> Result<Result<Claim, CallOutcome>, RuntimeError> {
        let call = &stored.call;
        let call_id = call.head.call_id.as_str();
        let claim = match decision {
            Decision::Decline(reason) => Claim::Settle(RecordedOutcome::Declined {
                reason: reason.clone(),
            }),
            Decision::Approve => {
                self.tool_of(call)?;
                Claim::Run(None)
            }
            // Checked here, admitted once, when the call runs: what does
            // not fit leaves the call waiting, unclaimed.
            Decision::Edit(changes) => {
                let tool = self.tool_of(call)?;
                let edited = tool
                    .validate_edit(&call.input, changes)
                    .and_then(|edited| tool.validate_input(edited));
                match edited {
                    Ok(edited) => Claim::RunEdited(edited),
                    Err(error) => {
                        let known = CallValues::default().with(Phase::Input, &call.input);
                        let left = self.left_waiting(&tool, call_id, error, known, "edit");
                        return Ok(Err(left.await));
                    }
                }
            }
            Decision::Resume(data) => {
                let tool = self.tool_of(call)?;
                if let Err(error) = tool.check_resume_data(data) {
                    let known = CallValues {
                        input: Some(&call.input),
                        suspend_payload: call.payload.as_ref(),
                        resume_data: Some(data),
                        ..CallValues::default()
                    };
                    let left = self.left_waiting(&tool, call_id, error, known, "resume data");
                    return Ok(Err(left.await));
                }
                Claim::Run(Some(data.clone()))
            }
            Decision::Respond(output) => {
                let tool = self.tool_of(call)?;
                match tool.check_output(output) {
                    Ok(model_output) => Claim::Settle(RecordedOutcome::Completed {
                        output: output.clone(),
                        model_output,
                        state: None,
                    }),
                    Err(error) => {
                        let known = CallValues::default().with(Phase::Input, &call.input);
                        let left = self.left_waiting(&tool, call_id, error, known, "output");
                        return Ok(Err(left.await));
                    }
                }
            }
        };
        Ok(Ok(claim))
    }

    /// Makes `claim` on `stored` in one atomic transition (for a decider,
    /// on the version their digest names) and audits it: the call settled
    /// by it (a decline, a response), or claimed to run; or the decision
    /// lost to another.
    async fn commit(
        &self,
        deciding: DecidingCall<'_>,
        stored: &StoredCall,
        decision: &Decision,
        claim: Claim,
        approved_by: Option<Vec<String>>,
    ) -> Result<Committed, RuntimeError> {
        let (calls, call_id, decider) = (self.path.stored(), deciding.call_id, deciding.decider);
        let settles = match &claim {
            Claim::Settle(outcome) => Some(outcome.clone()),
            Claim::Run(_) | Claim::RunEdited(_) | Claim::Revise(..) => None,
        };
        // The kind found: the transition asks for it, so a call that
        // changed in between is not decided.
        let expected = match decider {
            Some(_) => Expected::from(stored.call.kind).at(stored.epoch),
            None => Expected::from(stored.call.kind),
        };
        let by = decider.map(|decider| decider.principal.to_string());
        let notified = match &claim {
            // A revision waits on: its editor's grant, or the decision it
            // completes, is notified next.
            Claim::Revise(..) => Vec::new(),
            Claim::Run(_) | Claim::Settle(_) | Claim::RunEdited(_) => {
                calls.notifications().decided(
                    &stored.call,
                    decision,
                    by.as_deref(),
                    approved_by.as_deref(),
                )
            }
        };
        let verdict = match calls.decide(call_id, expected, claim, notified).await {
            Err(RuntimeError::StaleDigest { .. }) if let Some(decider) = decider => {
                let attempt =
                    refused_attempt(&stored.call, decision, decider, "stale or foreign digest");
                calls.audit(attempt).await;
                return Err(RuntimeError::StaleDigest {
                    call_id: call_id.to_owned(),
                });
            }
            verdict => verdict?,
        };
        if let (
            Some(decider),
            Verdict::Settled(after) | Verdict::Claimed(after, _) | Verdict::Revised(after),
        ) = (decider, &verdict)
        {
            let mut entry = self
                .decided_entry(after, decision, decider, &stored.call.input)
                .await;
            if let Some(principals) = approved_by {
                entry = entry.detail(json!({ "approvedBy": principals }));
            }
            calls.audit(entry).await;
        }
        match verdict {
            Verdict::AlreadySettled(outcome) => self
                .lost(deciding, decision, outcome)
                .await
                .map(Committed::Answered),
            Verdict::Settled(after) => Ok(Committed::Answered(
                self.settled(&after.call, settles).await,
            )),
            Verdict::Claimed(after, lease) => Ok(Committed::Claimed(after, lease)),
            Verdict::Revised(after) => Ok(Committed::Revised(after)),
        }
    }

    /// What an edit (checked against the tool's edit schema) does, once
    /// the approval policy is asked again on the edited input: a call
    /// that still needs one approval from anyone runs edited, as the
    /// editor's approval; one that now needs several, or members of a
    /// group, or needed several already, waits on as a new version
    /// ([`revise`](Self::revise)); an edit the policy refuses leaves the
    /// call as it was.
    async fn edited_claim(
        &self,
        stored: &StoredCall,
        edited: Value,
    ) -> Result<Edited, RuntimeError> {
        let call = &stored.call;
        let rules = self.path.approval_rules();
        let approvals = match self.path.stored_requirement(call, &edited).await {
            ApprovalRequirement::Refused { reason } => {
                let tool = self.tool_of(call)?;
                let error = ModelError::new(
                    ErrorKind::InputValidation,
                    format!(
                        "Tool {} refuses the edited call: {reason}",
                        call.head.tool_id
                    ),
                );
                let known = CallValues::default().with(Phase::Input, &call.input);
                let left = self.left_waiting(&tool, &call.head.call_id, error, known, "edit");
                return Ok(Edited::Refused(left.await));
            }
            ApprovalRequirement::NotRequired => RequiredApprovals::new(1),
            requirement => rules.required_approvals(&call.head.tool_id, &requirement),
        };
        let several = rules.required_for(stored).principals > 1;
        if approvals.principals > 1 || approvals.group.is_some() || several {
            return Ok(Edited::Revised(edited, approvals));
        }
        Ok(Edited::Runs(Claim::RunEdited(edited)))
    }

    /// An edit that makes the call a new version needing `approvals`: it
    /// waits on (grants of the earlier version no longer count), and the
    /// edit counts as its editor's grant of the new version; the call runs
    /// if that completes what it needs. An editor outside the new version's
    /// group edits it without granting it.
    async fn revise(
        &self,
        deciding: DecidingCall<'_>,
        stored: &StoredCall,
        decision: &Decision,
        (edited, approvals): (Value, RequiredApprovals),
        extensions: Extensions,
        span: tracing::Span,
    ) -> Result<CallOutcome, RuntimeError> {
        let call = &stored.call;
        let Some(editor) = deciding.decider else {
            // The rules need a principal for several approvals: checked.
            return Err(RuntimeError::PrincipalRequired {
                call_id: call.head.call_id.clone(),
                why: "an edit counts as its editor's approval".to_owned(),
            });
        };
        let claim = Claim::Revise(edited, Some(approvals));
        let revised = match self
            .commit(deciding, stored, decision, claim, None)
            .instrument(span.clone())
            .await?
        {
            Committed::Revised(revised) => revised,
            Committed::Answered(outcome) => return Ok(outcome),
            Committed::Claimed(..) => {
                return Err(RuntimeError::Running {
                    call_id: call.head.call_id.clone(),
                });
            }
        };
        self.editors_grant(deciding, editor, revised, extensions, span)
            .await
    }

    /// The editor's grant of the version their edit made: recorded, and
    /// the call runs if it completes the count.
    async fn editors_grant(
        &self,
        deciding: DecidingCall<'_>,
        editor: &Decider,
        revised: StoredCall,
        extensions: Extensions,
        span: tracing::Span,
    ) -> Result<CallOutcome, RuntimeError> {
        let rules = self.path.approval_rules();
        let grant = Decider::new(editor.principal.clone(), revised.digest());
        let granting = DecidingCall {
            decider: Some(&grant),
            ..deciding
        };
        let waiting = || CallOutcome::ApprovalRequired {
            call_id: revised.call.head.call_id.clone(),
            input: revised.call.input.clone(),
            resume_schema: Some(crate::approval_policy::decision_schema()),
        };
        if rules
            .check(&revised, &Decision::Approve, Some(&grant))
            .is_err()
        {
            return Ok(waiting());
        }
        let approved_by = match rules
            .quorum(
                self.path.stored(),
                &revised,
                &Decision::Approve,
                Some(&grant),
            )
            .await?
        {
            Quorum::Waiting => return Ok(waiting()),
            Quorum::NotNeeded => None,
            Quorum::Reached(principals) => Some(principals),
        };
        let committed = self
            .commit(
                granting,
                &revised,
                &Decision::Approve,
                Claim::Run(None),
                approved_by,
            )
            .instrument(span.clone())
            .await?;
        match committed {
            Committed::Claimed(claimed, lease) => {
                self.run_decided(claimed, lease, Decision::Approve, extensions, span)
                    .await
            }
            Committed::Answered(outcome) => Ok(outcome),
            Committed::Revised(_) => Err(RuntimeError::Running {
                call_id: revised.call.head.call_id.clone(),
            }),
        }
    }

    /// Runs the call `decision` claimed, after its event (`Resumed`, with
    /// the resume data or the approval as the tool's transforms show it).
    async fn run_decided(
        &self,
        stored: StoredCall,
        lease: Lease,
        decision: Decision,
        extensions: Extensions,
        span: tracing::Span,
    ) -> Result<CallOutcome, RuntimeError> {
        let (call_id, tool_id) = (
            stored.call.head.call_id.as_str(),
            stored.call.head.tool_id.as_str(),
        );
        let tool = self.path.tool(tool_id).cloned();
        let shown = match &decision {
            Decision::Resume(data) => data.clone(),
            _ => json!({ "approved": true }),
        };
        {
            let _entered = span.enter();
            tracing::info!("tool call {}", decision.step_past());
        }
        let known = CallValues {
            input: Some(&stored.call.input),
            suspend_payload: stored.call.payload.as_ref(),
            ..CallValues::default()
        };
        let payload = || {
            Payload::of(
                tool.as_ref(),
                call_id,
                tool_id,
                Phase::Resume,
                &shown,
                known,
            )
        };
        let event = |payload| EventKind::Resumed { payload };
        let emitted = self
            .path
            .events()
            .emit_shown(call_id, tool_id, payload, event);
        emitted.instrument(span).await;
        let resume_data = match decision {
            Decision::Resume(data) => Some(data),
            _ => None,
        };
        self.run_stored(stored, lease, resume_data, extensions, RunKind::First)
            .await
    }

    /// The approvals of call `call_id` so far ([`CallInbox::approvals`](crate::CallInbox::approvals)).
    pub(crate) fn approvals(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Approvals, RuntimeError>> + Send + 'static {
        let (decisions, call_id) = (self.clone(), call_id.to_owned());
        async move {
            let calls = decisions.path.stored();
            let stored = calls.lookup(&call_id, &[PendingKind::Approval]).await?;
            let Lookup::Pending(stored) = stored else {
                return Err(RuntimeError::NotAwaitingApproval { call_id });
            };
            let required = decisions.path.approval_rules().required_for(&stored);
            Ok(Approvals {
                required: required.principals,
                group: required.group,
                granted: granted_by(calls, &call_id, &stored.digest()).await?,
            })
        }
    }

    /// The answer to a decision whose value (`what`: resume data, an edit,
    /// an output) `tool` refused before anything changed: the call still
    /// waits, and the decider gets the model-readable error.
    async fn left_waiting(
        &self,
        tool: &Tool,
        call_id: &str,
        error: ModelError,
        known: CallValues<'_>,
        what: &str,
    ) -> CallOutcome {
        tracing::info!(%error, "{what} rejected; the call still waits");
        self.path
            .failed(Some(tool), call_id, tool.id(), error, known)
            .await
    }

    /// The answer to `decision`, which another decision (or the call's
    /// expiry) beat: its recorded outcome; for a decider, an error carrying
    /// it, and the attempt in the audit log as refused (`expired`, or
    /// `decided already`), however the loss was noticed.
    async fn lost(
        &self,
        deciding: DecidingCall<'_>,
        decision: &Decision,
        outcome: CallOutcome,
    ) -> Result<CallOutcome, RuntimeError> {
        let Some(decider) = deciding.decider else {
            return Ok(outcome);
        };
        let calls = self.path.stored();
        let call_id = deciding.call_id;
        let tool_id = match calls.get(call_id).await {
            Ok(Some(stored)) => stored.call.head.tool_id,
            // Purged or unreadable meanwhile: the entry still names the call.
            _ => String::new(),
        };
        let expired =
            matches!(&outcome, CallOutcome::Declined { reason: Some(reason) } if reason == EXPIRED);
        let reason = if expired { EXPIRED } else { "decided already" };
        let attempt = AuditEntry::new(AuditKind::Refused, call_id, tool_id, decision.step())
            .principal(decider.principal.to_string())
            .digest(&decider.digest)
            .reason(reason);
        calls.audit(attempt).await;
        Err(RuntimeError::AlreadyDecided {
            call_id: call_id.to_owned(),
            outcome: Box::new(outcome),
        })
    }

    /// Declines `stored`, waiting for approval past its expiry, with the
    /// reason `expired`, unless another decision settled it first; either
    /// way, what was recorded. The expiry goes to the audit log once, by
    /// whichever runtime made it.
    async fn expire(&self, stored: &StoredCall) -> Result<CallOutcome, RuntimeError> {
        let call = &stored.call;
        let expired = RecordedOutcome::Declined {
            reason: Some(EXPIRED.to_owned()),
        };
        let calls = self.path.stored();
        let verdict = calls
            .decide(
                &call.head.call_id,
                PendingKind::Approval.into(),
                Claim::Settle(expired.clone()),
                calls.notifications().expired(call),
            )
            .await?;
        match verdict {
            Verdict::Settled(stored) => {
                let entry = AuditEntry::new(
                    AuditKind::Decided,
                    &call.head.call_id,
                    &call.head.tool_id,
                    "expire",
                )
                .reason(EXPIRED);
                calls.audit(entry).await;
                Ok(self.settled(&stored.call, Some(expired)).await)
            }
            Verdict::AlreadySettled(outcome) => Ok(outcome),
            // A settlement never claims nor revises.
            Verdict::Claimed(..) | Verdict::Revised(_) => Err(RuntimeError::Running {
                call_id: call.head.call_id.clone(),
            }),
        }
    }

    /// Every call waiting for a decision ([`CallInbox::waiting`](crate::CallInbox::waiting)),
    /// those past their expiry declined on the way (and left out).
    pub(crate) fn waiting(
        &self,
    ) -> impl Future<Output = Result<Vec<StoredCall>, RuntimeError>> + Send + 'static {
        let decisions = self.clone();
        async move {
            let waiting = decisions.path.stored().waiting().await?;
            decisions.without_expired(waiting).await
        }
    }

    /// A page of the calls waiting for a decision ([`CallInbox::waiting_page`](crate::CallInbox::waiting_page)),
    /// those past their expiry declined on the way (and left out).
    pub(crate) fn waiting_page(
        &self,
        query: PendingQuery,
    ) -> impl Future<Output = Result<Vec<StoredCall>, RuntimeError>> + Send + 'static {
        let decisions = self.clone();
        async move {
            let page = decisions.path.stored().list_page(query).await?;
            decisions.without_expired(page).await
        }
    }

    /// `calls` but those past their expiry, which are declined `expired`.
    async fn without_expired(
        &self,
        calls: Vec<StoredCall>,
    ) -> Result<Vec<StoredCall>, RuntimeError> {
        let now = now_ms();
        if !calls.iter().any(|stored| stored.call.expired(now)) {
            return Ok(calls);
        }
        let mut current = Vec::with_capacity(calls.len());
        for stored in calls {
            if stored.call.expired(now) {
                self.expire(&stored).await?;
            } else {
                current.push(stored);
            }
        }
        Ok(current)
    }

    /// The audit entry of `decision`, which took effect on `stored` (whose
    /// input was `before`): its values as the tool's display transforms
    /// show them; an edit's, the input before and after.
    async fn decided_entry(
        &self,
        stored: &StoredCall,
        decision: &Decision,
        decider: &Decider,
        before: &Value,
    ) -> AuditEntry {
        let call = &stored.call;
        let mut entry = AuditEntry::new(
            AuditKind::Decided,
            &call.head.call_id,
            &call.head.tool_id,
            decision.step(),
        )
        .principal(decider.principal.to_string())
        .digest(&decider.digest);
        let (phase, value) = match decision {
            Decision::Decline(reason) => {
                if let Some(reason) = reason {
                    entry = entry.reason(reason);
                }
                return entry;
            }
            Decision::Approve => return entry,
            Decision::Resume(data) => (Phase::Resume, data),
            Decision::Respond(output) => (Phase::Output, output),
            Decision::Edit(_) => {
                let tool = self.path.tool(&call.head.tool_id);
                let mut shown = Vec::new();
                for input in [before, &call.input] {
                    let known = CallValues {
                        input: Some(input),
                        ..CallValues::default()
                    };
                    let payload = Payload::of(
                        tool,
                        &call.head.call_id,
                        &call.head.tool_id,
                        Phase::Input,
                        input,
                        known,
                    );
                    shown.push(payload.await.display);
                }
                let [before, after]: [Value; 2] = shown.try_into().unwrap_or_default();
                return entry.detail(json!({ "before": before, "after": after }));
            }
        };
        let known = CallValues {
            input: Some(&call.input),
            suspend_payload: call.payload.as_ref(),
            ..CallValues::default()
        };
        let tool = self.path.tool(&call.head.tool_id);
        let shown = Payload::of(
            tool,
            &call.head.call_id,
            &call.head.tool_id,
            phase,
            value,
            known,
        )
        .await;
        entry.detail(shown.display)
    }

    /// The outcome of `call`, which this decision settled with `settles`
    /// without running it (a decline, or a response), and its event.
    async fn settled(&self, call: &PendingCall, settles: Option<RecordedOutcome>) -> CallOutcome {
        let (call_id, tool_id) = (call.head.call_id.as_str(), call.head.tool_id.as_str());
        let events = self.path.events();
        let Some(outcome) = settles.map(CallOutcome::from) else {
            return CallOutcome::not_recorded(call_id, "a claim to run it settled it");
        };
        match &outcome {
            CallOutcome::Declined { reason } => {
                tracing::info!(reason, "tool call declined");
                events.emit(call_id, tool_id, || EventKind::Declined {
                    reason: reason.clone(),
                });
            }
            CallOutcome::Completed { output, .. } => {
                tracing::info!("tool call responded to: its output was given, it did not run");
                let tool = self.path.tool(tool_id);
                let known = CallValues {
                    input: Some(&call.input),
                    output: Some(output),
                    ..CallValues::default()
                };
                let payload = || Payload::of(tool, call_id, tool_id, Phase::Output, output, known);
                let event = |payload| EventKind::Output { payload };
                events.emit_shown(call_id, tool_id, payload, event).await;
            }
            _ => {}
        }
        outcome
    }

    /// Runs a claimed stored call through the pipeline, with the
    /// `extensions` its decider gave (an agent that decided it among them):
    /// its outcome as the store recorded it, or why it is not. A first run
    /// passes the `before_run` check: a call it says was interrupted is
    /// recovered instead; one it cannot check stays claimed (recovered
    /// when its lease runs out, as a call whose instance died).
    async fn run_stored(
        &self,
        stored: StoredCall,
        lease: Lease,
        resume_data: Option<Value>,
        extensions: Extensions,
        run: RunKind,
    ) -> Result<CallOutcome, RuntimeError> {
        if let (Some(check), RunKind::First) = (&self.before_run, run) {
            match check.check(&stored).await? {
                RunCheck::Run => {}
                RunCheck::Interrupted => {
                    let recovered =
                        Box::pin(self.recover_one(stored, lease.after_lost_run())).await?;
                    return Ok(recovered.outcome);
                }
            }
        }
        let held = lease.clone();
        let entry = match (stored.call.kind, resume_data) {
            // An output call is settled by its decision, never claimed to run.
            (PendingKind::Approval | PendingKind::Task | PendingKind::Output, _) => {
                Entry::Claimed(lease)
            }
            (PendingKind::Suspended, data) => Entry::Resumed {
                data: data.unwrap_or(Value::Null),
                payload: stored.call.payload.clone(),
                lease,
            },
        };
        // A decision that names no agent (the application's `approve` on an
        // agent's call) runs the call as the agent that made it.
        let agent = stored.call.head.agent.clone();
        let mut call = to_tool_call(stored.call);
        call.head.extensions = extensions;
        if let Some(agent) = agent.filter(|_| !call.head.extensions.contains::<AgentContext>()) {
            call.head.extensions.insert(agent);
        }
        let outcome = self.path.run_call(call, entry, None).await;
        if held.not_recorded() == Some(NotRecorded::Lost(LeaseLost::Expired)) {
            self.recover_later(&held);
        }
        recorded(&held, outcome)
    }

    /// A call stopped here when its lease ran out (the store could not be
    /// reached in time to renew it) is not left to an outside recovery:
    /// once the store lets its claim be taken over, this instance recovers
    /// it itself (runs it again where that is allowed, settles it as
    /// interrupted otherwise, as [`recover`](Self::recover) does), asking
    /// again while the store fails, until the claim is no longer the one
    /// that was lost.
    fn recover_later(&self, lost: &Lease) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (decisions, call_id, epoch) = (self.clone(), lost.call_id().to_owned(), lost.epoch());
        let takeover_after = self.path.stored().takeover_after();
        handle.spawn(async move {
            let mut wait = takeover_after;
            loop {
                tokio::time::sleep(wait).await;
                wait = (takeover_after / 4).max(Duration::from_millis(10));
                let still_lost = match decisions.path.stored().get(&call_id).await {
                    Ok(stored) => stored.is_some_and(|stored| {
                        stored.epoch == epoch && matches!(stored.state, CallState::Running { .. })
                    }),
                    Err(_) => true,
                };
                if !still_lost {
                    return;
                }
                if let Err(error) = decisions.recover().await {
                    tracing::warn!(%error, call_id, "could not recover a call stopped here at its lease yet; trying again");
                }
            }
        });
    }

    /// Runs a claimed stored call (with the resume data it was resumed
    /// with, if any) and, when it is a background task, waits for its end.
    pub(crate) async fn run_to_end(
        &self,
        stored: StoredCall,
        lease: Lease,
        run: RunKind,
    ) -> Result<CallOutcome, RuntimeError> {
        let resume_data = stored.resume_data.clone();
        match self
            .run_stored(stored, lease, resume_data, Extensions::new(), run)
            .await?
        {
            CallOutcome::BackgroundStarted { task_id } => {
                Ok(self.path.tasks().outcome(&task_id).await)
            }
            outcome => Ok(outcome),
        }
    }

    /// The tool a stored call names, if this runtime has it; the call stays stored either way.
    fn tool_of(&self, call: &PendingCall) -> Result<Tool, RuntimeError> {
        self.path
            .tool(&call.head.tool_id)
            .cloned()
            .ok_or_else(|| RuntimeError::MissingTool {
                call_id: call.head.call_id.clone(),
                tool_id: call.head.tool_id.clone(),
            })
    }

    /// Recovers the calls whose runtime died ([`Runtime::recover`](crate::Runtime::recover)).
    pub(crate) fn recover(
        &self,
    ) -> impl Future<Output = Result<Vec<Recovered>, RuntimeError>> + Send + 'static {
        let decisions = self.clone();
        async move {
            let calls = decisions.path.stored();
            calls.purge_if_due().await;
            if decisions.path.approval_rules().expires() {
                decisions.waiting().await?;
            }
            let tool_ids = decisions.path.tool_ids();
            let mut claimed = calls.recover_expired(&tool_ids).await?;
            // Tasks whose creator died before claiming them.
            while let Some(orphan) = calls.claim_next(PendingKind::Task, &tool_ids).await? {
                claimed.push(orphan);
            }
            // Each runs as a task of its own, like a decision: dropping this
            // future loses none of them.
            let recoveries: Vec<_> = claimed
                .into_iter()
                .map(|(stored, lease)| {
                    let (decisions, call_id) =
                        (decisions.clone(), stored.call.head.call_id.clone());
                    let recovering = async move { Ok(decisions.recover_one(stored, lease).await) };
                    async move { detached(&call_id, recovering).await }
                })
                .collect();
            let mut recovered = Vec::with_capacity(recoveries.len());
            for recovery in recoveries {
                match recovery.await? {
                    Ok(call) => recovered.push(call),
                    // Logged where it happened; recovered again, or
                    // recorded later, by whichever instance has it.
                    Err(RuntimeError::NotRecorded { .. }) => {}
                    Err(error) => return Err(error),
                }
            }
            Ok(recovered)
        }
    }

    /// Recovers one interrupted call: runs it again when that is allowed,
    /// settles it as interrupted otherwise.
    pub(crate) async fn recover_one(
        &self,
        stored: StoredCall,
        lease: Lease,
    ) -> Result<Recovered, RuntimeError> {
        let (call_id, tool_id) = (
            stored.call.head.call_id.clone(),
            stored.call.head.tool_id.clone(),
        );
        let span = call_span("recover", &tool_id, &call_id);
        let definition = self.path.tool(&tool_id).map(Tool::definition);
        // A transactional call's work commits with its outcome: one that
        // was interrupted left neither, so it runs again.
        let retry_safe = definition.is_some_and(|d| d.retry_safe || d.transactional);
        // A task's declared retries are consent to run it again, each
        // recovery counting as one attempt.
        let attempts_left = stored.call.kind == PendingKind::Task
            && definition
                .and_then(|d| d.background.as_ref())
                .is_some_and(|b| lease.attempt() <= b.max_retries.saturating_add(1));
        let tool = self.path.tool(&tool_id).cloned();
        let mut reconcile_failed = None;
        if !(retry_safe || attempts_left)
            && let Some(tool) = tool.as_ref().filter(|tool| tool.has_reconcile())
        {
            // Not safe to run again blindly: the tool is asked whether the
            // interrupted run's effect happened.
            match self
                .reconcile(tool, &stored, &lease)
                .instrument(span.clone())
                .await
            {
                Ok(Reconciled::Happened(outcome)) => {
                    span.in_scope(|| {
                        tracing::info!("interrupted call reconciled: its effect happened")
                    });
                    return self
                        .settle_recovered(call_id, tool_id, &lease, outcome)
                        .await;
                }
                Ok(Reconciled::NotHappened) => {
                    span.in_scope(|| {
                        tracing::warn!(
                            "interrupted call reconciled: its effect did not happen; it runs again"
                        )
                    });
                    return Ok(Recovered {
                        call_id,
                        tool_id,
                        rerun: true,
                        outcome: self.run_to_end(stored, lease, RunKind::Recovery).await?,
                    });
                }
                Err(Reconcile::Failed(error)) => reconcile_failed = Some(error),
                Err(Reconcile::Lost(why)) => {
                    return Err(why.error(call_id));
                }
            }
        }
        if retry_safe || attempts_left {
            span.in_scope(|| {
                tracing::warn!(attempt = lease.attempt(), "interrupted call runs again");
            });
            return Ok(Recovered {
                call_id,
                tool_id,
                rerun: true,
                outcome: self.run_to_end(stored, lease, RunKind::Recovery).await?,
            });
        }
        let asked = match &reconcile_failed {
            Some(error) => format!(" Its reconcile hook could not tell whether it did: {error}."),
            None => String::new(),
        };
        let retries = definition
            .and_then(|d| d.background.as_ref())
            .filter(|_| stored.call.kind == PendingKind::Task);
        let not_again = match retries {
            Some(background) => format!(
                "as a background task it has no retries left (max_retries {}), and the tool is not declared retry-safe",
                background.max_retries
            ),
            None => "the tool is not declared retry-safe".to_owned(),
        };
        // What a recovery knows: the claim ran out with no outcome recorded.
        // Not why: the instance running it may have died, or be alive and
        // cut off from the store (stopped at its lease, or offering an
        // outcome the store could not take in time), or paused.
        let error = ModelError::new(
            ErrorKind::Execution,
            format!(
                "Tool {tool_id} was interrupted: the lease on call {call_id} ran out before an outcome was recorded \
                 (the instance running it stopped, or could not reach the store in time to renew the lease or record an outcome; which, the instance that took the call over cannot tell). \
                 It was not run again because {not_again}, so its effects may or may not have happened.{asked}"
            ),
        );
        span.in_scope(|| {
            tracing::error!("interrupted call settled as failed; it is not retry-safe")
        });
        let known = CallValues {
            input: Some(&stored.call.input),
            suspend_payload: stored.call.payload.as_ref(),
            ..CallValues::default()
        };
        let outcome = self
            .path
            .failed(tool.as_ref(), &call_id, &tool_id, error, known)
            .await;
        self.settle_recovered(call_id, tool_id, &lease, outcome)
            .await
    }

    /// Asks `tool`'s reconcile hook what became of the interrupted `stored`
    /// call, under its lease.
    async fn reconcile(
        &self,
        tool: &Tool,
        stored: &StoredCall,
        lease: &Lease,
    ) -> Result<Reconciled<CallOutcome>, Reconcile> {
        let ctx = self
            .path
            .stored_context(&stored.call)
            .with_attempt(lease.attempt());
        let Some(asking) = tool.reconcile(stored.call.input.clone(), ctx) else {
            return Ok(Reconciled::NotHappened);
        };
        let asking = std::pin::pin!(asking);
        match lease.hold(asking, &tool_core::AbortSignal::new()).await {
            Ok(Ok(reconciled)) => Ok(reconciled.map(CallOutcome::from)),
            Ok(Err(error)) => Err(Reconcile::Failed(error)),
            Err(lost) => Err(Reconcile::Lost(NotRecorded::Lost(lost))),
        }
    }

    /// Records `outcome` for a recovered call that did not run again.
    async fn settle_recovered(
        &self,
        call_id: String,
        tool_id: String,
        lease: &Lease,
        outcome: CallOutcome,
    ) -> Result<Recovered, RuntimeError> {
        let tool = self.path.tool(&tool_id).cloned();
        let notifications = self.path.stored().notifications();
        let notify = |settlement: &Settlement| match &tool {
            Some(tool) => notifications.settled(tool, &call_id)(settlement),
            None => Vec::new(),
        };
        if let Some(recorded) = RecordedOutcome::from_outcome(&outcome)
            && let Err(why) = lease
                .finish(Settlement::Settled(recorded), None, notify)
                .await
        {
            return Err(why.error(call_id));
        }
        Ok(Recovered {
            call_id,
            tool_id,
            rerun: false,
            outcome,
        })
    }
}

/// Why a reconcile hook gave no answer.
enum Reconcile {
    /// It failed (an error, a panic, an output that does not fit).
    Failed(ModelError),
    /// The claim ended while it ran.
    Lost(NotRecorded),
}

/// `outcome`, the end of an execution under `lease`, if the store recorded
/// it; otherwise why not.
fn recorded(lease: &Lease, outcome: CallOutcome) -> Result<CallOutcome, RuntimeError> {
    match lease.not_recorded() {
        None => Ok(outcome),
        Some(why) => Err(why.error(lease.call_id())),
    }
}

/// The reason of an approval declined because it expired.
const EXPIRED: &str = "expired";

/// The call a decision is about, and by whom.
#[derive(Clone, Copy)]
struct DecidingCall<'a> {
    call_id: &'a str,
    /// The tool a typed decision expects.
    tool_id: Option<&'static str>,
    decider: Option<&'a Decider>,
}

/// What checking a decision found ([`Decisions::check`]).
#[allow(
    clippy::large_enum_variant,
    reason = "made once per decision and taken apart at once: boxing would only add an allocation"
)]
enum Checked {
    /// It goes on: the call as found, and the principals whose grants
    /// completed its count (when it needed several).
    GoesOn(StoredCall, Option<Vec<String>>),
    /// It is answered without a transition: the recorded outcome of a call
    /// decided already (or expired), or a grant of several recorded.
    Answered(CallOutcome),
}

/// What an edit does ([`Decisions::edited_claim`]).
enum Edited {
    /// The call runs edited.
    Runs(Claim),
    /// The call waits on, edited, as a new version needing these approvals.
    Revised(Value, RequiredApprovals),
    /// The policy refuses the edited call: the answer, the call as it was.
    Refused(CallOutcome),
}

/// What committing a decision did ([`Decisions::commit`]).
// `allow`, not `expect`: whether the lint fires depends on how large
// serde_json's `Value` is in the build (dev-dependencies change it).
#[allow(
    clippy::large_enum_variant,
    reason = "returned once per decision and taken apart at once"
)]
enum Committed {
    /// The call settled by the decision, or the outcome it lost to.
    Answered(CallOutcome),
    /// The call claimed to run, under the lease.
    Claimed(StoredCall, Lease),
    /// The call waits on as a new version (an edit under several
    /// approvals).
    Revised(StoredCall),
}

/// The approvals a call waiting for several has
/// ([`CallInbox::approvals`](crate::CallInbox::approvals)).
///
/// ```
/// use tool_runtime::Approvals;
///
/// let approvals = Approvals { required: 2, group: None, granted: vec!["alice".into()] };
/// assert_eq!(approvals.missing(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Approvals {
    /// How many different principals must approve it.
    pub required: u32,
    /// The group each of them must be in, when its approval policy named
    /// one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Who approved its current version, in order.
    pub granted: Vec<String>,
}

impl Approvals {
    /// How many more approvals it needs.
    pub fn missing(&self) -> usize {
        usize::try_from(self.required)
            .unwrap_or(usize::MAX)
            .saturating_sub(self.granted.len())
    }
}

/// `value`, a typed decision's data for call `call_id`, as JSON.
pub(crate) fn typed_value(call_id: &str, value: &impl Serialize) -> Result<Value, RuntimeError> {
    serde_json::to_value(value).map_err(|error| RuntimeError::TypeMismatch {
        call_id: call_id.to_owned(),
        reason: format!("the value does not serialize to JSON: {error}"),
    })
}

/// Runs `work` as a tokio task and waits for it (in place without a tokio
/// runtime): dropping the returned future leaves the task to finish.
async fn detached<T: Send + 'static>(
    call_id: &str,
    work: impl Future<Output = Result<T, RuntimeError>> + Send + 'static,
) -> Result<T, RuntimeError> {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return work.await;
    };
    handle
        .spawn(work.instrument(tracing::Span::current()))
        .await
        .unwrap_or_else(|error| {
            // Only a runtime shutting down cancels the task: the call stays
            // claimed in the store and is recovered when its lease expires.
            tracing::error!(%error, call_id, "the task running a decision was cancelled");
            Err(RuntimeError::Running {
                call_id: call_id.to_owned(),
            })
        })
}

/// The call a stored call was, to run it again.
pub(crate) fn to_tool_call(pending: PendingCall) -> ToolCall {
    ToolCall {
        head: CallHead::from(pending.head),
        input: RawInput::from(pending.input),
        workflow: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_core::ToolError;

    use super::*;
    use crate::call_path::test_path;

    fn decisions() -> Decisions {
        let delete = Tool::builder("delete")
            .description("Deletes")
            .require_approval(true)
            .execute(|input, _ctx| async move {
                Ok::<_, ToolError>(json!({ "deleted": input["path"] }))
            })
            .build()
            .unwrap();
        Decisions::new(test_path(vec![delete]), None)
    }

    async fn pending(decisions: &Decisions, call_id: &str) {
        let call = ToolCall::new(call_id, "delete", json!({ "path": "/x" }));
        let outcome = decisions.path().call(call).await;
        assert!(
            matches!(outcome, CallOutcome::ApprovalRequired { .. }),
            "{outcome:?}"
        );
    }

    #[tokio::test]
    async fn an_approval_runs_the_call_once_and_a_later_decision_gets_its_outcome() {
        let decisions = decisions();
        pending(&decisions, "c1").await;
        let ran = decisions
            .decide("c1", Decision::Approve, Extensions::new(), None)
            .await
            .unwrap();
        assert_eq!(ran.output(), Some(&json!({ "deleted": "/x" })));
        let again = decisions
            .decide("c1", Decision::Decline(None), Extensions::new(), None)
            .await
            .unwrap();
        assert_eq!(again, ran, "the recorded outcome, not a decline");
    }

    #[tokio::test]
    async fn a_decline_settles_the_call_without_running_it() {
        let decisions = decisions();
        pending(&decisions, "c1").await;
        let declined = decisions
            .decide(
                "c1",
                Decision::Decline(Some("no".into())),
                Extensions::new(),
                None,
            )
            .await
            .unwrap();
        assert_eq!(
            declined,
            CallOutcome::Declined {
                reason: Some("no".into())
            }
        );
        assert_eq!(
            decisions
                .decide("c1", Decision::Approve, Extensions::new(), None)
                .await
                .unwrap(),
            declined
        );
    }

    #[tokio::test]
    async fn a_decision_of_the_wrong_kind_or_on_no_call_is_refused() {
        let decisions = decisions();
        pending(&decisions, "c1").await;
        let resume = decisions
            .decide("c1", Decision::Resume(json!(1)), Extensions::new(), None)
            .await;
        assert!(
            matches!(resume, Err(RuntimeError::NotSuspended { .. })),
            "{resume:?}"
        );
        let unknown = decisions
            .decide("c9", Decision::Approve, Extensions::new(), None)
            .await;
        assert!(
            matches!(unknown, Err(RuntimeError::UnknownCall { .. })),
            "{unknown:?}"
        );
        assert!(
            decisions.recover().await.unwrap().is_empty(),
            "nothing was interrupted"
        );
    }
}
