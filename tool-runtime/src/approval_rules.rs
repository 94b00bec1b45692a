//! Everything that decides whether, by whom and how a call may be
//! approved, in one component: [`ApprovalRules`]. The call path asks it at
//! its gate (does this call wait for a person, until when); a decision
//! asks it before anything changes (may this decider take this decision on
//! this version of the call) and counts grants through it. The rules are
//! the runtime builder's approval options; the runtime holds them.

use std::collections::HashMap;
use std::time::Duration;

use crate::approval_policy::{ApprovalCheck, ApprovalPolicy};
use crate::claims::StoredCalls;
use crate::decision::Decision;
use crate::digest::Digest;
use crate::error::RuntimeError;
use crate::hook_queue::DEFAULT_APPROVAL_TIMEOUT;
use crate::principal::Decider;
use crate::store::{
    AuditEntry, AuditKind, AuditQuery, PendingCall, PendingKind, RequiredApprovals, StoredCall,
};
use tool_core::ApprovalRequirement;

/// The approval rules of a runtime: the policy (and how long it may take
/// to answer), how long a call waits for approval, how many principals
/// must approve, and whether a call's requester may decide it.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalRules {
    policy: ApprovalPolicy,
    policy_timeout: Duration,
    ttl: Option<Duration>,
    tool_ttls: HashMap<String, Duration>,
    forbid_self_approval: bool,
    approvals_required: u32,
    tool_approvals_required: HashMap<String, u32>,
}

impl Default for ApprovalRules {
    fn default() -> Self {
        ApprovalRules {
            policy: ApprovalPolicy::default(),
            policy_timeout: DEFAULT_APPROVAL_TIMEOUT,
            ttl: None,
            tool_ttls: HashMap::new(),
            forbid_self_approval: false,
            approvals_required: 1,
            tool_approvals_required: HashMap::new(),
        }
    }
}

/// Why a decision may not be taken, and the audit entry of the attempt
/// (for a decider's attempt). Boxed where it is returned: a refusal is
/// rare, and the entry is large.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) error: RuntimeError,
    pub(crate) audit: Option<AuditEntry>,
}

/// Whether an approval may go on, counting the grants of the version it
/// was made on.
#[derive(Debug, PartialEq)]
pub(crate) enum Quorum {
    /// One approval is enough (or the decision is not an approval).
    NotNeeded,
    /// Enough principals granted it: these.
    Reached(Vec<String>),
    /// More grants are needed; this one is recorded.
    Waiting,
}

impl ApprovalRules {
    // The builder's options, one setter each.

    pub(crate) fn set_policy(&mut self, policy: ApprovalPolicy) {
        self.policy = policy;
    }

    pub(crate) fn set_policy_timeout(&mut self, timeout: Duration) {
        self.policy_timeout = timeout;
    }

    pub(crate) fn set_ttl(&mut self, ttl: Duration) {
        self.ttl = Some(ttl);
    }

    pub(crate) fn set_tool_ttl(&mut self, tool_id: String, ttl: Duration) {
        self.tool_ttls.insert(tool_id, ttl);
    }

    pub(crate) fn set_forbid_self_approval(&mut self, forbid: bool) {
        self.forbid_self_approval = forbid;
    }

    pub(crate) fn set_approvals_required(&mut self, principals: u32) {
        self.approvals_required = principals.max(1);
    }

    pub(crate) fn set_tool_approvals_required(&mut self, tool_id: String, principals: u32) {
        self.tool_approvals_required
            .insert(tool_id, principals.max(1));
    }

    /// What the call `check` describes needs (see
    /// [`ApprovalPolicy::requirement`]).
    pub(crate) async fn requirement(&self, check: &ApprovalCheck<'_>) -> ApprovalRequirement {
        self.policy.requirement(check, self.policy_timeout).await
    }

    /// The approvals a call of `tool_id` waits for, as `requirement` (a
    /// [`Required`](ApprovalRequirement::Required) one) asks: its count,
    /// else the runtime's for the tool.
    pub(crate) fn required_approvals(
        &self,
        tool_id: &str,
        requirement: &ApprovalRequirement,
    ) -> RequiredApprovals {
        let (principals, group) = match requirement {
            ApprovalRequirement::Required { approvals, group } => (*approvals, group.clone()),
            _ => (None, None),
        };
        let required =
            RequiredApprovals::new(principals.unwrap_or_else(|| self.approvals_required(tool_id)));
        match group {
            Some(group) => required.from_group(group),
            None => required,
        }
    }

