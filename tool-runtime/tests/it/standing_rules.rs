//! Standing rules through the public API: a rule made by a principal
//! allowed to approves matching calls (recorded in the audit log naming
//! it and its author), only its requester's, until it is revoked or
//! expires; it never approves a call that needs more than one approval or
//! one from a group its author is not in, nor its author's own call under
//! separation of duties; a rule that cannot be evaluated approves nothing;
//! rules live in the store, shared by every instance.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tool_core::{ApprovalRequirement, RequestContext, tool};
use tool_runtime::store::{AuditKind, AuditQuery, SqliteStore};
use tool_runtime::{CallOutcome, Principal, Runtime, RuntimeError, StandingRule, ToolCall};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Refund {
    customer: String,
    amount: u32,
}

/// One approval of anyone up to 1,000; one of finance up to 5,000; two of
/// finance above.
fn refund_policy(refund: &Refund, _rc: &RequestContext) -> ApprovalRequirement {
    match refund.amount {
        0..=1_000 => ApprovalRequirement::required(),
        1_001..=5_000 => ApprovalRequirement::approvals(1).from_group("finance"),
        _ => ApprovalRequirement::approvals(2).from_group("finance"),
    }
}

/// Refunds an order.
#[tool(require_approval = refund_policy)]
async fn refund(refund: Refund) -> String {
    format!("refunded {} to {}", refund.amount, refund.customer)
}

#[derive(serde::Deserialize)]
struct Cap {
    cap: u32,
}

fn builder() -> tool_runtime::RuntimeBuilder {
    Runtime::builder()
        .tool(RefundTool)
        .rule_authors("finance-leads")
        .rule_predicate("amount_at_most", |refund: &Refund, cap: &Cap| {
            refund.amount <= cap.cap
        })
        .rule_predicate("panics", |_: &Value, _: &()| -> bool {
            panic!("a predicate with a bug")
        })
}

fn lead() -> Principal {
    Principal::new("dana")
        .in_group("finance-leads")
        .in_group("finance")
}

fn in_an_hour() -> SystemTime {
    SystemTime::now() + Duration::from_secs(3600)
}

fn call(id: &str, customer: &str, amount: u32) -> ToolCall {
    ToolCall::new(
        id,
        "refund",
        json!({ "customer": customer, "amount": amount }),
    )
    .with_requester("agent-7")
}

fn approved(outcome: &CallOutcome) -> bool {
    matches!(outcome, CallOutcome::Completed { .. })
}

fn waits(outcome: &CallOutcome) -> bool {
    matches!(outcome, CallOutcome::ApprovalRequired { .. })
}

