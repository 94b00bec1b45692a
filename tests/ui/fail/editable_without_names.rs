// `editable` needs the names of the fields a reviewer may change.
use tool_core::tool;

/// Transfer money
#[tool(require_approval(editable()))]
async fn transfer(to: String, amount: u64) -> String {
    format!("{amount} to {to}")
}

/// Transfer money
#[tool(require_approval(editable))]
async fn transfer_flag(to: String, amount: u64) -> String {
    format!("{amount} to {to}")
}

/// Transfer money
#[tool(require_approval())]
async fn transfer_empty(to: String, amount: u64) -> String {
    format!("{amount} to {to}")
}

fn main() {}