    /// When a call of `tool_id` starting to wait for approval at `now_ms`
    /// expires, if it does.
    pub(crate) fn expires_at(&self, tool_id: &str, now_ms: u64) -> Option<u64> {
        let ttl = self.tool_ttls.get(tool_id).or(self.ttl.as_ref())?;
        Some(now_ms.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)))
    }

    /// Whether calls waiting for approval may expire here.
    pub(crate) fn expires(&self) -> bool {
        self.ttl.is_some() || !self.tool_ttls.is_empty()
    }

    /// Whether a call's requester may not take a decision that makes it go
    /// on ([`RuntimeBuilder::forbid_self_approval`](crate::RuntimeBuilder::forbid_self_approval)).
    pub(crate) fn forbids_self_approval(&self) -> bool {
        self.forbid_self_approval
    }

    /// How many different principals must approve a call of `tool_id`
    /// ([`RuntimeBuilder::approvals_required`](crate::RuntimeBuilder::approvals_required)).
    pub(crate) fn approvals_required(&self, tool_id: &str) -> u32 {
        self.tool_approvals_required
            .get(tool_id)
            .copied()
            .unwrap_or(self.approvals_required)
    }

    /// Whether `decider` may take `decision` on `stored` as it is now,
    /// checked before anything changes: the digest names this version;
    /// where separation of duties or several approvals apply, a decision
    /// that makes the call go on names a principal (the system's, for
    /// code deciding alone), who is not the call's requester; and, for a
    /// call that needs approvals in a group, a member of it.
    pub(crate) fn check(
        &self,
        stored: &StoredCall,
        decision: &Decision,
        decider: Option<&Decider>,
    ) -> Result<(), Box<Refusal>> {
        let call = &stored.call;
        let call_id = call.call_id.as_str();
        let refused =
            |decider: &Decider, reason: &str| refused_attempt(call, decision, decider, reason);
        if let Some(decider) = decider
            && decider.digest != stored.digest()
        {
            return Err(Box::new(Refusal {
                error: RuntimeError::StaleDigest {
                    call_id: call_id.to_owned(),
                },
                audit: Some(refused(decider, "stale or foreign digest")),
            }));
        }
        let goes_on = decision.goes_on();
        let RequiredApprovals {
            principals: required,
            group,
        } = self.required_for(stored);
        let needs_principal = self.forbid_self_approval || required > 1 || group.is_some();
        if goes_on && decider.is_none() && needs_principal {
            let why = match (&group, required) {
                (Some(group), _) => {
                    format!("it needs the approval of principals in group {group:?}")
                }
                (None, 2..) => format!("it needs the approvals of {required} principals"),
                (None, _) => "its requester may not decide it (separation of duties)".to_owned(),
            };
            return Err(Box::new(Refusal {
                error: RuntimeError::PrincipalRequired {
                    call_id: call_id.to_owned(),
                    why,
                },
                audit: None,
            }));
        }
        if let Some(decider) = decider
            && goes_on
            && self.forbid_self_approval
            && !decider.principal.is_system()
            && call.requester.as_deref() == Some(decider.principal.id())
        {
            return Err(Box::new(Refusal {
                error: RuntimeError::SelfApproval {
                    call_id: call_id.to_owned(),
                    principal: decider.principal.id().to_owned(),
                },
                audit: Some(refused(decider, "the requester may not decide it")),
            }));
        }
        if let (Some(group), Some(decider)) = (&group, decider)
            && goes_on
            && !decider.principal.is_in(group)
        {
            return Err(Box::new(Refusal {
                error: RuntimeError::NotInGroup {
                    call_id: call_id.to_owned(),
                    principal: decider.principal.to_string(),
                    group: group.clone(),
                },
                audit: Some(refused(decider, &format!("not in group {group:?}"))),
            }));
        }
        Ok(())
    }

    /// How many principals must approve `stored`, and from which group:
    /// what its policy asked when it started to wait (the runtime's count
    /// for a call stored without it); one from anyone unless it waits for
    /// approval.
    pub(crate) fn required_for(&self, stored: &StoredCall) -> RequiredApprovals {
        let call = &stored.call;
        if call.kind != PendingKind::Approval {
            return RequiredApprovals::new(1);
        }
        call.approvals
            .clone()
            .unwrap_or_else(|| RequiredApprovals::new(self.approvals_required(&call.tool_id)))
    }

    /// Whether `decision`, checked by [`check`](Self::check), may go on
    /// under the count of approvals: an approval by `decider` is recorded
    /// as granted (once per principal and version) and goes on once
    /// enough principals granted that version.
    pub(crate) async fn quorum(
        &self,
        calls: &StoredCalls,
        stored: &StoredCall,
        decision: &Decision,
        decider: Option<&Decider>,
    ) -> Result<Quorum, RuntimeError> {
        let required = self.required_for(stored).principals;
        let (Decision::Approve, Some(decider), true) = (decision, decider, required > 1) else {
            return Ok(Quorum::NotNeeded);
        };
        let call = &stored.call;
        let digest = stored.digest();
        let principal = decider.principal.to_string();
        if !granted_by(calls, &call.call_id, &digest)
            .await?
            .contains(&principal)
        {
            let grant =
                AuditEntry::new(AuditKind::Granted, &call.call_id, &call.tool_id, "approve")
                    .principal(principal)
                    .digest(&digest);
            calls.append_audit(grant).await?;
        }
        // Read after this grant is written: of concurrent last grants, at
        // least the one written last sees them all.
        let principals = granted_by(calls, &call.call_id, &digest).await?;
        if principals.len() >= usize::try_from(required).unwrap_or(usize::MAX) {
            Ok(Quorum::Reached(principals))
        } else {
            Ok(Quorum::Waiting)
        }
    }
}

