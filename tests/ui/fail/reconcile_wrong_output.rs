// A reconcile function returns the tool's output type: here the tool returns
// a `String`, the reconcile function a `u32`.
use tool_core::{tool, IdempotencyKey, Reconciled, ToolContext, ToolError};

/// Refund a charge
#[tool(reconcile = find_refund)]
async fn refund(charge_id: String) -> Result<String, ToolError> {
    Ok(charge_id)
}

async fn find_refund(
    _charge_id: String,
    _key: IdempotencyKey,
    _ctx: ToolContext,
) -> Result<Reconciled<u32>, ToolError> {
    Ok(Reconciled::Happened(1))
}

fn main() {}
