// `require_approval(editable(..))` on plain parameters, with a policy, and
// on a struct taken as the whole input (a renamed property by its string).
use tool_core::{tool, RequestContext, Tool};

/// Transfer money
#[tool(require_approval(editable(amount, memo)))]
async fn transfer(to: String, amount: u64, memo: Option<String>) -> String {
    format!("{amount} to {to}: {memo:?}")
}

fn large(input: &RefundToolInput, _: &RequestContext) -> bool {
    input.amount > 100
}

/// Refund a payment
#[tool(require_approval(policy = large, editable(amount, r#type)))]
async fn refund(amount: u64, r#type: String) -> String {
    format!("{amount} ({type})", type = r#type)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Payment {
    payee: String,
    amount_cents: u64,
}

/// Pay someone
#[tool(require_approval(editable("amountCents")))]
async fn pay(payment: Payment) -> String {
    format!("{} to {}", payment.amount_cents, payment.payee)
}

fn main() {
    let transfer = Tool::from(TransferTool);
    assert!(transfer.definition().require_approval);
    assert_eq!(transfer.definition().editable, ["amount", "memo"]);
    assert!(transfer.edit_schema().is_some());

    let refund = Tool::from(RefundTool);
    assert!(refund.has_approval_policy());
    assert_eq!(refund.definition().editable, ["amount", "type"]);

    let pay = Tool::from(PayTool);
    assert!(pay.config_error().is_none(), "{:?}", pay.config_error());
    assert_eq!(pay.definition().editable, ["amountCents"]);
}
