//! tool-notify's integration tests: one test binary, a module per concern,
//! each against real servers on 127.0.0.1. Run one module's tests with
//! `cargo test -p tool-notify --test it <module>::`.

mod email;
mod receiver;
mod slack;
mod webhook;

use serde_json::json;
use tool_core::{Tool, ToolError};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

/// A runtime writing notifications, with `refund`, a tool that needs
/// approval.
fn approval_runtime() -> Runtime {
    let refund = Tool::builder("refund")
        .description("Refunds an order")
        .require_approval(true)
        .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
        .unwrap();
    Runtime::builder()
        .tool(refund)
        .notifications(true)
        .build()
        .unwrap()
}

/// Asks `runtime` to refund `input` in call `call_id`: it waits for
/// approval, and an `approval.requested` notification is in the outbox.
async fn ask_refund(runtime: &Runtime, call_id: &str, input: serde_json::Value) {
    let outcome = runtime.call(ToolCall::new(call_id, "refund", input)).await;
    assert!(
        matches!(outcome, CallOutcome::ApprovalRequired { .. }),
        "{outcome:?}"
    );
}

/// The input the tests ask a refund of: with text HTML would read as markup.
fn refund_input() -> serde_json::Value {
    json!({ "order": "A-17", "amount": 1200, "note": "<b>urgent</b> & \"soon\"" })
}
