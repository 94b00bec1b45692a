//! Everything that decides whether, by whom and how a call may be
//! approved, in one component: [`ApprovalRules`]. The call path asks it at
//! its gate (does this call wait for a person, until when); a decision
//! asks it before anything changes (may this decider take this decision on
//! this version of the call) and counts grants through it. The rules are
//! the runtime builder's approval options; the runtime holds them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::approval_policy::{ApprovalCheck, ApprovalPolicy};
use crate::claims::StoredCalls;
use crate::decision::Decision;
use crate::digest::Digest;
use crate::error::RuntimeError;
use crate::hook_queue::DEFAULT_APPROVAL_TIMEOUT;
use crate::principal::{Decider, Principal};
use crate::rule_predicates::{RulePredicates, RuleSubject};
use crate::store::{
    AuditEntry, AuditKind, AuditQuery, DynRuleStore, MemoryStore, PendingCall, PendingKind,
    RequiredApprovals, StandingRule, StoredCall,
};
use tool_core::ApprovalRequirement;

/// The approval rules of a runtime: the policy (and how long it may take
/// to answer), how long a call waits for approval, how many principals
/// must approve, whether a call's requester may decide it, and the
/// standing rules (who may make them, the predicates they call, the store
/// that keeps them).
#[derive(Clone)]
pub(crate) struct ApprovalRules {
    policy: ApprovalPolicy,
    policy_timeout: Duration,
    ttl: Option<Duration>,
    tool_ttls: HashMap<String, Duration>,
    forbid_self_approval: bool,
    approvals_required: u32,
    tool_approvals_required: HashMap<String, u32>,
    rule_authors: Option<String>,
    predicates: RulePredicates,
    rule_store: Arc<dyn DynRuleStore>,
}

impl std::fmt::Debug for ApprovalRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalRules")
            .field("policy", &self.policy)
            .field("ttl", &self.ttl)
            .field("forbid_self_approval", &self.forbid_self_approval)
            .field("approvals_required", &self.approvals_required)
            .field("rule_authors", &self.rule_authors)
            .field("predicates", &self.predicates)
            .finish_non_exhaustive()
    }
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
            rule_authors: None,
            predicates: RulePredicates::default(),
            rule_store: Arc::new(MemoryStore::new()),
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

    pub(crate) fn set_rule_authors(&mut self, group: String) {
        self.rule_authors = Some(group);
    }

    pub(crate) fn predicates_mut(&mut self) -> &mut RulePredicates {
        &mut self.predicates
    }

    pub(crate) fn set_rule_store(&mut self, store: Arc<dyn DynRuleStore>) {
        self.rule_store = store;
    }

    /// The store of standing rules.
    pub(crate) fn rule_store(&self) -> &dyn DynRuleStore {
        self.rule_store.as_ref()
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
        let call_id = call.head.call_id.as_str();
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
            && call.head.requester.as_deref() == Some(decider.principal.id())
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
            .unwrap_or_else(|| RequiredApprovals::new(self.approvals_required(&call.head.tool_id)))
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
        if !granted_by(calls, &call.head.call_id, &digest)
            .await?
            .contains(&principal)
        {
            let notified = calls.notifications().granted(
                call,
                &principal,
                digest.as_str(),
                &self.required_for(stored),
            );
            let grant = AuditEntry::new(
                AuditKind::Granted,
                &call.head.call_id,
                &call.head.tool_id,
                "approve",
            )
            .principal(principal)
            .digest(&digest);
            calls.append_audit(grant, notified).await?;
        }
        // Read after this grant is written: of concurrent last grants, at
        // least the one written last sees them all.
        let principals = granted_by(calls, &call.head.call_id, &digest).await?;
        if principals.len() >= usize::try_from(required).unwrap_or(usize::MAX) {
            Ok(Quorum::Reached(principals))
        } else {
            Ok(Quorum::Waiting)
        }
    }
}

