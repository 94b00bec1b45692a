// A reconcile function must take what the tool function takes: here the tool
// takes a `String`, the reconcile function a `u32`.
use tool_core::{tool, IdempotencyKey, Reconciled, ToolContext, ToolError};

/// Refund a charge
#[tool(reconcile = find_refund)]
async fn refund(charge_id: String) -> Result<String, ToolError> {
    Ok(charge_id)
}

async fn find_refund(
    charge_id: u32,
    _key: IdempotencyKey,
    _ctx: ToolContext,
) -> Result<Reconciled<String>, ToolError> {
    Ok(Reconciled::Happened(charge_id.to_string()))
}

fn main() {}
