//! Application state (`RuntimeBuilder::state`, `State<T>`): every run of a
//! call sees the state of the instance that runs it, on its first run,
//! after approval or resume on another instance, in a worker and after
//! recovery; a runtime lacking state a tool declares refuses to build; and
//! per-call extensions are not kept across a pause.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{BackgroundConfig, State, Tool, ToolContext, ToolError, tool};
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallOutcome, Runtime, RuntimeError, ToolCall};

/// The application's ledger: which instance's state a run saw, by name.
#[derive(Clone)]
struct Ledger {
    instance: &'static str,
    rows: Arc<Mutex<Vec<String>>>,
}

impl Ledger {
    fn new(instance: &'static str) -> Self {
        Ledger {
            instance,
            rows: Arc::default(),
        }
    }

    fn rows(&self) -> Vec<String> {
        self.rows.lock().unwrap().clone()
    }
}

/// Writes a refund to the ledger, after approval.
#[tool(require_approval)]
async fn refund(amount: u32, State(ledger): State<Ledger>) -> String {
    let row = format!("{amount} by {}", ledger.instance);
    ledger.rows.lock().unwrap().push(row.clone());
    row
}

/// Asks the user to confirm a booking, then books it in the ledger.
#[tool]
async fn book(
    flight: String,
    State(ledger): State<Ledger>,
    ctx: ToolContext<String, bool>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(format!("book {flight}?")),
        Some(confirmed) => {
            let row = format!("{flight} {confirmed} by {}", ledger.instance);
            ledger.rows.lock().unwrap().push(row.clone());
            Ok(row)
        }
    }
}

fn instance(store: &Arc<MemoryStore>, ledger: &Ledger) -> Runtime {
    Runtime::builder()
        .tool(RefundTool)
        .tool(BookTool)
        .store(Arc::clone(store))
        .state(ledger.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_first_run_sees_the_runtimes_state() {
    let ledger = Ledger::new("one");
    let runtime = Runtime::builder()
        .tool(BookTool)
        .state(ledger.clone())
        .build()
        .unwrap();
    let outcome = runtime
        .call(ToolCall::new("c1", "book", json!({ "flight": "LH1" })))
        .await;
    assert!(
        matches!(outcome, CallOutcome::Suspended { .. }),
        "{outcome:?}"
    );
    let outcome = runtime.resume("c1", json!(true)).await.unwrap();
    assert_eq!(outcome.output(), Some(&json!("LH1 true by one")));
    assert_eq!(ledger.rows(), ["LH1 true by one"]);
}

#[tokio::test]
async fn a_call_approved_or_resumed_on_another_instance_sees_that_instances_state() {
    let store = Arc::new(MemoryStore::new());
    let (front_ledger, back_ledger) = (Ledger::new("front"), Ledger::new("back"));
    let front = instance(&store, &front_ledger);
    let back = instance(&store, &back_ledger);

    let waiting = front
        .call(ToolCall::new("r1", "refund", json!({ "amount": 40 })))
        .await;
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );
    let approved = back.approve("r1").await.unwrap();
    assert_eq!(approved.output(), Some(&json!("40 by back")));

    front
        .call(ToolCall::new("b1", "book", json!({ "flight": "AF2" })))
        .await;
    let resumed = back.resume("b1", json!(false)).await.unwrap();
    assert_eq!(resumed.output(), Some(&json!("AF2 false by back")));

    assert_eq!(back_ledger.rows(), ["40 by back", "AF2 false by back"]);
    assert!(front_ledger.rows().is_empty());
}

/// A background report that reads the ledger: stored by one instance and
/// left to workers, run by another instance's worker.
fn report() -> Tool {
    Tool::builder("report")
        .description("Builds a report from the ledger")
        .background(BackgroundConfig::new().timeout_ms(10_000))
        .requires_state::<Ledger>()
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            let ledger = ctx
                .state::<Ledger>()
                .ok_or_else(|| ToolError::new("no ledger"))?;
            Ok::<_, ToolError>(json!({ "by": ledger.instance }))
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_call_left_to_workers_runs_with_the_workers_state() {
    let store = Arc::new(MemoryStore::new());
    let front = Runtime::builder()
        .tool(report())
        .store(Arc::clone(&store))
        .state(Ledger::new("front"))
        .leave_tasks_to_workers(true)
        .build()
        .unwrap();
    let back = Runtime::builder()
        .tool(report())
        .store(Arc::clone(&store))
        .state(Ledger::new("worker"))
        .build()
        .unwrap();
    let working = tokio::spawn(back.worker().poll_every(Duration::from_millis(20)).run());
    let started = front.call(ToolCall::new("t1", "report", json!({}))).await;
    assert!(
        matches!(started, CallOutcome::BackgroundStarted { .. }),
        "{started:?}"
    );
    let outcome = tokio::time::timeout(Duration::from_secs(20), front.wait("t1"))
        .await
        .expect("the worker ran the task")
        .unwrap();
    assert_eq!(outcome.output(), Some(&json!({ "by": "worker" })));
    working.abort();
}

/// A retry-safe refund: run again by recovery on another instance when the
/// instance running it stopped (its tokio runtime shut down mid-call).
#[tool(require_approval, retry_safe)]
async fn settle(amount: u32, State(ledger): State<Ledger>) -> String {
    if ledger.instance == "crashing" {
        // Never finishes on the instance that is about to stop.
        std::future::pending::<()>().await;
    }
    format!("{amount} by {}", ledger.instance)
}

#[tokio::test]
async fn a_call_recovered_by_another_instance_runs_with_that_instances_state() {
    let store = Arc::new(MemoryStore::new());
    let lease = Duration::from_millis(200);
    let crashing = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            let tokio = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            tokio.block_on(async {
                let runtime = Runtime::builder()
                    .tool(SettleTool)
                    .store(store)
                    .lease(lease)
                    .state(Ledger::new("crashing"))
                    .build()
                    .unwrap();
                runtime
                    .call(ToolCall::new("s1", "settle", json!({ "amount": 7 })))
                    .await;
                // Approved: claimed, and running until the runtime stops.
                let approving = tokio::spawn(runtime.approve("s1"));
                tokio::time::sleep(Duration::from_millis(50)).await;
                drop(approving);
            });
            // The tokio runtime is dropped here: the claim is left behind.
        })
    };
    crashing.join().unwrap();
    let recovering = Runtime::builder()
        .tool(SettleTool)
        .store(Arc::clone(&store))
        .lease(lease)
        .state(Ledger::new("recovering"))
        .build()
        .unwrap();
    let mut recovered = Vec::new();
    for _ in 0..50 {
        recovered = recovering.recover().await.unwrap();
        if !recovered.is_empty() {
            break;
        }
        tokio::time::sleep(lease / 2).await;
    }
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert!(recovered[0].rerun);
    assert_eq!(
        recovered[0].outcome.output(),
        Some(&json!("7 by recovering"))
    );
}

