//! Approval policies that answer with a requirement: "two of finance above
//! 1,000" said on the call's input, kept with the call on every instance
//! and enforced by the decisions; a call refused outright; and a call's
//! own time limit kept across its pause.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_core::{ApprovalRequirement, RequestContext, ToolContext, ToolError, tool};
use tool_runtime::store::{MemoryStore, SqliteStore};
use tool_runtime::{CallOutcome, Decider, Decision, Principal, Runtime, RuntimeError, ToolCall};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Refund {
    order: String,
    amount: u32,
}

/// Who must approve a refund, by its amount.
fn refund_policy(refund: &Refund, _rc: &RequestContext) -> ApprovalRequirement {
    match refund.amount {
        0..=100 => ApprovalRequirement::NotRequired,
        101..=1_000 => ApprovalRequirement::required(),
        1_001..=10_000 => ApprovalRequirement::approvals(2).from_group("finance"),
        _ => {
            ApprovalRequirement::refused("refunds above 10,000 go through the bank, not this agent")
        }
    }
}

/// Refunds an order.
#[tool(require_approval = refund_policy)]
async fn refund(refund: Refund) -> String {
    format!("refunded {} on {}", refund.amount, refund.order)
}

fn finance(name: &str) -> Principal {
    Principal::new(name).in_group("finance")
}

/// A call needing two of finance: refused to an outsider, waiting after
/// one member's grant, run by a second member's; its outcome.
async fn two_of_finance_run_it(runtime: &Runtime, call_id: &str) -> CallOutcome {
    let outsider = decide(runtime, call_id, Principal::new("support-desk")).await;
    assert!(
        matches!(outsider, Err(RuntimeError::NotInGroup { .. })),
        "{outsider:?}"
    );
    let first = decide(runtime, call_id, finance("alice")).await.unwrap();
    assert!(
        matches!(first, CallOutcome::ApprovalRequired { .. }),
        "one of two: {first:?}"
    );
    decide(runtime, call_id, finance("bob")).await.unwrap()
}

async fn decide(
    runtime: &Runtime,
    call_id: &str,
    principal: Principal,
) -> Result<CallOutcome, RuntimeError> {
    let digest = runtime
        .inbox()
        .stored(call_id)
        .await
        .unwrap()
        .unwrap()
        .digest();
    runtime
        .decide_as(call_id, Decision::Approve, Decider::new(principal, digest))
        .await
}

#[tokio::test]
async fn two_of_finance_above_a_thousand_one_of_anyone_below_none_for_small_refunds() {
    let runtime = Runtime::builder().tool(RefundTool).build().unwrap();
    let small = runtime
        .call(ToolCall::new(
            "r0",
            "refund",
            json!({ "order": "A1", "amount": 40 }),
        ))
        .await;
    assert_eq!(small.output(), Some(&json!("refunded 40 on A1")));

    runtime
        .call(ToolCall::new(
            "r1",
            "refund",
            json!({ "order": "A2", "amount": 500 }),
        ))
        .await;
    let approvals = runtime.inbox().approvals("r1").await.unwrap();
    assert_eq!((approvals.required, approvals.group), (1, None));
    let outcome = decide(&runtime, "r1", Principal::new("support-desk"))
        .await
        .unwrap();
    assert_eq!(outcome.output(), Some(&json!("refunded 500 on A2")));

    let waiting = runtime
        .call(ToolCall::new(
            "r2",
            "refund",
            json!({ "order": "A3", "amount": 5_000 }),
        ))
        .await;
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );
    let approvals = runtime.inbox().approvals("r2").await.unwrap();
    assert_eq!(
        (approvals.required, approvals.group.as_deref()),
        (2, Some("finance"))
    );
    let nobody = runtime.approve("r2").await;
    assert!(
        matches!(nobody, Err(RuntimeError::PrincipalRequired { .. })),
        "{nobody:?}"
    );
    let second = two_of_finance_run_it(&runtime, "r2").await;
    assert_eq!(second.output(), Some(&json!("refunded 5000 on A3")));
    assert_eq!(
        runtime
            .inbox()
            .approvals("r2")
            .await
            .map(|a| a.granted)
            .ok(),
        None,
        "settled: no longer waiting"
    );
}