// Standing rules: who may make and revoke them, and which approves a call.
impl ApprovalRules {
    /// `rule` as `author` makes it at `now_ms` (author, groups and time
    /// filled in), or why it is refused: see
    /// [`StandingRules::make`](crate::StandingRules::make). `has_tool`
    /// says whether the runtime has a tool.
    pub(crate) fn admit_rule(
        &self,
        author: &Principal,
        mut rule: StandingRule,
        now_ms: u64,
        has_tool: impl Fn(&str) -> bool,
    ) -> Result<StandingRule, RuntimeError> {
        let refused = |reason: String| RuntimeError::RuleRefused {
            rule_id: rule.rule_id.clone(),
            reason,
        };
        if !self.may_make_rules(author) {
            return Err(refused(self.no_author(author)));
        }
        if !has_tool(&rule.tool_id) {
            return Err(refused(format!(
                "this runtime has no tool {:?}",
                rule.tool_id
            )));
        }
        if let Some(predicate) = &rule.condition.predicate
            && !self.predicates.contains(&predicate.name)
        {
            return Err(refused(format!(
                "no predicate {:?} is registered (RuntimeBuilder::rule_predicate)",
                predicate.name
            )));
        }
        if let Some(bad) = rule
            .condition
            .equals
            .iter()
            .find(|equals| !equals.pointer.is_empty() && !equals.pointer.starts_with('/'))
        {
            return Err(refused(format!(
                "{:?} is not a JSON pointer (it starts with '/', or is empty for the whole input)",
                bad.pointer
            )));
        }
        if rule.until_ms <= now_ms {
            return Err(refused("it would be expired already".to_owned()));
        }
        if self.forbid_self_approval && rule.requester.as_deref() == Some(author.id()) {
            return Err(refused(
                "it approves its author's own calls, and this runtime forbids approving one's own calls".to_owned(),
            ));
        }
        rule.author = author.to_string();
        rule.author_groups = author.groups().to_vec();
        rule.created_at_ms = now_ms;
        rule.revoked = None;
        Ok(rule)
    }

    /// Whether `principal` may make standing rules: the system, or a member
    /// of the group [`RuntimeBuilder::rule_authors`](crate::RuntimeBuilder::rule_authors)
    /// names.
    fn may_make_rules(&self, principal: &Principal) -> bool {
        principal.is_system()
            || self
                .rule_authors
                .as_deref()
                .is_some_and(|group| principal.is_in(group))
    }

    fn no_author(&self, principal: &Principal) -> String {
        match &self.rule_authors {
            Some(group) => format!("{principal} is not in group {group:?}, which makes rules"),
            None => format!(
                "{principal} may not make rules: this runtime names no group that does (RuntimeBuilder::rule_authors)"
            ),
        }
    }

    /// Whether `by` may revoke `rule`: its author, or anyone who may make
    /// rules.
    pub(crate) fn may_revoke(
        &self,
        by: &Principal,
        rule: &StandingRule,
    ) -> Result<(), RuntimeError> {
        if rule.author == by.to_string() || self.may_make_rules(by) {
            return Ok(());
        }
        Err(RuntimeError::RuleRefused {
            rule_id: rule.rule_id.clone(),
            reason: format!("{by} may not revoke it: {}", self.no_author(by)),
        })
    }

    /// The first standing rule in force that approves the call `call`
    /// describes, needing `required`: none for a call that needs more than
    /// one approval, nor by a rule whose author was not in the group the
    /// call needs, nor (under separation of duties) one whose author asked
    /// for the call. Fails closed: a store that cannot be read approves
    /// nothing (the call waits for people).
    pub(crate) async fn standing_approval(
        &self,
        call: &RuleSubject<'_>,
        required: &RequiredApprovals,
    ) -> Option<StandingRule> {
        if required.principals > 1 {
            return None;
        }
        let rules = match self
            .rule_store
            .rules_in_force(Some(call.tool_id), call.now_ms)
            .await
        {
            Ok(rules) => rules,
            Err(error) => {
                tracing::warn!(%error, "the standing rules could not be read; the call waits for people");
                return None;
            }
        };
        self.first_approving(rules, call, required)
    }

    fn first_approving(
        &self,
        rules: Vec<StandingRule>,
        call: &RuleSubject<'_>,
        required: &RequiredApprovals,
    ) -> Option<StandingRule> {
        rules.into_iter().find(|rule| {
            required
                .group
                .as_ref()
                .is_none_or(|group| rule.author_groups.contains(group))
                && !(self.forbid_self_approval && call.requester == Some(rule.author.as_str()))
                && self.predicates.approves(rule, call)
        })
    }
}