#[test]
fn a_runtime_without_state_a_tool_declares_refuses_to_build_naming_the_type() {
    let error = Runtime::builder().tool(RefundTool).build().unwrap_err();
    match &error {
        RuntimeError::MissingState { tool_id, types } => {
            assert_eq!(tool_id, "refund");
            assert_eq!(types, std::any::type_name::<Ledger>());
        }
        other => panic!("expected MissingState, got {other:?}"),
    }
    assert!(
        error.to_string().contains("RuntimeBuilder::state"),
        "{error}"
    );
    let error = Runtime::builder().tool(report()).build().unwrap_err();
    assert!(
        matches!(error, RuntimeError::MissingState { .. }),
        "{error:?}"
    );
    // State of another type does not stand in for it.
    let error = Runtime::builder()
        .tool(RefundTool)
        .state(String::from("ledger"))
        .build()
        .unwrap_err();
    assert!(
        matches!(error, RuntimeError::MissingState { .. }),
        "{error:?}"
    );
}

/// Names the tenant attached to the call, after approval.
#[tool(require_approval)]
async fn whoami(ctx: ToolContext) -> String {
    ctx.extension::<Tenant>()
        .map_or("no tenant", |tenant| tenant.0)
        .to_owned()
}

struct Tenant(&'static str);

#[tokio::test]
async fn extensions_given_with_a_call_are_not_kept_when_it_pauses() {
    let runtime = Runtime::builder().tool(WhoamiTool).build().unwrap();
    let waiting = runtime
        .call(ToolCall::new("w1", "whoami", json!({})).with_extension(Tenant("acme")))
        .await;
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );
    let outcome = runtime.approve("w1").await.unwrap();
    assert_eq!(outcome.output(), Some(&json!("no tenant")));
}
