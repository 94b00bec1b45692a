//! Human approval: a tool that moves money needs a human's yes. The call
//! stops at `ApprovalRequired`; `approve` runs it (once), `decline` never
//! runs it and the model reads the reason. Arguments the model writes (here
//! `"approved": true`) decide nothing.
//!
//! Run: `cargo run -p examples --example approval`

use serde::{Deserialize, Serialize};
use tool_core::{RequestContext, ToolError, tool};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct TransferInput {
    /// Recipient account
    to: String,
    /// Amount in euros
    amount: f64,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Receipt {
    to: String,
    amount: f64,
    reference: String,
}

/// Transfer money to another account
#[tool(id = "transfer", require_approval)]
pub async fn transfer(TransferInput { to, amount }: TransferInput) -> Result<Receipt, ToolError> {
    println!("    >>> executing transfer of {amount} EUR to {to}");
    Ok(Receipt {
        reference: format!("TX-{to}-{amount}"),
        to,
        amount,
    })
}

/// Small transfers need no approval: a policy function decides per call.
fn large(input: &LookupInput, _ctx: &RequestContext) -> bool {
    input.amount > 100.0
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct LookupInput {
    /// Amount to check
    amount: f64,
}

/// Check whether an amount is within the daily limit
#[tool(id = "check-limit", require_approval = large)]
pub async fn check_limit(input: LookupInput) -> bool {
    input.amount <= 1000.0
}

fn show(title: &str, outcome: &CallOutcome) {
    println!("--- {title}");
    println!("    outcome: {outcome:?}");
    println!("    model sees: {}", outcome.to_model_value());
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::builder()
        .tool(TransferTool)
        .tool(CheckLimitTool)
        .build()?;

    let pending = runtime
        .call(ToolCall::new(
            "call-1",
            "transfer",
            r#"{"to": "alice", "amount": 40}"#,
        ))
        .await;
    show("call-1: transfer 40 to alice (needs approval)", &pending);

    // The model cannot approve itself by adding arguments.
    let sneaky = runtime
        .call(ToolCall::new(
            "call-2",
            "transfer",
            r#"{"to": "mallory", "amount": 9000, "approved": true}"#,
        ))
        .await;
    show(
        "call-2: transfer with \"approved\": true in the arguments",
        &sneaky,
    );

    println!(
        "--- pending calls: {:?}",
        runtime
            .inbox()
            .waiting()
            .await?
            .iter()
            .map(|p| &p.call.head.call_id)
            .collect::<Vec<_>>()
    );

    show("approve call-1", &runtime.approve("call-1").await?);
    // Asked again (a client that lost the answer): the recorded outcome;
    // the call does not run twice.
    show(
        "approve call-1 again (recorded outcome, no second run)",
        &runtime.approve("call-1").await?,
    );
    show(
        "decline call-2",
        &runtime
            .decline("call-2", Some("The user refused this transfer"))
            .await?,
    );

    show(
        "check-limit 50 (policy: no approval)",
        &runtime
            .call(ToolCall::new("call-3", "check-limit", r#"{"amount": 50}"#))
            .await,
    );
    show(
        "check-limit 500 (policy: approval)",
        &runtime
            .call(ToolCall::new("call-4", "check-limit", r#"{"amount": 500}"#))
            .await,
    );
    show(
        "decline call-4 without a reason",
        &runtime.decline("call-4", None).await?,
    );
    Ok(())
}
