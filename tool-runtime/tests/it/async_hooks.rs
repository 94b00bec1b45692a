//! Async hooks and approval policies through the runtime (issue 23): the
//! order and time limit of hooks on streamed input, typed `#[tool]` hooks,
//! and approval policies that answer later, fail, panic or never answer.

use crate::common;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Capture, echo_tool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::hooks::{InputAvailable, InputDelta, InputStart, OutputAvailable};
use tool_core::{Hooks, RequestContext, Tool, ToolError, tool};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, entry: impl Into<String>) {
    log.lock().unwrap().push(entry.into());
}

/// Async tool hooks that take `pause` in each delta hook, and sync runtime
/// hooks, all writing to `log`.
fn ordered_runtime(log: &Log, pause: Duration) -> Runtime {
    let (a, b, c, d) = (log.clone(), log.clone(), log.clone(), log.clone());
    let tool_hooks = Hooks::new()
        .on_input_start(move |args: InputStart| {
            let log = a.clone();
            async move { push(&log, format!("tool start {}", args.call_id)) }
        })
        .on_input_delta(move |args: InputDelta| {
            let log = b.clone();
            async move {
                push(&log, format!("tool delta {} begins", args.input_text_delta));
                tokio::time::sleep(pause).await;
                push(&log, format!("tool delta {} ends", args.input_text_delta));
            }
        })
        .on_input_available(move |args: InputAvailable| {
            let log = c.clone();
            async move { push(&log, format!("tool available {}", args.input)) }
        })
        .on_output(move |args: OutputAvailable| {
            let log = d.clone();
            async move { push(&log, format!("tool output {}", args.output)) }
        });
    let (a, b, c) = (log.clone(), log.clone(), log.clone());
    let runtime_hooks = Hooks::new()
        .on_input_start(move |_: InputStart| push(&a, "runtime start"))
        .on_input_delta(move |args: InputDelta| {
            push(&b, format!("runtime delta {}", args.input_text_delta))
        })
        .on_output(move |_: OutputAvailable| push(&c, "runtime output"));
    let (tool, _) = echo_tool("echo", |b| b.hooks(tool_hooks));
    Runtime::builder()
        .tool(tool)
        .hooks(runtime_hooks)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_input_hooks_run_one_at_a_time_in_order_and_push_never_waits_for_them() {
    let log = Log::default();
    let pause = Duration::from_millis(100);
    let runtime = ordered_runtime(&log, pause);
    let mut stream = runtime.begin("c1", "echo", Vec::new());
    let pushing = Instant::now();
    for delta in ["{\"a\"", ": 1", "}"] {
        stream.push(delta);
    }
    // Three delta hooks of 100 ms each are queued, not waited for.
    assert!(
        pushing.elapsed() < pause,
        "push waited: {:?}",
        pushing.elapsed()
    );
    let outcome = stream.finish().await;
    assert_eq!(outcome.output(), Some(&json!({ "echo": { "a": 1 } })));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "tool start c1",
            "runtime start",
            "tool delta {\"a\" begins",
            "tool delta {\"a\" ends",
            "runtime delta {\"a\"",
            "tool delta : 1 begins",
            "tool delta : 1 ends",
            "runtime delta : 1",
            "tool delta } begins",
            "tool delta } ends",
            "runtime delta }",
            "tool available {\"a\":1}",
            "tool output {\"echo\":{\"a\":1}}",
            "runtime output",
        ]
    );
}

#[tokio::test]
async fn a_hook_past_the_hook_timeout_is_dropped_logged_and_the_call_goes_on() {
    let capture = Capture::default();
    let _guard = capture.install();
    let log = Log::default();
    let seen = log.clone();
    let stuck = Hooks::new()
        .on_input_delta(move |args: InputDelta| {
            let log = seen.clone();
            async move {
                if args.input_text_delta == "{" {
                    std::future::pending::<()>().await;
                }
                push(&log, format!("delta {}", args.input_text_delta));
            }
        })
        .on_output(|_: OutputAvailable| std::future::pending::<()>());
    let (tool, runs) = echo_tool("echo", |b| b.hooks(stuck));
    let runtime = Runtime::builder()
        .tool(tool)
        .hook_timeout(Duration::from_millis(30))
        .build()
        .unwrap();
    let started = Instant::now();
    let mut stream = runtime.begin("c1", "echo", Vec::new());
    stream.push("{");
    stream.push("}");
    let outcome = stream.finish().await;
    assert_eq!(outcome.output(), Some(&json!({ "echo": {} })));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The stuck first delta hook ended at its limit; the next one ran after it.
    assert_eq!(*log.lock().unwrap(), ["delta }"]);
    assert_eq!(runs.lock().unwrap().len(), 1);
    let lines = capture.logs();
    for hook in ["on_input_delta", "on_output"] {
        assert!(
            lines.iter().any(|l| l.starts_with("ERROR")
                && l.contains(&format!("hook={hook} "))
                && l.contains("timed out")),
            "{hook}: {lines:#?}"
        );
    }
}

