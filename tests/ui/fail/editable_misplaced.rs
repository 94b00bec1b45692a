// `editable` as a top-level key, and inside mcp(...): it belongs inside
// require_approval(...).
use tool_core::tool;

/// Transfer money
#[tool(require_approval, editable(amount))]
async fn transfer(to: String, amount: u64) -> String {
    format!("{amount} to {to}")
}

/// Transfer money
#[tool(require_approval = true, mcp(editable(amount)))]
async fn transfer_mcp(to: String, amount: u64) -> String {
    format!("{amount} to {to}")
}

fn main() {}