/// The audit entry of a call's approval by standing rule `rule`.
pub(crate) fn approved_by_rule(call_id: &str, tool_id: &str, rule: &StandingRule) -> AuditEntry {
    AuditEntry::new(AuditKind::Decided, call_id, tool_id, "approve")
        .principal(format!("rule:{}", rule.rule_id))
        .reason(format!(
            "approved by standing rule {:?}, made by {}",
            rule.rule_id, rule.author
        ))
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
        &call.head.call_id,
        &call.head.tool_id,
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
        call.head.requester = requester.map(str::to_owned);
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

    fn standing(id: &str) -> StandingRule {
        let until = std::time::SystemTime::now() + Duration::from_secs(60);
        StandingRule::new(id, "refund", until).when_equals("/customer", json!("acme"))
    }

    fn now() -> u64 {
        crate::call_path::now_ms()
    }

    #[test]
    fn a_rule_is_admitted_from_an_author_the_rules_name_with_its_author_filled_in() {
        let mut rules = ApprovalRules::default();
        let lead = Principal::new("dana").in_group("leads").in_group("finance");
        let has_refund = |tool: &str| tool == "refund";
        let refused = rules.admit_rule(&lead, standing("r1"), now(), has_refund);
        assert!(
            matches!(refused, Err(RuntimeError::RuleRefused { .. })),
            "no authors named"
        );
        rules.set_rule_authors("leads".into());
        let admitted = rules
            .admit_rule(&lead, standing("r1"), 7, has_refund)
            .unwrap();
        assert_eq!(
            (admitted.author.as_str(), admitted.created_at_ms),
            ("dana", 7)
        );
        assert_eq!(admitted.author_groups, ["leads", "finance"]);
        let system = rules.admit_rule(&Principal::system("ops"), standing("r2"), 7, has_refund);
        assert_eq!(system.unwrap().author, "system:ops");
        let unknown_tool = rules.admit_rule(&lead, standing("r3"), 7, |_| false);
        assert!(unknown_tool.is_err());
        assert!(
            rules.may_revoke(&Principal::new("dana"), &admitted).is_ok(),
            "its author"
        );
        assert!(rules.may_revoke(&Principal::new("eve"), &admitted).is_err());
    }

    #[tokio::test]
    async fn a_standing_rule_approves_one_approval_calls_only_from_its_authors_groups() {
        let mut rules = ApprovalRules::default();
        rules.set_rule_authors("leads".into());
        let lead = Principal::new("dana").in_group("leads").in_group("finance");
        let rule = rules
            .admit_rule(&lead, standing("r1"), now(), |_| true)
            .unwrap();
        rules.rule_store().add_rule(rule).await.unwrap();
        let input = json!({ "customer": "acme" });
        let call = RuleSubject {
            tool_id: "refund",
            input: &input,
            requester: Some("agent"),
            now_ms: now(),
        };
        let approves = |required: RequiredApprovals| {
            let rules = rules.clone();
            async move {
                rules
                    .standing_approval(&call, &required)
                    .await
                    .map(|r| r.rule_id)
            }
        };
        assert_eq!(
            approves(RequiredApprovals::new(1)).await.as_deref(),
            Some("r1")
        );
        let finance = RequiredApprovals::new(1).from_group("finance");
        assert_eq!(approves(finance).await.as_deref(), Some("r1"));
        assert_eq!(
            approves(RequiredApprovals::new(1).from_group("legal")).await,
            None
        );
        assert_eq!(
            approves(RequiredApprovals::new(2)).await,
            None,
            "never for two"
        );
        let other = json!({ "customer": "zeta" });
        let other = RuleSubject {
            input: &other,
            ..call
        };
        assert!(
            rules
                .standing_approval(&other, &RequiredApprovals::new(1))
                .await
                .is_none()
        );

        rules.set_forbid_self_approval(true);
        let own = RuleSubject {
            requester: Some("dana"),
            ..call
        };
        assert!(
            rules
                .standing_approval(&own, &RequiredApprovals::new(1))
                .await
                .is_none()
        );
    }
}