#[tokio::test]
async fn a_call_the_policy_refuses_fails_with_its_reason_and_is_never_stored() {
    let runtime = Runtime::builder().tool(RefundTool).build().unwrap();
    let outcome = runtime
        .call(ToolCall::new(
            "r9",
            "refund",
            json!({ "order": "B1", "amount": 50_000 }),
        ))
        .await;
    let error = outcome.error().expect("refused");
    assert!(error.message().contains("go through the bank"), "{error:?}");
    assert!(runtime.inbox().stored("r9").await.unwrap().is_none());
}

#[tokio::test]
async fn the_requirement_is_stored_with_the_call_and_holds_on_another_instance() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let store = Arc::new(SqliteStore::open(file.path()).unwrap());
    let front = Runtime::builder()
        .tool(RefundTool)
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    // Another instance whose own rules would ask one approval of anyone.
    let back = Runtime::builder()
        .tool(
            tool_core::Tool::builder("refund")
                .description("Refunds an order")
                .require_approval(true)
                .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
                .build()
                .unwrap(),
        )
        .store(store)
        .build()
        .unwrap();
    front
        .call(ToolCall::new(
            "r2",
            "refund",
            json!({ "order": "C1", "amount": 2_000 }),
        ))
        .await;
    let outsider = decide(&back, "r2", Principal::new("support-desk")).await;
    assert!(
        matches!(outsider, Err(RuntimeError::NotInGroup { .. })),
        "{outsider:?}"
    );
    let first = decide(&back, "r2", finance("alice")).await.unwrap();
    assert!(
        matches!(first, CallOutcome::ApprovalRequired { .. }),
        "{first:?}"
    );
}

/// Waits `ms` milliseconds, after approval or after it is resumed.
#[tool(require_approval)]
async fn slow(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    "finished".into()
}

/// Asks first, then waits `ms` milliseconds.
#[tool]
async fn slow_after_asking(ms: u64, ctx: ToolContext<String, bool>) -> Result<String, ToolError> {
    if ctx.resume_data().is_none() {
        return ctx.suspend("go on?".into());
    }
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok("finished".into())
}

#[tokio::test]
async fn a_calls_own_time_limit_holds_after_its_pause_on_another_instance() {
    let store = Arc::new(MemoryStore::new());
    let instance = || {
        Runtime::builder()
            .tool(SlowTool)
            .tool(SlowAfterAskingTool)
            .store(Arc::clone(&store))
            .build()
            .unwrap()
    };
    let (front, back) = (instance(), instance());
    let limit = Duration::from_millis(100);
    front
        .call(ToolCall::new("s1", "slow", json!({ "ms": 10_000 })).with_timeout(limit))
        .await;
    let stored = back.inbox().stored("s1").await.unwrap().unwrap();
    assert_eq!(stored.call.head.timeout_ms, Some(100));
    let outcome = tokio::time::timeout(Duration::from_secs(5), back.approve("s1"))
        .await
        .expect("the call's limit ended it, not the test's")
        .unwrap();
    assert_eq!(outcome, CallOutcome::Aborted);

    front
        .call(ToolCall::new("s2", "slow_after_asking", json!({ "ms": 10_000 })).with_timeout(limit))
        .await;
    let outcome = tokio::time::timeout(Duration::from_secs(5), back.resume("s2", json!(true)))
        .await
        .expect("the call's limit ended it, not the test's")
        .unwrap();
    assert_eq!(outcome, CallOutcome::Aborted);
}

/// Waits `ms` milliseconds in the background, retried once after a failure.
#[tool(background(max_retries = 1))]
async fn slow_task(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    "finished".into()
}

#[tokio::test]
async fn a_background_calls_own_time_limit_holds_on_the_worker_that_runs_and_retries_it() {
    let store = Arc::new(MemoryStore::new());
    let instance = |leave: bool| {
        Runtime::builder()
            .tool(SlowTaskTool)
            .store(Arc::clone(&store))
            .leave_tasks_to_workers(leave)
            .build()
            .unwrap()
    };
    let (front, back) = (instance(true), instance(false));
    let limit = Duration::from_millis(100);
    let started = front
        .call(ToolCall::new("t1", "slow_task", json!({ "ms": 10_000 })).with_timeout(limit))
        .await;
    assert!(
        matches!(started, CallOutcome::BackgroundStarted { .. }),
        "{started:?}"
    );
    let stored = back.inbox().stored("t1").await.unwrap().unwrap();
    assert_eq!(stored.call.head.timeout_ms, Some(100), "kept with the task");
    tokio::spawn(back.worker().run());
    let outcome = tokio::time::timeout(Duration::from_secs(5), back.wait("t1"))
        .await
        .expect("the call's limit ended each attempt, not the test's")
        .unwrap();
    let error = outcome.error().expect("timed out twice");
    assert!(
        error.message().contains("timed out") || error.message().contains("time limit"),
        "{error:?}"
    );
}

