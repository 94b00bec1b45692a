//! Calls, approvals and suspensions through a real Restate server, as an
//! application makes them with `RestateClient`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_restate::{
    CallRequest, DecideRequest, RestateClient, RestateError, RestateTools, WireDecision,
};
use tool_runtime::{CallOutcome, Decider, Digest, Principal, Runtime};

use crate::server::Restate;

/// How often each tool ran.
#[derive(Default)]
struct Runs {
    add: AtomicUsize,
    pay: AtomicUsize,
}

/// `add` runs at once; `pay` needs two approvals, not by its requester;
/// `ask` needs one, then suspends for a confirmation.
fn tools(ingress: &str, runs: &Arc<Runs>) -> RestateTools {
    let runs = Arc::clone(runs);
    RestateTools::new(ingress, move || {
        let (for_add, for_pay) = (Arc::clone(&runs), Arc::clone(&runs));
        let add = Tool::builder("add")
            .description("Adds")
            .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
                for_add.add.fetch_add(1, Ordering::SeqCst);
                async move {
                    let sum = input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0);
                    Ok::<_, ToolError>(json!({ "sum": sum }))
                }
            })
            .build()
            .expect("add");
        let pay = Tool::builder("pay")
            .description("Pays")
            .require_approval(true)
            .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
                for_pay.pay.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ToolError>(json!({ "paid": input["amount"] })) }
            })
            .build()
            .expect("pay");
        let ask = Tool::builder("ask")
            .description("Asks before it acts")
            .require_approval(true)
            .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
                match ctx.resume_data() {
                    None => ctx.suspend(json!({ "confirm": input })),
                    Some(answer) => Ok::<_, ToolError>(json!({ "done": answer })),
                }
            })
            .build()
            .expect("ask");
        Runtime::builder()
            .tools([add, pay, ask])
            .tool_approvals_required("pay", 2)
            .forbid_self_approval(true)
    })
    .expect("tools")
}

/// A server serving the tools, and a client of its ingress.
async fn served(runs: &Arc<Runs>) -> Option<(Restate, RestateClient)> {
    let server = Restate::start().await?;
    server.serve(&tools(&server.ingress, runs)).await;
    let client = RestateClient::new(&server.ingress);
    Some((server, client))
}

async fn decide_as(
    client: &RestateClient,
    call_id: &str,
    who: &str,
    decision: WireDecision,
) -> Result<CallOutcome, RestateError> {
    let stored = client.get(call_id).await.expect("get").expect("stored");
    let decider = Decider::new(Principal::new(who), stored.digest());
    client
        .decide(call_id, DecideRequest::new(decision).by(decider))
        .await
}

#[tokio::test]
async fn a_call_runs_once_and_answers_with_its_outcome_when_made_again() {
    let runs = Arc::new(Runs::default());
    let Some((_server, client)) = served(&runs).await else {
        return;
    };

    let request = CallRequest::new("add", json!({ "a": 2, "b": 3 }));
    let outcome = client.call("c1", request.clone()).await.expect("call");
    assert_eq!(outcome.output(), Some(&json!({ "sum": 5 })));
    let again = client.call("c1", request).await.expect("call again");
    assert_eq!(again.output(), Some(&json!({ "sum": 5 })));
    assert_eq!(runs.add.load(Ordering::SeqCst), 1, "ran once");
    assert_eq!(
        client.get("c1").await.expect("get"),
        None,
        "never stored: it did not wait"
    );

    // Invalid input is the model's error, as on a Runtime.
    let invalid = client
        .call("c2", CallRequest::new("nope", json!({})))
        .await
        .expect("call");
    assert!(matches!(invalid, CallOutcome::Failed { .. }), "{invalid:?}");
}

