//! A refunds desk with approval rules a finance team would state: small
//! refunds need one approval, refunds above 1,000 need two people of
//! finance, a reviewer may lower the amount, and a finance lead's standing
//! rule approves small refunds of one customer ahead of time. The refund
//! tool writes to the app's ledger (application state, given once to the
//! runtime) after approval, exactly once per refund.
//!
//! Run: `cargo run -p examples-inbox --example refunds` (its test runs it
//! too: `cargo test -p examples-inbox`). It decides the
//! calls itself, as people would through the inbox (`Runtime::decide_as`,
//! the same rules the inbox enforces), prints each step and the audit
//! log, and serves the inbox meanwhile at the URL it prints (the token
//! `ann-token` is ann's, of finance).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::json;
use tool_core::{ApprovalRequirement, RequestContext, State, tool};
use tool_inbox::{BearerTokens, Principal};
use tool_runtime::store::AuditQuery;
use tool_runtime::{CallOutcome, Decider, Decision, Runtime, StandingRule, ToolCall};

/// The app's ledger: what a database pool is in a real app, given to the
/// runtime once and reached by every call, after approval too.
#[derive(Clone, Default)]
pub struct Ledger {
    rows: Arc<Mutex<Vec<String>>>,
}

/// A refund the agent asks for.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Refund {
    /// The customer refunded.
    customer: String,
    /// The order refunded.
    order: String,
    /// How much, in euros.
    amount: u32,
}

/// Who must approve a refund: one person up to 1,000; two of finance above.
fn who_approves(refund: &Refund, _rc: &RequestContext) -> ApprovalRequirement {
    if refund.amount <= 1_000 {
        ApprovalRequirement::required()
    } else {
        ApprovalRequirement::approvals(2).from_group("finance")
    }
}

/// Refund an order to a customer
#[tool(require_approval(policy = who_approves, editable(amount)))]
pub async fn refund(refund: Refund, State(ledger): State<Ledger>) -> String {
    let row = format!(
        "{} EUR to {} for order {}",
        refund.amount, refund.customer, refund.order
    );
    ledger.rows.lock().unwrap().push(row.clone());
    row
}

/// A standing rule's cap on the amount.
#[derive(Deserialize)]
struct Cap {
    cap: u32,
}

#[tokio::main]
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ledger = Ledger::default();
    let store = std::env::temp_dir().join(format!(
        "tool-refunds-example-{}.sqlite",
        std::process::id()
    ));
    let runtime = Runtime::builder()
        .tool(RefundTool)
        .state(ledger.clone())
        .sqlite_store(&store)
        .forbid_self_approval(true)
        .rule_authors("finance-leads")
        .rule_predicate("amount_at_most", |refund: &Refund, limit: &Cap| {
            refund.amount <= limit.cap
        })
        .build()?;

    let ann = Principal::new("ann").in_group("finance");
    let bob = Principal::new("bob").in_group("finance");
    let dana = Principal::new("dana")
        .in_group("finance")
        .in_group("finance-leads");
    serve_inbox(&runtime, &ann).await?;

    // Dana approves ahead of time: acme's refunds up to 200, asked by the
    // support agent, for a week.
    let week = SystemTime::now() + Duration::from_secs(7 * 24 * 3600);
    let rule = StandingRule::new("acme-small-refunds", "refund", week)
        .when_equals("/customer", json!("acme"))
        .when("amount_at_most", json!({ "cap": 200 }))
        .for_requester("support-agent");
    runtime.rules().make(&dana, rule).await?;
    println!("standing rule made by dana: acme's refunds up to 200 EUR");

    let ask = |id: &str, customer: &str, order: &str, amount: u32| {
        ToolCall::new(
            id,
            "refund",
            json!({ "customer": customer, "order": order, "amount": amount }),
        )
        .with_requester("support-agent")
    };

    // 1. Small, and the rule covers it: runs at once.
    let small = runtime.call(ask("r1", "acme", "A-17", 120)).await;
    println!("r1: {}", summary(&small));
    assert_eq!(
        small.output(),
        Some(&json!("120 EUR to acme for order A-17"))
    );

    // 2. Not covered (another customer): one approval, by anyone but the
    //    requester.
    let waits = runtime.call(ask("r2", "zeta", "Z-3", 400)).await;
    println!("r2: {}", summary(&waits));
    assert!(matches!(waits, CallOutcome::ApprovalRequired { .. }));
    let done = decide(&runtime, "r2", &ann, Decision::Approve).await?;
    println!("r2 approved by ann: {}", summary(&done));
    assert!(done.output().is_some());

    // 3. Large: two of finance. Ann grants; Bob lowers the amount to 900,
    //    which the policy judges again (now one approval): his edit is his
    //    approval, and the refund runs with his amount.
    let large = runtime.call(ask("r3", "acme", "A-18", 2_400)).await;
    println!("r3: {}", summary(&large));
    let needs = runtime.inbox().approvals("r3").await?;
    println!(
        "r3 needs {} approvals of {}",
        needs.required,
        needs.group.as_deref().unwrap_or("anyone")
    );
    let first = decide(&runtime, "r3", &ann, Decision::Approve).await?;
    println!("r3 granted by ann: {}", summary(&first));
    let edited = decide(
        &runtime,
        "r3",
        &bob,
        Decision::Edit(json!({ "amount": 900 })),
    )
    .await?;
    println!("r3 edited by bob: {}", summary(&edited));

    println!("\nledger (each refund written once, after its approval):");
    for row in ledger.rows.lock().unwrap().iter() {
        println!("  {row}");
    }
    println!("\naudit log:");
    for entry in runtime.inbox().audit(AuditQuery::all()).await? {
        println!(
            "  {} {:?} {} by {}{}",
            entry.call_id,
            entry.kind,
            entry.action,
            entry.principal.as_deref().unwrap_or("-"),
            entry
                .reason
                .as_deref()
                .map(|reason| format!(" ({reason})"))
                .unwrap_or_default()
        );
    }
    let _ = std::fs::remove_file(&store);
    Ok(())
}

/// `principal`'s `decision` on `call_id`, on the version they see now.
async fn decide(
    runtime: &Runtime,
    call_id: &str,
    principal: &Principal,
    decision: Decision,
) -> Result<CallOutcome, Box<dyn std::error::Error>> {
    let stored = runtime
        .inbox()
        .stored(call_id)
        .await?
        .ok_or("no such call")?;
    let decider = Decider::new(principal.clone(), stored.digest());
    Ok(runtime.decide_as(call_id, decision, decider).await?)
}

fn summary(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::ApprovalRequired { .. } => "waits for approval".to_owned(),
        other => match other.output() {
            Some(output) => format!("refunded: {output}"),
            None => format!("{other:?}"),
        },
    }
}

/// Serves the inbox on a free port (`INBOX_PORT` to pick one), ann's
/// token `ann-token`.
async fn serve_inbox(runtime: &Runtime, ann: &Principal) -> std::io::Result<()> {
    let inbox = tool_inbox::router(
        runtime.clone(),
        BearerTokens::new().token("ann-token", ann.clone()),
    );
    let app = axum::Router::new().nest("/inbox", inbox);
    let port = std::env::var("INBOX_PORT")
        .ok()
        .and_then(|port| port.parse().ok())
        .unwrap_or(0u16);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "inbox: http://{}/inbox (token ann-token)",
        listener.local_addr()?
    );
    tokio::spawn(async move {
        let served = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        );
        if let Err(error) = served.await {
            eprintln!("the inbox stopped: {error}");
        }
    });
    Ok(())
}
