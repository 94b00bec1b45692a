//! A tool's display transform in every phase a UI sees, through the
//! runtime's events: `ToolTransform::redact` hides a field from the input,
//! the approval request, the suspension's payload, the resume data and the
//! output, while the tool and the model get the raw values.

use serde_json::{Value, json};
use tool_core::transform::{Target, ToolTransform};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::{CallOutcome, EventKind, Runtime, ToolCall};

/// Needs approval, then asks for a confirmation, then pays; every payload
/// carries a `token` that UIs must not show.
fn pay() -> Tool {
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .suspend_schema(json!({ "type": "object" }))
        .resume_schema(json!({ "type": "object" }))
        .transform(ToolTransform::new().redact(Target::Display, &["token"]))
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            let Some(data) = ctx.resume_data() else {
                return ctx.suspend(json!({ "question": "sure?", "token": "suspend-secret" }));
            };
            Ok::<_, ToolError>(json!({
                "paid": input["amount"],
                "token": "output-secret",
                "seen": [input["token"], data["token"]],
            }))
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redacted_field_is_hidden_in_every_phase_a_ui_sees_and_raw_for_the_tool() {
    let runtime = Runtime::builder().tool(pay()).build().unwrap();
    let mut events = runtime.events();
    let call = ToolCall::new("c1", "pay", json!({ "amount": 5, "token": "input-secret" }));
    assert!(matches!(
        runtime.call(call).await,
        CallOutcome::ApprovalRequired { .. }
    ));
    assert!(matches!(
        runtime.approve("c1").await.unwrap(),
        CallOutcome::Suspended { .. }
    ));
    let done = runtime
        .resume("c1", json!({ "ok": true, "token": "resume-secret" }))
        .await
        .unwrap();
    // Raw for the tool and the model.
    assert_eq!(
        done.output(),
        Some(
            &json!({ "paid": 5, "token": "output-secret", "seen": ["input-secret", "resume-secret"] })
        )
    );
    let mut shown = Vec::new();
    while let Some(event) = events.try_next() {
        let (phase, payload) = match event.kind {
            EventKind::InputAvailable { payload } => ("input", payload),
            EventKind::ApprovalRequired { payload, .. } => ("approval", payload),
            EventKind::Suspended { payload, .. } => ("suspend", payload),
            EventKind::Resumed { payload } => ("resume", payload),
            EventKind::Output { payload } => ("output", payload),
            _ => continue,
        };
        shown.push((phase, payload.display));
    }
    assert_eq!(
        shown,
        [
            ("input", json!({ "amount": 5 })),
            ("approval", json!({ "amount": 5 })),
            ("resume", json!({ "approved": true })),
            ("suspend", json!({ "question": "sure?" })),
            ("resume", json!({ "ok": true })),
            (
                "output",
                json!({ "paid": 5, "seen": ["input-secret", "resume-secret"] })
            ),
        ]
    );
}