#[tokio::test]
async fn two_principals_approve_and_a_late_decision_gets_the_recorded_outcome() {
    let runs = Arc::new(Runs::default());
    let Some((server, client)) = served(&runs).await else {
        return;
    };

    let waiting = client
        .call(
            "p1",
            CallRequest::new("pay", json!({ "amount": 1200 })).requester("mallory"),
        )
        .await
        .expect("call");
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );

    // Its requester may not approve it (separation of duties).
    let refused = decide_as(&client, "p1", "mallory", WireDecision::Approve).await;
    assert!(
        matches!(refused, Err(RestateError::Refused { status: 403, .. })),
        "{refused:?}"
    );
    // A digest of another version is stale.
    let stale = client
        .decide(
            "p1",
            DecideRequest::new(WireDecision::Approve).by(Decider::new(
                Principal::new("alice"),
                Digest::new("sha256:00"),
            )),
        )
        .await;
    assert!(
        matches!(stale, Err(RestateError::Refused { status: 409, .. })),
        "{stale:?}"
    );

    let first = decide_as(&client, "p1", "alice", WireDecision::Approve)
        .await
        .expect("first grant");
    assert!(
        matches!(first, CallOutcome::ApprovalRequired { .. }),
        "one of two: {first:?}"
    );
    assert_eq!(runs.pay.load(Ordering::SeqCst), 0);
    let done = decide_as(&client, "p1", "bob", WireDecision::Approve)
        .await
        .expect("second grant");
    assert_eq!(done.output(), Some(&json!({ "paid": 1200 })));
    assert_eq!(runs.pay.load(Ordering::SeqCst), 1);

    let late = decide_as(&client, "p1", "carol", WireDecision::Decline(None)).await;
    match late {
        Err(RestateError::AlreadyDecided { outcome, .. }) => {
            assert_eq!(outcome.output(), Some(&json!({ "paid": 1200 })));
        }
        other => panic!("expected the recorded outcome, got {other:?}"),
    }
    assert_eq!(runs.pay.load(Ordering::SeqCst), 1, "ran once");

    // The audit trail is the call's object's state, which Restate's SQL
    // introspection reads.
    let rows = server
        .query("SELECT value_utf8 FROM state WHERE service_name = 'ToolCalls' AND service_key = 'p1' AND key = 'audit'")
        .await
        .expect("query");
    let audit: Vec<Value> =
        serde_json::from_str(rows[0]["value_utf8"].as_str().expect("text")).expect("audit json");
    let by = |principal: &str| audit.iter().filter(|e| e["principal"] == principal).count();
    assert!(
        by("alice") >= 1 && by("bob") >= 1,
        "grants audited: {audit:?}"
    );
    assert!(
        by("mallory") >= 1 && by("carol") >= 1,
        "refused attempts audited: {audit:?}"
    );
}

