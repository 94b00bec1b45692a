//! A refund tool on a Restate server: served, registered, called through
//! the ingress, approved by two principals.
//!
//! Run (a Restate server on 127.0.0.1, see README.md):
//! `cargo run -p examples-restate --example refunds`

use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_core::{ToolError, tool};
use tool_restate::{CallRequest, DecideRequest, RestateClient, RestateTools, WireDecision};
use tool_runtime::{CallOutcome, Decider, Principal, Runtime};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RefundInput {
    /// The order refunded
    order: String,
    /// The amount, in euros
    amount: u32,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Refunded {
    order: String,
    amount: u32,
}

/// Refund an order
#[tool(id = "refund", require_approval)]
pub async fn refund(RefundInput { order, amount }: RefundInput) -> Result<Refunded, ToolError> {
    Ok(Refunded { order, amount })
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ingress = env("RESTATE_INGRESS", "http://127.0.0.1:8080");
    let admin = env("RESTATE_ADMIN", "http://127.0.0.1:9070");
    let serve_on = env("SERVE_ON", "127.0.0.1:9080");

    // The same tool a Runtime would take, and the same approval rules.
    let tools = RestateTools::new(&ingress, || {
        Runtime::builder()
            .tool(RefundTool)
            .tool_approvals_required("refund", 2)
            .forbid_self_approval(true)
    })?;
    let listener = tokio::net::TcpListener::bind(&serve_on).await?;
    let serving = tools.clone();
    tokio::spawn(async move { serving.serve(listener).await });

    // Registered with the server: its ingress now routes ToolCalls to us.
    // A server started a moment ago may not answer yet: asked for 30 s.
    let http = reqwest::Client::new();
    let deployment = json!({ "uri": format!("http://{serve_on}"), "force": true });
    let mut tries = 0;
    loop {
        let answer = http
            .post(format!("{admin}/deployments"))
            .json(&deployment)
            .send()
            .await;
        match answer {
            Ok(answer) if answer.status().is_success() => break,
            Ok(answer) if tries >= 30 => {
                return Err(format!("registering: {}", answer.text().await?).into());
            }
            Err(error) if tries >= 30 => {
                return Err(format!("no Restate server at {admin}: {error}").into());
            }
            _ => tries += 1,
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }

    let client = RestateClient::new(&ingress);
    let call_id = format!("refund-{}", std::process::id());
    let request = CallRequest::new("refund", json!({ "order": "A-1001", "amount": 240 }))
        .requester("agent:support");
    let waiting = client.call(&call_id, request).await?;
    println!("called: {}", describe(&waiting));

    for approver in ["alice", "bob"] {
        // Each reads the call's current version and decides on it.
        let stored = client.get(&call_id).await?.ok_or("the call is stored")?;
        let decider = Decider::new(Principal::new(approver), stored.digest());
        let outcome = client
            .decide(
                &call_id,
                DecideRequest::new(WireDecision::Approve).by(decider),
            )
            .await?;
        println!("{approver} approved: {}", describe(&outcome));
    }
    Ok(())
}

fn describe(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::ApprovalRequired { .. } => "waiting for approval".to_owned(),
        CallOutcome::Completed { output, .. } => format!("completed with {output}"),
        other => format!("{other:?}"),
    }
}
