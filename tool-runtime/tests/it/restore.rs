//! A call kept as a document by another store (one per call, as a Restate
//! virtual object keeps it), restored into a memory store with
//! `MemoryStore::restore`: a runtime decides it, recovers it and reads it
//! back as it would on any store, and its fencing tokens go on from the
//! document's.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tool_core::{ErrorKind, Tool, ToolContext, ToolError};
use tool_runtime::store::{CallStore, MemoryStore, PendingCall, PendingKind, RecordedOutcome};
use tool_runtime::{CallOutcome, CallState, Runtime, StoredCall};

/// A tool `pay` that counts its runs.
fn pay(retry_safe: bool, runs: &Arc<AtomicUsize>) -> Tool {
    let runs = Arc::clone(runs);
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .retry_safe(retry_safe)
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(json!({ "paid": input["amount"] }))
            }
        })
        .build()
        .expect("tool")
}

fn runtime_on(store: &Arc<MemoryStore>, tool: Tool) -> Runtime {
    Runtime::builder()
        .tool(tool)
        .store(Arc::clone(store))
        .lease(Duration::from_secs(5))
        .build()
        .expect("runtime")
}

fn waiting(epoch: u64) -> StoredCall {
    let call = PendingCall::new("c1", "pay", PendingKind::Approval, json!({ "amount": 5 }));
    let mut stored = StoredCall::pending(call);
    stored.epoch = epoch;
    stored
}

/// The document of a call whose runtime died while running it: its lease
/// ran out.
fn interrupted(epoch: u64) -> StoredCall {
    let mut stored = waiting(epoch);
    stored.state = CallState::Running {
        owner: "an instance that died".to_owned(),
        lease_expires_at: SystemTime::now() - Duration::from_secs(60),
    };
    stored.attempt = 1;
    stored
}

#[tokio::test]
async fn a_restored_waiting_call_is_approved_under_a_later_token_and_read_back_settled() {
    let (store, runs) = (Arc::new(MemoryStore::new()), Arc::new(AtomicUsize::new(0)));
    store.restore(waiting(41));
    let runtime = runtime_on(&store, pay(false, &runs));

    let outcome = runtime.approve("c1").await.expect("approve");
    assert_eq!(outcome.output(), Some(&json!({ "paid": 5 })));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let after = store.get("c1").await.unwrap().expect("kept");
    assert!(
        after.epoch > 41,
        "the claim's token ({}) is above the document's",
        after.epoch
    );
    assert!(matches!(
        after.state,
        CallState::Settled {
            outcome: RecordedOutcome::Completed { .. },
            ..
        }
    ));

    // Restored settled, a second decision is answered with the recorded outcome.
    let again = Arc::new(MemoryStore::new());
    again.restore(after);
    let second = runtime_on(&again, pay(false, &runs))
        .approve("c1")
        .await
        .expect("answered");
    assert_eq!(second.output(), Some(&json!({ "paid": 5 })));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "not run again");
}

#[tokio::test]
async fn a_restored_interrupted_call_is_recovered_as_on_any_store() {
    // Not retry-safe: settled as interrupted, never run again.
    let (store, runs) = (Arc::new(MemoryStore::new()), Arc::new(AtomicUsize::new(0)));
    store.restore(interrupted(9));
    let recovered = runtime_on(&store, pay(false, &runs))
        .recover()
        .await
        .expect("recover");
    assert_eq!(recovered.len(), 1);
    assert!(!recovered[0].rerun);
    match &recovered[0].outcome {
        CallOutcome::Failed { error } => assert_eq!(error.kind(), ErrorKind::Execution),
        other => panic!("expected an interrupted failure, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // Retry-safe: runs again, once, under a token above the document's.
    let store = Arc::new(MemoryStore::new());
    store.restore(interrupted(9));
    let recovered = runtime_on(&store, pay(true, &runs))
        .recover()
        .await
        .expect("recover");
    assert!(recovered[0].rerun);
    assert_eq!(recovered[0].outcome.output(), Some(&json!({ "paid": 5 })));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(store.get("c1").await.unwrap().expect("kept").epoch > 9);
}

#[tokio::test]
async fn restoring_replaces_the_call_of_the_same_id() {
    let store = MemoryStore::new();
    store.restore(waiting(1));
    let mut edited = waiting(2);
    edited.call.input = json!({ "amount": 6 });
    store.restore(edited.clone());
    assert_eq!(store.get("c1").await.unwrap(), Some(edited));
    assert_eq!(store.list().await.unwrap().len(), 1);
}