#[tokio::test]
async fn an_approved_call_suspends_and_resumes() {
    let runs = Arc::new(Runs::default());
    let Some((_server, client)) = served(&runs).await else {
        return;
    };

    let waiting = client
        .call(
            "a1",
            CallRequest::new("ask", json!({ "x": 1 })).requester("mallory"),
        )
        .await
        .expect("call");
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );
    // Its requester set, an approval must name who decides.
    let anonymous = client
        .decide("a1", DecideRequest::new(WireDecision::Approve))
        .await;
    assert!(
        matches!(anonymous, Err(RestateError::Refused { status: 403, .. })),
        "{anonymous:?}"
    );
    let suspended = decide_as(&client, "a1", "alice", WireDecision::Approve)
        .await
        .expect("approve");
    match &suspended {
        CallOutcome::Suspended { payload, .. } => {
            assert_eq!(payload, &json!({ "confirm": { "x": 1 } }))
        }
        other => panic!("expected a suspension, got {other:?}"),
    }
    // Resumed on the version it suspended as (a later digest than approved).
    let done = decide_as(&client, "a1", "alice", WireDecision::Resume(json!("yes")))
        .await
        .expect("resume");
    assert_eq!(done.output(), Some(&json!({ "done": "yes" })));

    let unknown = client
        .decide("nobody", DecideRequest::new(WireDecision::Approve))
        .await;
    assert!(
        matches!(unknown, Err(RestateError::Refused { status: 404, .. })),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn a_waiting_call_survives_a_restart_of_the_server_and_a_new_service() {
    let runs = Arc::new(Runs::default());
    let Some(mut server) = Restate::start().await else {
        return;
    };
    server.serve(&tools(&server.ingress, &runs)).await;
    let client = RestateClient::new(&server.ingress);
    let waiting = client
        .call(
            "r1",
            CallRequest::new("pay", json!({ "amount": 7 })).requester("mallory"),
        )
        .await
        .expect("call");
    assert!(matches!(waiting, CallOutcome::ApprovalRequired { .. }));
    decide_as(&client, "r1", "alice", WireDecision::Approve)
        .await
        .expect("first grant");

    server.restart().await;
    // Another service process would register again at another address.
    server.serve(&tools(&server.ingress, &runs)).await;
    let done = decide_as(&client, "r1", "bob", WireDecision::Approve)
        .await
        .expect("second grant");
    assert_eq!(
        done.output(),
        Some(&json!({ "paid": 7 })),
        "alice's grant survived"
    );
    assert_eq!(runs.pay.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn eight_concurrent_deciders_run_the_call_once() {
    let runs = Arc::new(Runs::default());
    let Some((_server, client)) = served(&runs).await else {
        return;
    };
    client
        .call(
            "m1",
            CallRequest::new("pay", json!({ "amount": 3 })).requester("mallory"),
        )
        .await
        .expect("call");
    let deciding: Vec<_> = (0..8)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                decide_as(
                    &client,
                    "m1",
                    &format!("approver-{i}"),
                    WireDecision::Approve,
                )
                .await
            })
        })
        .collect();
    let (mut completed, mut granted, mut late) = (0, 0, 0);
    for decision in deciding {
        match decision.await.expect("task") {
            Ok(CallOutcome::Completed { .. }) => completed += 1,
            Ok(CallOutcome::ApprovalRequired { .. }) => granted += 1,
            Err(RestateError::AlreadyDecided { outcome, .. }) => {
                assert_eq!(outcome.output(), Some(&json!({ "paid": 3 })));
                late += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((completed, granted, late), (1, 1, 6));
    assert_eq!(runs.pay.load(Ordering::SeqCst), 1, "ran once");
}

#[tokio::test]
async fn the_waiting_calls_are_listed_from_the_servers_state_a_page_at_a_time() {
    let runs = Arc::new(Runs::default());
    let Some((server, client)) = served(&runs).await else {
        return;
    };
    let client = client.admin(&server.admin);
    for id in ["w1", "w2", "w3"] {
        client
            .call(
                id,
                CallRequest::new("ask", json!({ "id": id })).requester("mallory"),
            )
            .await
            .expect("call");
    }
    client
        .call("plain", CallRequest::new("add", json!({ "a": 1, "b": 1 })))
        .await
        .expect("call");
    decide_as(&client, "w3", "alice", WireDecision::Decline(None))
        .await
        .expect("declined");

    let ids = |calls: Vec<tool_runtime::StoredCall>| -> Vec<String> {
        calls
            .into_iter()
            .map(|stored| stored.call.head.call_id)
            .collect()
    };
    // The introspection reads the partition's state as it is applied.
    let started = std::time::Instant::now();
    let listed = loop {
        let listed = ids(client.waiting(None, 50).await.expect("waiting"));
        if listed == ["w1", "w2"] || started.elapsed() > std::time::Duration::from_secs(10) {
            break listed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        listed,
        ["w1", "w2"],
        "waiting only: not the plain call, not the declined one"
    );
    assert_eq!(ids(client.waiting(None, 1).await.expect("page")), ["w1"]);
    assert_eq!(
        ids(client.waiting(Some("w1"), 1).await.expect("next page")),
        ["w2"]
    );
    assert!(
        client
            .waiting(Some("w2"), 1)
            .await
            .expect("last page")
            .is_empty()
    );

    let without_admin = RestateClient::new(&server.ingress).waiting(None, 1).await;
    assert!(matches!(without_admin, Err(RestateError::NoAdmin)));
}

#[tokio::test]
async fn an_approval_that_expires_is_declined_by_a_durable_timer() {
    let Some(server) = Restate::start().await else {
        return;
    };
    let tools = RestateTools::new(&server.ingress, || {
        Runtime::builder()
            .tool(crate::tools::pay_echo())
            .approval_ttl(std::time::Duration::from_millis(800))
    })
    .expect("tools");
    server.serve(&tools).await;
    let client = RestateClient::new(&server.ingress).admin(&server.admin);

    let waiting = client
        .call("x1", CallRequest::new("pay", json!({ "amount": 3 })))
        .await
        .expect("call");
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );
    assert_eq!(client.waiting(None, 10).await.expect("waiting").len(), 1);

    // Nobody decides: the object's timer declines it, and nobody lists it.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let outcome = loop {
        let stored = client.get("x1").await.expect("get").expect("stored");
        if let tool_runtime::CallState::Settled { outcome, .. } = stored.state {
            break CallOutcome::from(outcome);
        }
        assert!(tokio::time::Instant::now() < deadline, "never expired");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        outcome,
        CallOutcome::Declined {
            reason: Some("expired".into())
        }
    );
    assert!(client.waiting(None, 10).await.expect("waiting").is_empty());
    // A late approval reads the recorded outcome, as a runtime answers it.
    let late = client
        .decide("x1", DecideRequest::new(WireDecision::Approve))
        .await
        .expect("decide");
    assert_eq!(
        late,
        CallOutcome::Declined {
            reason: Some("expired".into())
        }
    );
}
