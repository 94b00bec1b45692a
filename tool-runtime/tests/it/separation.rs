//! The approval rules hold whoever decides: under separation of duties or
//! several approvals, code in the process cannot approve, resume or answer
//! a call without naming a principal; the requester cannot make their own
//! call go on by any kind of decision; the system decides under its own
//! name, recorded as such; and an application cannot write a grant.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::store::{AuditEntry, AuditKind, AuditQuery};
use tool_runtime::{CallOutcome, Decider, Decision, Principal, Runtime, RuntimeError, ToolCall};

/// A refund that needs approval and counts its runs.
fn refund(runs: &Arc<AtomicUsize>) -> Tool {
    let runs = Arc::clone(runs);
    Tool::builder("refund")
        .description("Refunds an order")
        .require_approval(true)
        .execute(move |input: Value, _ctx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(json!({ "refunded": input["amount"] })) }
        })
        .build()
        .unwrap()
}

/// A booking that asks its user to confirm (suspends), then books.
fn book() -> Tool {
    Tool::builder("book")
        .description("Books a flight after confirmation")
        .suspend_schema(json!({ "type": "string" }))
        .resume_schema(json!({ "type": "boolean" }))
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            match ctx.resume_data() {
                None => ctx.suspend(json!("book it?")),
                Some(answer) => Ok::<_, ToolError>(json!({ "booked": answer })),
            }
        })
        .build()
        .unwrap()
}

async fn digest(runtime: &Runtime, call_id: &str) -> tool_runtime::Digest {
    runtime
        .inbox()
        .stored(call_id)
        .await
        .unwrap()
        .unwrap()
        .digest()
}

#[tokio::test]
async fn under_separation_of_duties_a_decision_naming_nobody_cannot_make_a_call_go_on() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = Runtime::builder()
        .tool(refund(&runs))
        .tool(book())
        .forbid_self_approval(true)
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new("r1", "refund", json!({ "amount": 900 })).with_requester("alice"))
        .await;
    let refused = runtime.approve("r1").await.unwrap_err();
    assert!(
        matches!(refused, RuntimeError::PrincipalRequired { .. }),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("decide_as"), "{refused}");
    let refused = runtime
        .respond("r1", json!({ "refunded": 0 }))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, RuntimeError::PrincipalRequired { .. }),
        "{refused:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the refund never ran");

    runtime
        .call(ToolCall::new("b1", "book", json!({})).with_requester("alice"))
        .await;
    let refused = runtime.resume("b1", json!(true)).await.unwrap_err();
    assert!(
        matches!(refused, RuntimeError::PrincipalRequired { .. }),
        "{refused:?}"
    );

    // Stopping a call needs nobody else.
    let declined = runtime.decline("r1", Some("not today")).await.unwrap();
    assert!(
        matches!(declined, CallOutcome::Declined { .. }),
        "{declined:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_requester_cannot_resume_their_own_suspended_call_under_separation_of_duties() {
    let runtime = Runtime::builder()
        .tool(book())
        .forbid_self_approval(true)
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new("b1", "book", json!({})).with_requester("alice"))
        .await;
    let digest = digest(&runtime, "b1").await;
    let own = runtime
        .decide_as(
            "b1",
            Decision::Resume(json!(true)),
            Decider::new(Principal::new("alice"), digest.clone()),
        )
        .await;
    assert!(
        matches!(own, Err(RuntimeError::SelfApproval { .. })),
        "{own:?}"
    );
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("b1"))
        .await
        .unwrap();
    assert!(
        log.iter()
            .any(|e| e.kind == AuditKind::Refused && e.action == "resume"),
        "the attempt is logged: {log:?}"
    );
    let other = runtime
        .decide_as(
            "b1",
            Decision::Resume(json!(true)),
            Decider::new(Principal::new("bob"), digest),
        )
        .await
        .unwrap();
    assert_eq!(other.output(), Some(&json!({ "booked": true })));
}

#[tokio::test]
async fn the_system_decides_under_its_own_name_and_the_audit_log_says_so() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = Runtime::builder()
        .tool(refund(&runs))
        .forbid_self_approval(true)
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new("r1", "refund", json!({ "amount": 5 })).with_requester("alice"))
        .await;
    let digest = digest(&runtime, "r1").await;
    let outcome = runtime
        .decide_as(
            "r1",
            Decision::Approve,
            Decider::new(Principal::system("small-refunds"), digest),
        )
        .await
        .unwrap();
    assert_eq!(outcome.output(), Some(&json!({ "refunded": 5 })));
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("r1"))
        .await
        .unwrap();
    let decided = log.iter().find(|e| e.kind == AuditKind::Decided).unwrap();
    assert_eq!(decided.principal.as_deref(), Some("system:small-refunds"));
}

#[tokio::test]
async fn an_application_cannot_append_a_grant_and_its_notes_never_count() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = Runtime::builder()
        .tool(refund(&runs))
        .approvals_required(2)
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new("r1", "refund", json!({ "amount": 5 })))
        .await;
    let digest = digest(&runtime, "r1").await;
    for kind in [AuditKind::Granted, AuditKind::Decided, AuditKind::Requested] {
        let forged = AuditEntry::new(kind, "r1", "refund", "approve")
            .principal("mallory")
            .digest(&digest);
        let refused = runtime.inbox().append_audit(forged).await.unwrap_err();
        assert!(
            matches!(refused, RuntimeError::ReservedAuditKind { .. }),
            "{refused:?}"
        );
    }
    let note = AuditEntry::new(AuditKind::Noted, "r1", "refund", "approve")
        .principal("mallory")
        .digest(&digest);
    runtime.inbox().append_audit(note).await.unwrap();
    let first = runtime
        .decide_as(
            "r1",
            Decision::Approve,
            Decider::new(Principal::new("alice"), digest),
        )
        .await
        .unwrap();
    assert!(
        matches!(first, CallOutcome::ApprovalRequired { .. }),
        "one grant of two: {first:?}"
    );
    assert_eq!(
        runtime.inbox().approvals("r1").await.unwrap().granted,
        ["alice"]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