/// Refunds an order; a reviewer may change the amount.
#[tool(id = "refund-editable", require_approval(policy = refund_policy, editable(amount)))]
async fn refund_editable(refund: Refund) -> String {
    format!("refunded {} on {}", refund.amount, refund.order)
}

async fn edit_as(
    runtime: &Runtime,
    call_id: &str,
    principal: Principal,
    amount: u32,
) -> Result<CallOutcome, RuntimeError> {
    let digest = runtime
        .inbox()
        .stored(call_id)
        .await
        .unwrap()
        .unwrap()
        .digest();
    runtime
        .decide_as(
            call_id,
            Decision::Edit(json!({ "amount": amount })),
            Decider::new(principal, digest),
        )
        .await
}

#[tokio::test]
async fn an_edit_under_several_approvals_is_a_new_version_the_policy_judges_again() {
    let runtime = Runtime::builder().tool(RefundEditableTool).build().unwrap();
    runtime
        .call(ToolCall::new(
            "e1",
            "refund-editable",
            json!({ "order": "D1", "amount": 3_000 }),
        ))
        .await;
    let granted = decide(&runtime, "e1", finance("alice")).await.unwrap();
    assert!(
        matches!(granted, CallOutcome::ApprovalRequired { .. }),
        "{granted:?}"
    );

    // Bob lowers the amount: a new version, his grant of it; alice's grant
    // was of the earlier version and no longer counts.
    let edited = edit_as(&runtime, "e1", finance("bob"), 2_500)
        .await
        .unwrap();
    assert!(
        matches!(edited, CallOutcome::ApprovalRequired { .. }),
        "{edited:?}"
    );
    let approvals = runtime.inbox().approvals("e1").await.unwrap();
    assert_eq!(approvals.granted, ["bob"]);
    assert_eq!(approvals.required, 2);

    // An edit the policy refuses leaves the call as it was.
    let refused = edit_as(&runtime, "e1", finance("bob"), 50_000)
        .await
        .unwrap();
    assert!(
        refused
            .error()
            .unwrap()
            .message()
            .contains("go through the bank"),
        "{refused:?}"
    );
    let stored = runtime.inbox().stored("e1").await.unwrap().unwrap();
    assert_eq!(stored.call.input["amount"], 2_500);

    // An edit down to one approval's range: the editor's grant completes it.
    let outcome = edit_as(&runtime, "e1", finance("carol"), 900)
        .await
        .unwrap();
    assert_eq!(outcome.output(), Some(&json!("refunded 900 on D1")));
}

#[tokio::test]
async fn an_edit_that_raises_the_amount_raises_what_the_call_needs() {
    let runtime = Runtime::builder().tool(RefundEditableTool).build().unwrap();
    runtime
        .call(ToolCall::new(
            "e2",
            "refund-editable",
            json!({ "order": "D2", "amount": 500 }),
        ))
        .await;
    // One approval of anyone: an edit within that range runs at once.
    let small = edit_as(&runtime, "e2", Principal::new("desk"), 400)
        .await
        .unwrap();
    assert_eq!(small.output(), Some(&json!("refunded 400 on D2")));

    runtime
        .call(ToolCall::new(
            "e3",
            "refund-editable",
            json!({ "order": "D3", "amount": 500 }),
        ))
        .await;
    // Raised above 1,000, the edited call needs two of finance: the desk's
    // edit stands, as a new version, without counting as a grant of it.
    let raised = edit_as(&runtime, "e3", Principal::new("desk"), 5_000)
        .await
        .unwrap();
    assert!(
        matches!(raised, CallOutcome::ApprovalRequired { .. }),
        "{raised:?}"
    );
    let approvals = runtime.inbox().approvals("e3").await.unwrap();
    assert_eq!(
        (
            approvals.required,
            approvals.group.as_deref(),
            approvals.granted.len()
        ),
        (2, Some("finance"), 0)
    );
    let done = two_of_finance_run_it(&runtime, "e3").await;
    assert_eq!(done.output(), Some(&json!("refunded 5000 on D3")));
}
