// A field listed twice in editable(...), and editable(...) given twice.
use tool_core::tool;

/// Transfer money
#[tool(require_approval(editable(amount, memo, amount)))]
async fn transfer(to: String, amount: u64, memo: String) -> String {
    format!("{amount} to {to}: {memo}")
}

/// Transfer money
#[tool(require_approval(editable(amount), editable(memo)))]
async fn transfer_twice(to: String, amount: u64, memo: String) -> String {
    format!("{amount} to {to}: {memo}")
}

fn main() {}