/// The audit entry of `decider`'s attempt at `decision` on `call`,
/// refused for `reason`.
pub(crate) fn refused_attempt(
    call: &PendingCall,
    decision: &Decision,
    decider: &Decider,
    reason: &str,
) -> AuditEntry {
    AuditEntry::new(
        AuditKind::Refused,
        &call.call_id,
        &call.tool_id,
        decision.step(),
    )
    .principal(decider.principal.to_string())
    .digest(&decider.digest)
    .reason(reason)
}

/// The principals who granted an approval of version `digest` of call
/// `call_id`, in the order they did, each once. Only grants the runtime
/// wrote count: an application cannot append one
/// ([`CallInbox::append_audit`](crate::CallInbox::append_audit)).
pub(crate) async fn granted_by(
    calls: &StoredCalls,
    call_id: &str,
    digest: &Digest,
) -> Result<Vec<String>, RuntimeError> {
    let mut principals: Vec<String> = Vec::new();
    let mut query = AuditQuery::all().call(call_id);
    loop {
        let page = calls.read_audit(query.clone()).await?;
        let Some(last) = page.last() else { break };
        query = query.after(last.seq);
        for entry in page {
            if entry.kind == AuditKind::Granted
                && entry.digest.as_deref() == Some(digest.as_str())
                && let Some(principal) = entry.principal
                && !principals.contains(&principal)
            {
                principals.push(principal);
            }
        }
    }
    Ok(principals)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::principal::Principal;

    fn waiting(requester: Option<&str>) -> StoredCall {
        let mut call = PendingCall::new(
            "c1",
            "refund",
            PendingKind::Approval,
            json!({ "amount": 5 }),
        );
        call.requester = requester.map(str::to_owned);
        StoredCall::pending(call)
    }

    fn by(principal: Principal, stored: &StoredCall) -> Decider {
        Decider::new(principal, stored.digest())
    }

    fn error(result: Result<(), Box<Refusal>>) -> RuntimeError {
        result.expect_err("refused").error
    }

    #[test]
    fn without_separation_of_duties_or_several_approvals_anyone_and_nobody_may_decide() {
        let rules = ApprovalRules::default();
        let stored = waiting(Some("alice"));
        assert!(rules.check(&stored, &Decision::Approve, None).is_ok());
        let alice = by(Principal::new("alice"), &stored);
        assert!(
            rules
                .check(&stored, &Decision::Approve, Some(&alice))
                .is_ok()
        );
    }

    #[test]
    fn a_stale_digest_is_refused_with_its_audit_entry() {
        let rules = ApprovalRules::default();
        let stored = waiting(None);
        let stale = Decider::new(Principal::new("bob"), crate::Digest::new("sha256:00"));
        let refusal = rules
            .check(&stored, &Decision::Approve, Some(&stale))
            .unwrap_err();
        assert!(matches!(refusal.error, RuntimeError::StaleDigest { .. }));
        let audit = refusal.audit.expect("the attempt is audited");
        assert_eq!(audit.kind, AuditKind::Refused);
        assert_eq!(audit.principal.as_deref(), Some("bob"));
    }

    #[test]
    fn separation_of_duties_needs_a_principal_who_is_not_the_requester_to_go_on() {
        let mut rules = ApprovalRules::default();
        rules.set_forbid_self_approval(true);
        let stored = waiting(Some("alice"));
        let alice = by(Principal::new("alice"), &stored);
        let bob = by(Principal::new("bob"), &stored);
        for decision in [
            Decision::Approve,
            Decision::Edit(json!({ "amount": 4 })),
            Decision::Respond(json!("done")),
            Decision::Resume(json!({})),
        ] {
            assert!(
                matches!(
                    error(rules.check(&stored, &decision, None)),
                    RuntimeError::PrincipalRequired { .. }
                ),
                "{decision:?} naming nobody"
            );
            assert!(
                matches!(
                    error(rules.check(&stored, &decision, Some(&alice))),
                    RuntimeError::SelfApproval { .. }
                ),
                "{decision:?} by the requester"
            );
            assert!(
                rules.check(&stored, &decision, Some(&bob)).is_ok(),
                "{decision:?} by another"
            );
        }
        // Stopping a call needs nobody else.
        assert!(rules.check(&stored, &Decision::Decline(None), None).is_ok());
        assert!(
            rules
                .check(&stored, &Decision::Decline(None), Some(&alice))
                .is_ok()
        );
        // The system is never the requester, even under the same name.
        let system = by(Principal::system("alice"), &stored);
        assert!(
            rules
                .check(&stored, &Decision::Approve, Some(&system))
                .is_ok()
        );
    }

    #[test]
    fn several_approvals_need_named_principals_and_take_their_edits() {
        let mut rules = ApprovalRules::default();
        rules.set_tool_approvals_required("refund".into(), 2);
        let stored = waiting(None);
        assert!(matches!(
            error(rules.check(&stored, &Decision::Approve, None)),
            RuntimeError::PrincipalRequired { .. }
        ));
        let bob = by(Principal::new("bob"), &stored);
        // An edit counts as its editor's grant of the edited version.
        assert!(
            rules
                .check(&stored, &Decision::Edit(json!({})), Some(&bob))
                .is_ok()
        );
        assert!(matches!(
            error(rules.check(&stored, &Decision::Edit(json!({})), None)),
            RuntimeError::PrincipalRequired { .. }
        ));
        assert_eq!(rules.approvals_required("refund"), 2);
        assert_eq!(rules.approvals_required("lookup"), 1);
    }

    #[tokio::test]
    async fn grants_count_once_per_principal_and_version_on_a_memory_store() {
        let mut rules = ApprovalRules::default();
        rules.set_approvals_required(2);
        let calls = StoredCalls::in_memory();
        let stored = waiting(None);
        let grant = |principal: Principal| {
            let (rules, calls, stored) = (&rules, &calls, &stored);
            async move {
                let decider = by(principal, stored);
                rules
                    .quorum(calls, stored, &Decision::Approve, Some(&decider))
                    .await
                    .unwrap()
            }
        };
        assert_eq!(grant(Principal::new("alice")).await, Quorum::Waiting);
        assert_eq!(grant(Principal::new("alice")).await, Quorum::Waiting);
        assert_eq!(
            grant(Principal::system("nightly")).await,
            Quorum::Reached(vec!["alice".into(), "system:nightly".into()])
        );
        // Another version of the call counts its own grants.
        let mut edited = stored.clone();
        edited.epoch += 1;
        let digest = edited.digest();
        assert!(granted_by(&calls, "c1", &digest).await.unwrap().is_empty());
        // A decline is never counted.
        let decline = rules
            .quorum(&calls, &stored, &Decision::Decline(None), None)
            .await
            .unwrap();
        assert_eq!(decline, Quorum::NotNeeded);
    }

    #[test]
    fn expiry_follows_the_tools_ttl_else_the_runtimes() {
        let mut rules = ApprovalRules::default();
        assert!(!rules.expires());
        assert_eq!(rules.expires_at("refund", 1_000), None);
        rules.set_ttl(Duration::from_secs(60));
        rules.set_tool_ttl("refund".into(), Duration::from_secs(5));
        assert!(rules.expires());
        assert_eq!(rules.expires_at("refund", 1_000), Some(6_000));
        assert_eq!(rules.expires_at("lookup", 1_000), Some(61_000));
    }
}
