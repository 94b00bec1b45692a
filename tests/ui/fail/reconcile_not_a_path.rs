// `reconcile` takes the path of a function, not a string.
use tool_core::tool;

/// Refund a charge
#[tool(reconcile = "find_refund")]
async fn refund(charge_id: String) -> String {
    charge_id
}

fn main() {}
