//! Standing rules through a real Restate server: made and revoked with
//! `RestateTools::rules` (the application's rules about rules), kept in
//! the object `ToolRules`, and applied by every call's step.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_restate::{CallRequest, RestateClient, RestateRules, RestateTools};
use tool_runtime::{CallOutcome, Principal, Runtime, RuntimeError, StandingRule};

use crate::server::Restate;

#[derive(Deserialize)]
struct Refund {
    amount: u64,
}

/// `refund` needs an approval; finance leads make rules, which may cap the
/// amount (`amount_at_most`).
fn tools(ingress: &str) -> RestateTools {
    RestateTools::new(ingress, || {
        let refund = Tool::builder("refund")
            .description("Refunds an order")
            .require_approval(true)
            .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
                Ok::<_, ToolError>(json!({ "refunded": input["amount"] }))
            })
            .build()
            .expect("refund");
        Runtime::builder()
            .tool(refund)
            .rule_authors("finance-leads")
            .rule_predicate("amount_at_most", |refund: &Refund, cap: &u64| {
                refund.amount <= *cap
            })
    })
    .expect("tools")
}

fn refund(customer: &str, amount: u64) -> CallRequest {
    CallRequest::new("refund", json!({ "customer": customer, "amount": amount }))
}

fn waits(outcome: &CallOutcome) -> bool {
    matches!(outcome, CallOutcome::ApprovalRequired { .. })
}

#[tokio::test]
async fn a_standing_rule_approves_the_calls_it_names_until_revoked() {
    let Some(server) = Restate::start().await else {
        return;
    };
    let tools = tools(&server.ingress);
    server.serve(&tools).await;
    let client = RestateClient::new(&server.ingress);

    let lead = Principal::new("dana").in_group("finance-leads");
    let until = SystemTime::now() + Duration::from_secs(3600);
    let rule = || {
        StandingRule::new("acme", "refund", until)
            .when_equals("/customer", json!("acme"))
            .when("amount_at_most", json!(100))
    };
    // Only a finance lead makes rules.
    let refused = tools.rules().make(&Principal::new("bob"), rule()).await;
    assert!(
        matches!(refused, Err(RuntimeError::RuleRefused { .. })),
        "{refused:?}"
    );
    let made = tools.rules().make(&lead, rule()).await.expect("make");
    assert_eq!(made.author, "dana");

    let small = client.call("r1", refund("acme", 80)).await.expect("call");
    assert_eq!(
        small.output(),
        Some(&json!({ "refunded": 80 })),
        "{small:?}"
    );
    assert!(waits(
        &client.call("r2", refund("acme", 800)).await.expect("call")
    ));
    assert!(waits(
        &client.call("r3", refund("zeta", 10)).await.expect("call")
    ));

    // The approval is audited on the call, naming the rule.
    let rows = server
        .query("SELECT value_utf8 FROM state WHERE service_name = 'ToolCalls' AND service_key = 'r1' AND key = 'audit'")
        .await
        .expect("query");
    let audit = rows[0]["value_utf8"].as_str().expect("text");
    assert!(audit.contains("standing rule \\\"acme\\\""), "{audit}");

    // Read by another runtime through the same object.
    let elsewhere = Runtime::builder()
        .rule_store(Arc::new(RestateRules::new(&server.ingress)))
        .build()
        .expect("runtime");
    let in_force = elsewhere
        .rules()
        .in_force(Some("refund"))
        .await
        .expect("read");
    assert_eq!(in_force.len(), 1);

    let revoked = tools.rules().revoke(&lead, "acme").await.expect("revoke");
    assert!(revoked.is_some_and(|rule| rule.revoked.is_some()));
    assert!(waits(
        &client.call("r4", refund("acme", 80)).await.expect("call")
    ));
    assert!(tools.rules().in_force(None).await.expect("read").is_empty());
    // An id is never reused, also once revoked.
    let again = tools.rules().make(&lead, rule()).await;
    assert!(
        matches!(again, Err(RuntimeError::RuleRefused { .. })),
        "{again:?}"
    );
}