/// An order.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Order {
    /// Item to order
    item: String,
    /// How many
    quantity: u32,
}

/// What an order gives back.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Receipt {
    id: String,
    total: u32,
}

static TYPED_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn order_seen(args: InputAvailable<Order>) {
    let Order { item, quantity } = args.input;
    TYPED_LOG
        .lock()
        .unwrap()
        .push(format!("{} orders {quantity} {item}", args.call_id));
}

async fn receipt_seen(args: OutputAvailable<Receipt>) -> Result<(), String> {
    tokio::task::yield_now().await;
    let Receipt { id, total } = args.output;
    TYPED_LOG
        .lock()
        .unwrap()
        .push(format!("{} receipt {id} for {total}", args.tool_id));
    Ok(())
}

/// Place an order
#[tool(on_input_available = order_seen, on_output = receipt_seen)]
async fn place_order(order: Order) -> Result<Receipt, ToolError> {
    Ok(Receipt {
        id: format!("r-{}", order.item),
        total: order.quantity * 3,
    })
}

#[tokio::test]
async fn tool_hooks_get_the_typed_input_and_output() {
    let runtime = Runtime::builder().tool(PlaceOrderTool).build().unwrap();
    let input = json!({ "item": "tea", "quantity": 2 });
    let outcome = runtime
        .call(ToolCall::new("c1", "place_order", input))
        .await;
    assert_eq!(
        outcome.output(),
        Some(&json!({ "id": "r-tea", "total": 6 }))
    );
    assert_eq!(
        *TYPED_LOG.lock().unwrap(),
        ["c1 orders 2 tea", "place_order receipt r-tea for 6"]
    );
}

#[tokio::test]
async fn a_typed_hook_whose_value_does_not_deserialize_is_reported_and_never_panics() {
    let capture = Capture::default();
    let _guard = capture.install();
    let ran = Arc::new(Mutex::new(0));
    let (count_in, count_out) = (ran.clone(), ran.clone());
    // The schemas accept any value; the hooks' types do not.
    let hooks = Hooks::new()
        .on_input_available_as(move |_: InputAvailable<u32>| *count_in.lock().unwrap() += 1)
        .on_output_as(move |_: OutputAvailable<Vec<bool>>| *count_out.lock().unwrap() += 1);
    let (tool, runs) = echo_tool("echo", |b| b.hooks(hooks));
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let outcome = runtime
        .call(ToolCall::new("c1", "echo", json!({ "a": 1 })))
        .await;
    assert_eq!(outcome.output(), Some(&json!({ "echo": { "a": 1 } })));
    assert_eq!(runs.lock().unwrap().len(), 1);
    assert_eq!(*ran.lock().unwrap(), 0, "neither hook ran");
    let lines = capture.logs();
    for (hook, ty) in [("on_input_available", "u32"), ("on_output", "Vec<bool>")] {
        assert!(
            lines.iter().any(|l| l.starts_with("ERROR")
                && l.contains(&format!("hook={hook} "))
                && l.contains("the hook did not run")
                && l.contains(ty)),
            "{hook}: {lines:#?}"
        );
    }
}

fn payment_runtime(
    configure: impl FnOnce(tool_runtime::RuntimeBuilder) -> tool_runtime::RuntimeBuilder,
) -> Runtime {
    let (tool, _) = echo_tool("pay", |b| b);
    configure(Runtime::builder().tool(tool)).build().unwrap()
}

async fn pay(runtime: &Runtime, id: &str, amount: u64) -> CallOutcome {
    runtime
        .call(ToolCall::new(id, "pay", json!({ "amount": amount })))
        .await
}

fn needs_approval(outcome: &CallOutcome) -> bool {
    matches!(outcome, CallOutcome::ApprovalRequired { .. })
}

#[tokio::test]
async fn an_async_runtime_policy_decides_after_awaiting() {
    let runtime = payment_runtime(|b| {
        b.approval_policy(|check| {
            let amount = check.input["amount"].as_u64();
            async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok::<_, String>(amount.is_none_or(|a| a > 100))
            }
        })
    });
    assert!(pay(&runtime, "c1", 5).await.output().is_some());
    assert!(needs_approval(&pay(&runtime, "c2", 500).await));
}

