//! A rig agent (rig-agent's loop, a scripted rig model: no network) calling
//! `#[tool]` tools through a runtime: a validation error the model corrects,
//! and a call that waits for approval, is approved and completes.

use std::sync::atomic::{AtomicUsize, Ordering};

use rig_agent::AgentBuilder;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_core::{ToolError, tool};
use tool_runtime::{CallOutcome, Runtime};

/// What to send.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct TransferInput {
    /// Recipient's IBAN
    to: String,
    /// Amount in euros, at least 1
    #[schemars(range(min = 1))]
    amount: u32,
}

/// What was sent.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Receipt {
    to: String,
    sent: u32,
}

/// Transfer money
#[tool]
pub async fn transfer(TransferInput { to, amount }: TransferInput) -> Result<Receipt, ToolError> {
    Ok(Receipt { to, sent: amount })
}

/// The same, behind a human's approval.
#[tool(require_approval)]
pub async fn approved_transfer(
    TransferInput { to, amount }: TransferInput,
) -> Result<Receipt, ToolError> {
    APPROVED_RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(Receipt { to, sent: amount })
}

static APPROVED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// The conversation the model was sent on its last turn, as JSON text.
fn last_history(model: &MockCompletionModel) -> String {
    let requests = model.requests();
    let last = requests.last().expect("the model was called");
    serde_json::to_string(&last.chat_history).unwrap()
}

#[tokio::test]
async fn the_model_reads_a_validation_error_and_corrects_its_call() {
    let runtime = Runtime::builder().tool(TransferTool).build().unwrap();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "transfer", json!({ "to": "DE89", "amount": 0 })),
        MockTurn::tool_call("call_2", "transfer", json!({ "to": "DE89", "amount": 5 })),
        MockTurn::text("Sent 5 euros to DE89."),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tools(tool_rig::dynamic_tools(&runtime))
        .build();

    let answer = agent
        .prompt("Send 5 euros to DE89")
        .max_turns(5)
        .await
        .unwrap();

    assert_eq!(answer.output(), "Sent 5 euros to DE89.");
    assert_eq!(model.request_count(), 3);
    // The first call's error reached the model as a tool result it can act on.
    let second = serde_json::to_string(&model.requests()[1].chat_history).unwrap();
    assert!(second.contains(r#""is_error":true"#), "{second}");
    assert!(
        second.contains("- amount: Number must be greater than or equal to 1"),
        "{second}"
    );
    // The corrected call ran.
    let last = last_history(&model);
    assert!(last.contains(r#"{"to":"DE89","sent":5}"#), "{last}");
}

#[tokio::test]
async fn a_call_waits_for_approval_in_the_store_and_completes_when_approved() {
    let runtime = Runtime::builder()
        .tool(ApprovedTransferTool)
        .build()
        .unwrap();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call(
            "call_1",
            "approved_transfer",
            json!({ "to": "DE89", "amount": 5 }),
        ),
        MockTurn::text("The transfer waits for your approval."),
        MockTurn::text("Sent 5 euros to DE89."),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tools(tool_rig::dynamic_tools(&runtime))
        .build();

    let answer = agent
        .prompt("Send 5 euros to DE89")
        .max_turns(5)
        .await
        .unwrap();
    assert_eq!(answer.output(), "The transfer waits for your approval.");
    assert_eq!(APPROVED_RUNS.load(Ordering::SeqCst), 0);

    // The call is pending in the runtime's store, and the model was told so.
    let pending = runtime.inbox().waiting().await.unwrap();
    assert_eq!(pending.len(), 1);
    let call_id = pending[0].call.head.call_id.clone();
    assert!(call_id.starts_with("rig-"), "{call_id}");
    let told = last_history(&model);
    assert!(
        told.contains("needs human approval before it runs, and the agent cannot ask the user"),
        "{told}"
    );
    assert!(
        told.contains(&format!(r#"Runtime::approve(\"{call_id}\")"#)),
        "{told}"
    );

    // Approved through the runtime: the tool runs once and completes.
    let outcome = runtime.approve(&call_id).await.unwrap();
    assert!(matches!(outcome, CallOutcome::Completed { .. }));
    assert_eq!(outcome.output(), Some(&json!({ "to": "DE89", "sent": 5 })));
    assert_eq!(APPROVED_RUNS.load(Ordering::SeqCst), 1);
    assert!(runtime.inbox().waiting().await.unwrap().is_empty());

    // The application tells the agent the result; the run completes.
    let answer = agent
        .prompt(format!(
            "The transfer was approved: {}",
            outcome.to_model_value()
        ))
        .max_turns(2)
        .await
        .unwrap();
    assert_eq!(answer.output(), "Sent 5 euros to DE89.");
}
