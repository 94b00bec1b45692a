// `reconcile = path` with every input shape: several parameters (the
// generated input struct), one struct parameter (the whole input), one
// parameter of another type; with a suspending context, a path with
// segments, and an error type of the function's own.
use serde_json::json;
use tool_core::{
    tool, CallContext, IdempotencyKey, Reconciled, Tool, ToolContext, ToolError,
};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Answer {
    approved: bool,
}

/// Transfer money, after a human approves
#[tool(transactional, reconcile = hooks::find_transfer)]
async fn transfer(
    from: String,
    to: String,
    ctx: ToolContext<Question, Answer>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Question { text: format!("{from} -> {to}?") }),
        Some(Answer { approved }) => Ok(format!("{from} -> {to}: {approved}")),
    }
}

mod hooks {
    use super::*;

    pub async fn find_transfer(
        input: super::TransferToolInput,
        _key: IdempotencyKey,
        _ctx: ToolContext<Question, Answer>,
    ) -> Result<Reconciled<String>, std::io::Error> {
        Ok(Reconciled::Happened(format!("{} -> {}: true", input.from, input.to)))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Order {
    id: u64,
}

/// Place an order
#[tool(reconcile = find_order)]
fn place_order(order: Order) -> u64 {
    order.id
}

async fn find_order(
    order: Order,
    _key: IdempotencyKey,
    _ctx: ToolContext,
) -> Result<Reconciled<u64>, ToolError> {
    Ok(Reconciled::Happened(order.id))
}

/// Tag items
#[tool(reconcile = find_tags, retry_safe = false)]
async fn tag(tags: Vec<String>) {
    let _ = tags;
}

async fn find_tags(
    tags: Vec<String>,
    _key: IdempotencyKey,
    _ctx: ToolContext,
) -> Result<Reconciled<()>, ToolError> {
    Ok(if tags.is_empty() { Reconciled::NotHappened } else { Reconciled::Happened(()) })
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let transfer = Tool::from(TransferTool);
    assert!(transfer.definition().transactional && transfer.has_reconcile());
    let found = runtime
        .block_on(transfer.reconcile(json!({ "from": "a", "to": "b" }), CallContext::new("c1")).unwrap())
        .unwrap();
    assert_eq!(found.output().and_then(|o| o.output()), Some(&json!("a -> b: true")));

    let order = Tool::from(PlaceOrderTool);
    let found = runtime
        .block_on(order.reconcile(json!({ "id": 7 }), CallContext::new("c1")).unwrap())
        .unwrap();
    assert_eq!(found.output().and_then(|o| o.output()), Some(&json!(7)));

    let tag = Tool::from(TagTool);
    let none = runtime
        .block_on(tag.reconcile(json!({ "tags": [] }), CallContext::new("c1")).unwrap())
        .unwrap();
    assert!(!none.happened());
    let some = runtime
        .block_on(tag.reconcile(json!({ "tags": ["a"] }), CallContext::new("c1")).unwrap())
        .unwrap();
    assert!(some.happened());
}
