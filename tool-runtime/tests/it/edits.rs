//! Approving with edits: a person changes the editable arguments of a call
//! waiting for approval; the tool runs with the edited input (after a
//! recovery too: the store keeps it), refused edits leave the call waiting,
//! and the audit log keeps the before and after as displayed.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_core::transform::{Target, ToolTransform};
use tool_core::{Tool, ToolError};
use tool_runtime::store::{AuditKind, AuditQuery, SqliteStore};
use tool_runtime::{CallOutcome, Decider, Decision, Principal, Runtime, ToolCall};

fn transfer(seen: Arc<Mutex<Vec<Value>>>) -> Tool {
    Tool::builder("transfer")
        .description("Moves money")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "to": { "type": "string" },
                "amount": { "type": "integer", "minimum": 1, "maximum": 1000 },
                "memo": { "type": "string" },
                "apiKey": { "type": "string" }
            },
            "required": ["to", "amount"]
        }))
        .require_approval(true)
        .editable(["amount", "memo"])
        .transform(ToolTransform::new().redact(Target::Display, &["apiKey"]))
        .execute(move |input: Value, _ctx| {
            seen.lock().unwrap().push(input.clone());
            async move { Ok::<_, ToolError>(json!({ "moved": input["amount"] })) }
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_with_edits_runs_the_edited_input_and_logs_before_and_after() {
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("tool-runtime-edits-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runtime = Runtime::builder()
        .tool(transfer(Arc::clone(&seen)))
        .store(SqliteStore::open(dir.join("calls.sqlite")).unwrap())
        .build()
        .unwrap();
    let input = json!({ "to": "bob", "amount": 900, "apiKey": "sk-secret" });
    runtime.call(ToolCall::new("c1", "transfer", input)).await;
    let digest = runtime
        .inbox()
        .stored("c1")
        .await
        .unwrap()
        .unwrap()
        .digest();
    let decide = |edit: Value| {
        runtime.decide_as(
            "c1",
            Decision::Edit(edit),
            Decider::new(Principal::new("alice"), digest.clone()),
        )
    };

    // A field that is not editable, and a value the schema refuses: the
    // call still waits, nothing ran.
    let outside = decide(json!({ "to": "mallory" })).await.unwrap();
    let message = outside.error().expect("refused").message().to_owned();
    assert!(
        message.contains("to") && message.contains("amount"),
        "{message}"
    );
    let too_much = decide(json!({ "amount": 5000 })).await.unwrap();
    assert!(too_much.error().is_some(), "{too_much:?}");
    assert!(
        runtime
            .inbox()
            .stored("c1")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
    assert!(seen.lock().unwrap().is_empty());

    let outcome = decide(json!({ "amount": 90, "memo": "capped" }))
        .await
        .unwrap();
    assert_eq!(outcome.output(), Some(&json!({ "moved": 90 })));
    assert_eq!(
        *seen.lock().unwrap(),
        [json!({ "to": "bob", "amount": 90, "memo": "capped", "apiKey": "sk-secret" })]
    );
    assert_eq!(
        runtime
            .inbox()
            .stored("c1")
            .await
            .unwrap()
            .unwrap()
            .call
            .input["amount"],
        90,
        "the store keeps the edited input"
    );

    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("c1"))
        .await
        .unwrap();
    let decided = log.iter().find(|e| e.kind == AuditKind::Decided).unwrap();
    assert_eq!(
        (decided.action.as_str(), decided.principal.as_deref()),
        ("edit", Some("alice"))
    );
    assert_eq!(
        decided.detail,
        Some(json!({
            "before": { "to": "bob", "amount": 900 },
            "after": { "to": "bob", "amount": 90, "memo": "capped" }
        })),
        "before and after as displayed: the apiKey never"
    );
    let late = runtime
        .decide_as(
            "c1",
            Decision::Approve,
            Decider::new(Principal::new("bob"), digest.clone()),
        )
        .await;
    assert!(late.is_err(), "decided once: {late:?}");
    assert!(matches!(outcome, CallOutcome::Completed { .. }));
    tmp.close().unwrap();
}
