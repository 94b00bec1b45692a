// An editable field that is none of the parameters: spanned on the name,
// with the closest parameter suggested.
use tool_core::tool;

/// Transfer money
#[tool(require_approval(editable(amout, memo)))]
async fn transfer(to: String, amount: u64, memo: Option<String>) -> String {
    format!("{amount} to {to}: {memo:?}")
}

/// Transfer money, approved by a policy
#[tool(require_approval(policy = always, editable(recipient)))]
async fn transfer_by_policy(to: String, amount: u64) -> String {
    format!("{amount} to {to}")
}

fn always(_: &TransferByPolicyToolInput, _: &tool_core::RequestContext) -> bool {
    true
}

/// Ping
#[tool(require_approval(editable(amount)))]
async fn ping() -> &'static str {
    "pong"
}

fn main() {}
