//! Approvals that expire, and the requester who may not approve their own
//! call: across runtimes sharing a store, an overdue approval is declined
//! "expired" exactly once, by whichever notices first; a decision on it is
//! told so; both show in the audit log.

use std::time::Duration;

use serde_json::json;
use tool_core::{Tool, ToolError};
use tool_runtime::store::{AuditKind, AuditQuery, SqliteStore};
use tool_runtime::{
    CallOutcome, CallState, Decider, Decision, Principal, Runtime, RuntimeError, ToolCall,
};

fn transfer() -> Tool {
    Tool::builder("transfer")
        .description("Moves money")
        .require_approval(true)
        .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
        .build()
        .unwrap()
}

fn runtimes(path: &std::path::Path, ttl: Duration) -> Vec<Runtime> {
    (0..4)
        .map(|_| {
            Runtime::builder()
                .tool(transfer())
                .store(SqliteStore::open(path).unwrap())
                .approval_ttl(ttl)
                .forbid_self_approval(true)
                .build()
                .unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overdue_approval_is_declined_expired_once_across_runtimes() {
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("tool-runtime-expiry-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let runtimes = runtimes(&dir.join("calls.sqlite"), Duration::from_millis(200));
    for n in 0..10 {
        let call =
            ToolCall::new(format!("c{n}"), "transfer", json!({ "n": n })).with_requester("alice");
        runtimes[0].call(call).await;
    }
    assert_eq!(
        runtimes[1].inbox().waiting().await.unwrap().len(),
        10,
        "not yet"
    );
    let digest = runtimes[0]
        .inbox()
        .stored("c0")
        .await
        .unwrap()
        .unwrap()
        .digest();
    let stored = runtimes[0].inbox().stored("c0").await.unwrap().unwrap();
    assert!(stored.call.expires_at_ms.is_some());
    assert_eq!(stored.call.head.requester.as_deref(), Some("alice"));

    tokio::time::sleep(Duration::from_millis(300)).await;
    // Every runtime notices at once: listings, recoveries and a decision.
    let mut noticing = Vec::new();
    for runtime in &runtimes {
        let (listing, recovering) = (runtime.clone(), runtime.clone());
        noticing.push(tokio::spawn(async move {
            listing.inbox().waiting().await.map(|w| w.len())
        }));
        noticing.push(tokio::spawn(async move {
            recovering.recover().await.map(|_| 0)
        }));
    }
    let late = runtimes[2]
        .decide_as(
            "c0",
            Decision::Approve,
            Decider::new(Principal::new("bob"), digest.clone()),
        )
        .await;
    for task in noticing {
        assert_eq!(task.await.unwrap().unwrap(), 0, "nothing waits any more");
    }
    let expired = CallOutcome::Declined {
        reason: Some("expired".into()),
    };
    match late {
        Err(RuntimeError::AlreadyDecided { outcome, .. }) => assert_eq!(*outcome, expired),
        other => panic!("the late approval is told the call expired: {other:?}"),
    }
    let log = runtimes[3].inbox().audit(AuditQuery::all()).await.unwrap();
    for n in 0..10 {
        let id = format!("c{n}");
        let stored = runtimes[3].inbox().stored(&id).await.unwrap().unwrap();
        let CallState::Settled { outcome, .. } = stored.state else {
            panic!("{stored:?}")
        };
        assert_eq!(CallOutcome::from(outcome), expired);
        let expiries = log
            .iter()
            .filter(|e| e.call_id == id && e.kind == AuditKind::Decided && e.action == "expire")
            .count();
        assert_eq!(expiries, 1, "{id} expired once");
    }
    let refused: Vec<_> = log
        .iter()
        .filter(|e| e.kind == AuditKind::Refused && e.call_id == "c0")
        .map(|e| (e.principal.as_deref(), e.reason.as_deref()))
        .collect();
    assert_eq!(refused, [(Some("bob"), Some("expired"))]);
    tmp.close().unwrap();
}

#[tokio::test]
async fn the_requester_may_not_approve_and_a_call_without_one_is_refused() {
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("tool-runtime-self-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let runtimes = runtimes(&dir.join("calls.sqlite"), Duration::from_secs(3600));
    let anonymous = runtimes[0]
        .call(ToolCall::new("c0", "transfer", json!({})))
        .await;
    assert!(
        anonymous.error().unwrap().message().contains("requester"),
        "{anonymous:?}"
    );
    assert!(
        runtimes[0].inbox().stored("c0").await.unwrap().is_none(),
        "not stored"
    );

    runtimes[0]
        .call(ToolCall::new("c1", "transfer", json!({})).with_requester("alice"))
        .await;
    let digest = runtimes[0]
        .inbox()
        .stored("c1")
        .await
        .unwrap()
        .unwrap()
        .digest();
    for decision in [Decision::Approve, Decision::Respond(json!("done by hand"))] {
        let own = runtimes[1]
            .decide_as(
                "c1",
                decision,
                Decider::new(Principal::new("alice"), digest.clone()),
            )
            .await;
        assert!(
            matches!(own, Err(RuntimeError::SelfApproval { .. })),
            "{own:?}"
        );
    }
    // Declining one's own request is allowed.
    let declined = runtimes[2]
        .decide_as(
            "c1",
            Decision::Decline(Some("changed my mind".into())),
            Decider::new(Principal::new("alice"), digest.clone()),
        )
        .await
        .unwrap();
    assert!(matches!(declined, CallOutcome::Declined { .. }));
    let refusals = runtimes[3]
        .inbox()
        .audit(AuditQuery::all().call("c1"))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == AuditKind::Refused)
        .count();
    assert_eq!(refusals, 2);
    tmp.close().unwrap();
}
