//! What approval rules cost a call.
//!
//! - `approval_policy`: `Runtime::call` of a tool whose approval policy
//!   answers "not required" against the same tool without a policy, side
//!   by side (issue 34's goal: within 5%): a builder tool with a policy on
//!   the JSON input (the gate's own cost), and a `#[tool]` tool with a
//!   policy typed on its input (which also reads the input as its type).
//!   All complete on their first poll, so they are driven without an
//!   executor.
//! - `standing_rules`: evaluating 1,000 standing rules in force for one
//!   call (`RulePredicates::approves` over them, the last one approving),
//!   by JSON pointer equality and by a typed predicate (goal: under
//!   50 µs); and a whole `Runtime::call` approved by the 1,000th rule of a
//!   memory store, beside one approved by its only rule.
//!
//! Run: `cargo bench -p tool-runtime --bench approval`

use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_core::{ApprovalRequirement, RequestContext, Tool, ToolError, tool};
use tool_runtime::{
    CallOutcome, Principal, RulePredicates, RuleSubject, Runtime, StandingRule, ToolCall,
};

/// Two integers to add.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Sum {
    a: i64,
    b: i64,
}

/// Adds two integers.
#[tool(id = "add")]
async fn plain_add(sum: Sum) -> i64 {
    sum.a + sum.b
}

/// Sums under a million need nobody's approval.
fn small_sums(sum: &Sum, _rc: &RequestContext) -> ApprovalRequirement {
    if sum.a.abs() < 1_000_000 && sum.b.abs() < 1_000_000 {
        ApprovalRequirement::NotRequired
    } else {
        ApprovalRequirement::required()
    }
}

/// Adds two integers.
#[tool(id = "add", require_approval = small_sums)]
async fn policed_add(sum: Sum) -> i64 {
    sum.a + sum.b
}

/// Refunds an order.
#[tool(id = "refund", require_approval)]
async fn refund(customer: String, amount: u64) -> String {
    format!("refunded {amount} to {customer}")
}

#[derive(serde::Deserialize)]
struct Refund {
    amount: u64,
}

fn ready<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
    {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => unreachable!("the benchmarked calls never wait"),
    }
}

fn approval_policy(c: &mut Criterion) {
    let mut group = c.benchmark_group("approval_policy");
    let input = json!({ "a": 2, "b": 3 });
    // A builder tool, with and without a policy on the JSON input: what
    // the runtime's gate costs.
    let builder = |policy: bool| {
        let tool = Tool::builder("add").description("Adds two integers");
        let tool = if policy {
            tool.approval_policy(|input: &Value, _rc: &RequestContext| {
                if input["a"].as_i64().is_some_and(|a| a.abs() < 1_000_000) {
                    ApprovalRequirement::NotRequired
                } else {
                    ApprovalRequirement::required()
                }
            })
        } else {
            tool
        };
        tool.execute(|input, _ctx| async move {
            Ok::<_, ToolError>(json!(
                input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)
            ))
        })
        .build()
        .unwrap()
    };
    // `#[tool]` tools, with and without a policy typed on the input: the
    // typed policy reads the input as its type, as the tool does.
    for (name, tool) in [
        ("json/no_policy", builder(false)),
        ("json/policy_not_required", builder(true)),
        ("typed/no_policy", Tool::from(PlainAddTool)),
        ("typed/policy_not_required", Tool::from(PolicedAddTool)),
    ] {
        let runtime = Runtime::builder().tool(tool).build().expect("runtime");
        let call = || ToolCall::new("call-1", "add", black_box(input.clone()));
        assert_eq!(ready(runtime.call(call())).output(), Some(&json!(5)));
        group.bench_function(name, |b| b.iter(|| ready(runtime.call(call()))));
    }
    group.finish();
}

const RULES: usize = 1_000;

fn in_an_hour() -> SystemTime {
    SystemTime::now() + Duration::from_secs(3600)
}

/// `RULES` rules for customers `c0`..: by pointer equality, or by the
/// `amount_at_most` predicate (with caps below the amount but the last).
fn rules(by_predicate: bool) -> Vec<StandingRule> {
    (0..RULES)
        .map(|i| {
            let rule =
                StandingRule::new(format!("r{i}"), "refund", in_an_hour()).for_requester("agent-7");
            if by_predicate {
                let cap = if i == RULES - 1 { 1_000 } else { 10 };
                rule.when("amount_at_most", json!(cap))
            } else {
                rule.when_equals("/customer", json!(format!("c{i}")))
            }
        })
        .collect()
}

fn predicates() -> RulePredicates {
    RulePredicates::new().with("amount_at_most", |refund: &Refund, cap: &u64| {
        refund.amount <= *cap
    })
}

fn standing_rules(c: &mut Criterion) {
    let mut group = c.benchmark_group("standing_rules");
    let predicates = predicates();
    let now_ms = u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let last = format!("c{}", RULES - 1);
    let input = json!({ "customer": last, "amount": 150 });
    let call = RuleSubject {
        tool_id: "refund",
        input: &input,
        requester: Some("agent-7"),
        now_ms,
    };
    for (name, by_predicate) in [
        ("evaluate_1000/equals", false),
        ("evaluate_1000/predicate", true),
    ] {
        let rules = rules(by_predicate);
        let first = |rules: &[StandingRule]| {
            rules
                .iter()
                .position(|rule| predicates.approves(rule, black_box(&call)))
        };
        assert_eq!(first(&rules), Some(RULES - 1), "the last rule approves");
        group.bench_function(name, |b| b.iter(|| first(&rules)));
    }

    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (name, made) in [("call/1_rule", 1), ("call/1000_rules", RULES)] {
        let runtime = Runtime::builder()
            .tool(RefundTool)
            .rule_predicate("amount_at_most", |refund: &Refund, cap: &u64| {
                refund.amount <= *cap
            })
            .build()
            .unwrap();
        let ops = Principal::system("bench");
        for rule in rules(false).into_iter().skip(RULES - made) {
            tokio.block_on(runtime.rules().make(&ops, rule)).unwrap();
        }
        let call = || {
            ToolCall::new("call-1", "refund", black_box(input.clone())).with_requester("agent-7")
        };
        let outcome: CallOutcome = tokio.block_on(runtime.call(call()));
        assert_eq!(
            outcome.output(),
            Some(&Value::from(format!("refunded 150 to {last}")))
        );
        group.bench_function(name, |b| b.iter(|| tokio.block_on(runtime.call(call()))));
    }
    group.finish();
}

criterion_group!(benches, approval_policy, standing_rules);
criterion_main!(benches);
