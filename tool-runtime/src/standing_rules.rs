//! Standing rules: approvals given ahead of time. [`StandingRules`] (from
//! [`Runtime::rules`](crate::Runtime::rules)) makes, revokes and reads
//! them in the store; which rule approves a call is the approval rules' to
//! say, at the approval gate (`approval_rules.rs`), with the predicates of
//! `rule_predicates.rs`.

use std::fmt;
use std::future::Future;

use crate::call_path::{CallPath, now_ms};
use crate::error::RuntimeError;
use crate::principal::Principal;
use crate::store::StandingRule;

/// The standing rules of a runtime's store, from
/// [`Runtime::rules`](crate::Runtime::rules): make one (a principal the
/// runtime lets make rules,
/// [`RuntimeBuilder::rule_authors`](crate::RuntimeBuilder::rule_authors)),
/// revoke one, read those in force. Every runtime sharing the store
/// applies the same rules. Cheap to clone.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::{CallHead, CallOutcome, Principal, Runtime, StandingRule, ToolCall};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let refund = Tool::builder("refund").description("Refunds an order")
///     .require_approval(true)
///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("refunded")) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(refund).rule_authors("finance-leads").build().unwrap();
/// let lead = Principal::new("dana").in_group("finance-leads");
/// let until = SystemTime::now() + Duration::from_secs(3600);
/// let rule = StandingRule::new("acme", "refund", until).when_equals("/customer", json!("acme"));
/// runtime.rules().make(&lead, rule).await.unwrap();
///
/// let call = |id, customer| ToolCall::new(id, "refund", json!({ "customer": customer }));
/// assert!(matches!(runtime.call(call("c1", "acme")).await, CallOutcome::Completed { .. }));
/// assert!(matches!(runtime.call(call("c2", "zeta")).await, CallOutcome::ApprovalRequired { .. }));
///
/// runtime.rules().revoke(&lead, "acme").await.unwrap();
/// assert!(matches!(runtime.call(call("c3", "acme")).await, CallOutcome::ApprovalRequired { .. }));
/// # });
/// ```
#[derive(Clone)]
pub struct StandingRules {
    path: CallPath,
}

impl fmt::Debug for StandingRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StandingRules").finish_non_exhaustive()
    }
}

impl StandingRules {
    pub(crate) fn new(path: CallPath) -> Self {
        StandingRules { path }
    }

    /// Makes `rule`, by `author`, and returns it as stored (its author,
    /// the author's groups and when it was made filled in). Refused
    /// ([`RuntimeError::RuleRefused`]) unless `author` may make rules
    /// ([`RuntimeBuilder::rule_authors`](crate::RuntimeBuilder::rule_authors),
    /// or the system), the tool is this runtime's, every predicate named is
    /// registered, every pointer is a JSON pointer, the rule is not already
    /// expired, its id is not taken, and, under separation of duties, it
    /// does not approve its author's own calls.
    pub fn make(
        &self,
        author: &Principal,
        rule: StandingRule,
    ) -> impl Future<Output = Result<StandingRule, RuntimeError>> + Send + 'static {
        let path = self.path.clone();
        let author = author.clone();
        async move {
            let rules = path.approval_rules();
            let rule = rules.admit_rule(&author, rule, now_ms(), |tool_id| {
                path.tool(tool_id).is_some()
            })?;
            if !rules.rule_store().add_rule(rule.clone()).await? {
                return Err(RuntimeError::RuleRefused {
                    rule_id: rule.rule_id,
                    reason: "a rule with this id exists (ids are never reused, also once revoked)"
                        .to_owned(),
                });
            }
            tracing::info!(rule_id = %rule.rule_id, tool_id = %rule.tool_id, author = %rule.author, "standing rule made");
            Ok(rule)
        }
    }

    /// Revokes the rule `rule_id`, by `by` (its author, a principal who may
    /// make rules, or the system): returns it as revoked, or `None` when
    /// no rule of that id stands (none was made, or it was revoked
    /// already). A call the rule would have approved waits for people from
    /// now on, on every runtime sharing the store.
    pub fn revoke(
        &self,
        by: &Principal,
        rule_id: &str,
    ) -> impl Future<Output = Result<Option<StandingRule>, RuntimeError>> + Send + 'static {
        let path = self.path.clone();
        let by = by.clone();
        let rule_id = rule_id.to_owned();
        async move {
            let rules = path.approval_rules();
            let Some(rule) = rules.rule_store().rule(&rule_id).await? else {
                return Ok(None);
            };
            rules.may_revoke(&by, &rule)?;
            let revocation = crate::store::Revocation::new(by.to_string(), now_ms());
            let revoked = rules.rule_store().revoke_rule(&rule_id, revocation).await?;
            if revoked.is_some() {
                tracing::info!(rule_id, by = %by, "standing rule revoked");
            }
            Ok(revoked)
        }
    }

    /// The rule `rule_id`, revoked or not.
    pub fn rule(
        &self,
        rule_id: &str,
    ) -> impl Future<Output = Result<Option<StandingRule>, RuntimeError>> + Send + 'static {
        let path = self.path.clone();
        let rule_id = rule_id.to_owned();
        async move { Ok(path.approval_rules().rule_store().rule(&rule_id).await?) }
    }

    /// The rules in force now, of tool `tool_id` (every tool's for
    /// `None`), in the order they were made.
    pub fn in_force(
        &self,
        tool_id: Option<&str>,
    ) -> impl Future<Output = Result<Vec<StandingRule>, RuntimeError>> + Send + 'static {
        let path = self.path.clone();
        let tool_id = tool_id.map(str::to_owned);
        async move {
            let store = path.approval_rules().rule_store();
            Ok(store.rules_in_force(tool_id.as_deref(), now_ms()).await?)
        }
    }
}