#[tokio::test]
async fn a_policy_that_errors_panics_or_times_out_means_approval_required() {
    let capture = Capture::default();
    let _guard = capture.install();
    let erring = payment_runtime(|b| {
        b.approval_policy(|_| async { Err::<bool, _>("the limits service is down") })
    });
    let panicking = payment_runtime(|b| {
        b.approval_policy(|_| async {
            tokio::task::yield_now().await;
            if true {
                panic!("policy bug after an await");
            }
            false
        })
    });
    let stuck = payment_runtime(|b| {
        b.approval_policy(|_| std::future::pending::<bool>())
            .approval_timeout(Duration::from_millis(30))
    });
    let started = Instant::now();
    for runtime in [&erring, &panicking, &stuck] {
        assert!(needs_approval(&pay(runtime, "c1", 1).await));
        assert_eq!(runtime.inbox().waiting().await.unwrap().len(), 1);
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let logs = capture.logs().join("\n");
    assert!(logs.contains("the limits service is down"), "{logs}");
    assert!(logs.contains("policy bug after an await"), "{logs}");
    assert!(logs.contains("approval policy timed out"), "{logs}");
}

#[tokio::test]
async fn a_tools_async_policy_is_authoritative_and_bounded_by_the_approval_timeout() {
    let (lenient, _) = echo_tool("lenient", |b| {
        b.require_approval(true)
            .approval_policy(|input: &Value, _: &RequestContext| {
                let small = input["amount"].as_u64() < Some(10);
                async move { !small }
            })
    });
    let (stuck, _) = echo_tool("stuck", |b| {
        b.approval_policy(|_: &Value, _: &tool_core::RequestContext| std::future::pending::<bool>())
    });
    let runtime = Runtime::builder()
        .tools([lenient, stuck])
        .require_approval(true)
        .approval_timeout(Duration::from_millis(30))
        .build()
        .unwrap();
    let small = ToolCall::new("c1", "lenient", json!({ "amount": 1 }));
    assert!(runtime.call(small).await.output().is_some());
    let big = ToolCall::new("c2", "lenient", json!({ "amount": 50 }));
    assert!(needs_approval(&runtime.call(big).await));
    let started = Instant::now();
    let never = ToolCall::new("c3", "stuck", json!({}));
    assert!(needs_approval(&runtime.call(never).await));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// Large orders need approval; decided later (as after a lookup).
fn large_order(order: &Order, _: &RequestContext) -> impl Future<Output = bool> + Send + use<> {
    let quantity = order.quantity;
    async move {
        tokio::task::yield_now().await;
        quantity > 10
    }
}

/// Place an order, approved when large
#[tool(require_approval = large_order)]
async fn place_large_order(order: Order) -> Result<u32, ToolError> {
    Ok(order.quantity)
}

/// Large refunds need approval; a policy of the one parameter's value that
/// can fail.
async fn large_refund(cents: u32) -> Result<bool, String> {
    match cents {
        0 => Err("nothing to refund".into()),
        cents => Ok(cents > 10_000),
    }
}

fn refund_policy(
    cents: &u32,
    _: &RequestContext,
) -> impl Future<Output = Result<bool, String>> + Send + use<> {
    large_refund(*cents)
}

/// Refund an order
#[tool(require_approval = refund_policy)]
async fn refund(cents: u32) -> u32 {
    cents
}

#[tokio::test]
async fn a_tool_attribute_policy_may_be_async() {
    let runtime = Runtime::builder()
        .tools([Tool::from(PlaceLargeOrderTool), Tool::from(RefundTool)])
        .build()
        .unwrap();
    let call = |id: &str, tool: &str, input: Value| ToolCall::new(id, tool, input);
    let small = json!({ "item": "tea", "quantity": 2 });
    let large = json!({ "item": "tea", "quantity": 50 });
    let outcome = runtime.call(call("c1", "place_large_order", small)).await;
    assert_eq!(outcome.output(), Some(&json!(2)));
    assert!(needs_approval(
        &runtime.call(call("c2", "place_large_order", large)).await
    ));
    let small = runtime
        .call(call("c3", "refund", json!({ "cents": 500 })))
        .await;
    assert_eq!(small.output(), Some(&json!(500)));
    for (id, cents) in [("c4", 50_000), ("c5", 0)] {
        let outcome = runtime
            .call(call(id, "refund", json!({ "cents": cents })))
            .await;
        assert!(needs_approval(&outcome), "{cents}: {outcome:?}");
    }
}
