//! Background tools through a real Restate server: a call queues the task
//! and answers at once; the task runs in an invocation of its own (the
//! object's `settle`), with its tool's retries and the runtime's hooks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{BackgroundConfig, Tool, ToolContext, ToolError};
use tool_restate::{
    CallRequest, DecideRequest, RestateClient, RestateError, RestateTools, WireDecision,
};
use tool_runtime::{CallOutcome, CallState, Decider, Principal, Runtime};

use crate::server::Restate;

/// How often `report` ran and how many tasks the completion hook saw.
#[derive(Default)]
struct Counts {
    report: AtomicUsize,
    completed: AtomicUsize,
}

/// `report` fails its first attempt and has one retry; `export` needs an
/// approval before its task is queued.
fn tools(ingress: &str, counts: &Arc<Counts>) -> RestateTools {
    let counts = Arc::clone(counts);
    RestateTools::new(ingress, move || {
        let (ran, completed) = (Arc::clone(&counts), Arc::clone(&counts));
        let report = Tool::builder("report")
            .description("Builds a report")
            .background(BackgroundConfig::new().timeout_ms(10_000).max_retries(1))
            .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
                let attempt = ran.report.fetch_add(1, Ordering::SeqCst) + 1;
                async move {
                    if attempt == 1 {
                        return Err(ToolError::new("the first attempt fails"));
                    }
                    Ok::<_, ToolError>(json!({ "rows": input["rows"] }))
                }
            })
            .build()
            .expect("report");
        let export = Tool::builder("export")
            .description("Exports the books")
            .require_approval(true)
            .background(BackgroundConfig::new())
            .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
                Ok::<_, ToolError>(json!({ "exported": input["year"] }))
            })
            .build()
            .expect("export");
        Runtime::builder()
            .tools([report, export])
            .on_background_complete(move |_| {
                completed.completed.fetch_add(1, Ordering::SeqCst);
            })
    })
    .expect("tools")
}

async fn served(counts: &Arc<Counts>) -> Option<(Restate, RestateClient)> {
    let server = Restate::start().await?;
    server.serve(&tools(&server.ingress, counts)).await;
    let client = RestateClient::new(&server.ingress);
    Some((server, client))
}

#[tokio::test]
async fn a_background_task_runs_on_its_own_with_its_retries_and_is_waited_for() {
    let counts = Arc::new(Counts::default());
    let Some((_server, client)) = served(&counts).await else {
        return;
    };

    let request = CallRequest::new("report", json!({ "rows": 3 }));
    let started = client.call("r1", request.clone()).await.expect("call");
    assert!(
        matches!(&started, CallOutcome::BackgroundStarted { task_id } if task_id == "r1"),
        "{started:?}"
    );
    // Nobody waits: the invocation the call sent runs the task.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let settled = loop {
        let stored = client.get("r1").await.expect("get").expect("stored");
        if let CallState::Settled { outcome, .. } = &stored.state {
            break CallOutcome::from(outcome.clone());
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ran: {stored:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(settled.output(), Some(&json!({ "rows": 3 })), "{settled:?}");
    assert_eq!(
        counts.report.load(Ordering::SeqCst),
        2,
        "failed once, retried once"
    );
    assert_eq!(
        counts.completed.load(Ordering::SeqCst),
        1,
        "the hook saw it once"
    );

    // Waited for, and called again: its recorded outcome, never run again.
    let waited = client.wait("r1").await.expect("wait");
    assert_eq!(waited.output(), Some(&json!({ "rows": 3 })));
    let again = client.call("r1", request).await.expect("call again");
    assert_eq!(again.output(), Some(&json!({ "rows": 3 })));
    assert_eq!(counts.report.load(Ordering::SeqCst), 2);

    let none = client.wait("nobody").await;
    assert!(
        matches!(none, Err(RestateError::Refused { status: 404, .. })),
        "{none:?}"
    );
}

#[tokio::test]
async fn an_approved_background_call_is_queued_and_waited_for() {
    let counts = Arc::new(Counts::default());
    let Some((_server, client)) = served(&counts).await else {
        return;
    };

    let waiting = client
        .call(
            "e1",
            CallRequest::new("export", json!({ "year": 2026 })).requester("bob"),
        )
        .await
        .expect("call");
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );
    let early = client.wait("e1").await;
    assert!(
        matches!(early, Err(RestateError::Refused { status: 409, .. })),
        "nothing to wait for before the decision: {early:?}"
    );

    let stored = client.get("e1").await.expect("get").expect("stored");
    let decider = Decider::new(Principal::new("alice"), stored.digest());
    let started = client
        .decide("e1", DecideRequest::new(WireDecision::Approve).by(decider))
        .await
        .expect("approve");
    assert!(
        matches!(started, CallOutcome::BackgroundStarted { .. }),
        "{started:?}"
    );
    let done = client.wait("e1").await.expect("wait");
    assert_eq!(done.output(), Some(&json!({ "exported": 2026 })));
    assert_eq!(counts.completed.load(Ordering::SeqCst), 1);
}