#[tokio::test]
async fn a_rule_approves_matching_calls_names_itself_in_the_audit_log_and_stops_when_revoked() {
    let runtime = builder().build().unwrap();
    let rule = StandingRule::new("acme-small", "refund", in_an_hour())
        .when_equals("/customer", json!("acme"))
        .when("amount_at_most", json!({ "cap": 200 }))
        .for_requester("agent-7");
    let made = runtime.rules().make(&lead(), rule).await.unwrap();
    assert_eq!(made.author, "dana");
    assert!(made.author_groups.contains(&"finance".to_owned()));

    let outcome = runtime.call(call("c1", "acme", 150)).await;
    assert_eq!(outcome.output(), Some(&json!("refunded 150 to acme")));
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("c1"))
        .await
        .unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].kind, AuditKind::Decided);
    assert_eq!(log[0].principal.as_deref(), Some("rule:acme-small"));
    let reason = log[0].reason.as_deref().unwrap();
    assert!(
        reason.contains("acme-small") && reason.contains("dana"),
        "{reason}"
    );

    // Another customer, a larger amount, another requester: people decide.
    assert!(waits(&runtime.call(call("c2", "zeta", 150)).await));
    assert!(waits(&runtime.call(call("c3", "acme", 900)).await));
    let other = ToolCall::new("c4", "refund", json!({ "customer": "acme", "amount": 10 }))
        .with_requester("agent-8");
    assert!(waits(&runtime.call(other).await));
    let nobody = ToolCall::new("c5", "refund", json!({ "customer": "acme", "amount": 10 }));
    assert!(
        waits(&runtime.call(nobody).await),
        "a call naming no requester"
    );

    // Revoked by someone who may not: refused; by its author: gone.
    let clerk = Principal::new("carl").in_group("finance");
    let refused = runtime.rules().revoke(&clerk, "acme-small").await;
    assert!(
        matches!(refused, Err(RuntimeError::RuleRefused { .. })),
        "{refused:?}"
    );
    let revoked = runtime
        .rules()
        .revoke(&Principal::new("dana"), "acme-small")
        .await
        .unwrap();
    assert_eq!(revoked.unwrap().revoked.unwrap().by, "dana");
    assert!(waits(&runtime.call(call("c6", "acme", 150)).await));
    assert!(
        runtime
            .rules()
            .revoke(&lead(), "acme-small")
            .await
            .unwrap()
            .is_none(),
        "revoked once"
    );
    assert!(runtime.rules().in_force(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_rule_never_approves_a_call_needing_two_approvals_or_a_group_its_author_is_not_in() {
    let runtime = builder().build().unwrap();
    let any_acme = || StandingRule::new("acme", "refund", in_an_hour());
    let acme = any_acme().when_equals("/customer", json!("acme"));
    runtime.rules().make(&lead(), acme).await.unwrap();
    assert!(approved(&runtime.call(call("c1", "acme", 900)).await));
    assert!(
        approved(&runtime.call(call("c2", "acme", 3_000)).await),
        "one of finance: its author is in finance"
    );
    assert!(
        waits(&runtime.call(call("c3", "acme", 8_000)).await),
        "two of finance: people decide"
    );
    assert_eq!(
        runtime.inbox().approvals("c3").await.unwrap().granted.len(),
        0
    );

    // A lead outside finance: their rule covers what anyone may approve.
    let outsider = Principal::new("olga").in_group("finance-leads");
    let rule =
        StandingRule::new("zeta", "refund", in_an_hour()).when_equals("/customer", json!("zeta"));
    runtime.rules().make(&outsider, rule).await.unwrap();
    assert!(approved(&runtime.call(call("c4", "zeta", 900)).await));
    assert!(waits(&runtime.call(call("c5", "zeta", 3_000)).await));
}

#[tokio::test]
async fn rules_fail_closed_and_are_refused_when_they_cannot_hold() {
    let runtime = builder().build().unwrap();
    let rule = |id: &str| StandingRule::new(id, "refund", in_an_hour());
    // Arguments of the wrong shape, and a predicate that panics: stored,
    // and approve nothing.
    let wrong_args = rule("wrong-args").when("amount_at_most", json!("two hundred"));
    runtime.rules().make(&lead(), wrong_args).await.unwrap();
    let panics = rule("panics").when("panics", json!(null));
    runtime.rules().make(&lead(), panics).await.unwrap();
    assert!(waits(&runtime.call(call("c1", "acme", 1)).await));
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("c1"))
        .await
        .unwrap();
    assert!(
        log.iter().all(|entry| entry.kind != AuditKind::Decided),
        "{log:?}"
    );

    let refused = |made: Result<StandingRule, RuntimeError>, why: &str| match made {
        Err(RuntimeError::RuleRefused { reason, .. }) => {
            assert!(reason.contains(why), "{reason:?} should say {why:?}")
        }
        other => panic!("expected a refusal saying {why:?}, got {other:?}"),
    };
    let rules = runtime.rules();
    refused(
        rules
            .make(&lead(), rule("p").when("unheard_of", json!(1)))
            .await,
        "no predicate \"unheard_of\"",
    );
    refused(
        rules
            .make(&lead(), StandingRule::new("t", "wire", in_an_hour()))
            .await,
        "no tool \"wire\"",
    );
    refused(
        rules
            .make(&lead(), rule("ptr").when_equals("customer", json!("acme")))
            .await,
        "not a JSON pointer",
    );
    let past = StandingRule::new("past", "refund", SystemTime::now() - Duration::from_secs(1));
    refused(rules.make(&lead(), past).await, "expired already");
    refused(rules.make(&lead(), rule("panics")).await, "exists");
    refused(
        rules
            .make(&Principal::new("carl").in_group("finance"), rule("x"))
            .await,
        "not in group \"finance-leads\"",
    );
    let no_authors = Runtime::builder().tool(RefundTool).build().unwrap();
    refused(
        no_authors.rules().make(&lead(), rule("x")).await,
        "names no group",
    );
    assert!(
        no_authors
            .rules()
            .make(&Principal::system("ops"), rule("x"))
            .await
            .is_ok(),
        "the system may"
    );
}

#[tokio::test]
async fn an_expired_rule_approves_nothing() {
    let runtime = builder().build().unwrap();
    let soon = SystemTime::now() + Duration::from_millis(100);
    runtime
        .rules()
        .make(&lead(), StandingRule::new("brief", "refund", soon))
        .await
        .unwrap();
    assert!(approved(&runtime.call(call("c1", "acme", 1)).await));
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(waits(&runtime.call(call("c2", "acme", 1)).await));
    assert!(runtime.rules().in_force(None).await.unwrap().is_empty());
    assert!(
        runtime.rules().rule("brief").await.unwrap().is_some(),
        "kept"
    );
}

#[tokio::test]
async fn under_separation_of_duties_a_rule_never_approves_its_authors_own_call() {
    let runtime = builder().forbid_self_approval(true).build().unwrap();
    let own = StandingRule::new("own", "refund", in_an_hour()).for_requester("dana");
    let refused = runtime.rules().make(&lead(), own).await;
    assert!(
        matches!(&refused, Err(RuntimeError::RuleRefused { reason, .. }) if reason.contains("own calls")),
        "{refused:?}"
    );
    runtime
        .rules()
        .make(&lead(), StandingRule::new("anyone", "refund", in_an_hour()))
        .await
        .unwrap();
    let by_dana = ToolCall::new("c1", "refund", json!({ "customer": "acme", "amount": 5 }))
        .with_requester("dana");
    assert!(waits(&runtime.call(by_dana).await));
    assert!(approved(&runtime.call(call("c2", "acme", 5)).await));
}

#[tokio::test]
async fn rules_live_in_the_store_every_instance_applies_them() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let store = Arc::new(SqliteStore::open(file.path()).unwrap());
    let one = builder().store(Arc::clone(&store)).build().unwrap();
    let two = builder().store(store).build().unwrap();
    let rule =
        StandingRule::new("acme", "refund", in_an_hour()).when_equals("/customer", json!("acme"));
    one.rules().make(&lead(), rule).await.unwrap();
    assert!(approved(&two.call(call("c1", "acme", 10)).await));
    two.rules().revoke(&lead(), "acme").await.unwrap().unwrap();
    assert!(waits(&one.call(call("c2", "acme", 10)).await));
    // And across a restart: the file keeps the rule, revoked.
    drop((one, two));
    let again = builder()
        .store(SqliteStore::open(file.path()).unwrap())
        .build()
        .unwrap();
    let kept = again.rules().rule("acme").await.unwrap().unwrap();
    assert_eq!(kept.revoked.unwrap().by, "dana");
}
