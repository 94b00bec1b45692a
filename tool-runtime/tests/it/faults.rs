//! Store faults while calls run, with every process alive: an outcome the
//! store could not take is offered again until it is recorded (and a
//! decider waits at most one lease for it); a call whose lease cannot be
//! renewed is stopped by its executor when the lease runs out by its own
//! clock, before anyone may take it over; a decider is only ever answered
//! with what the store recorded.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::store::{AuditQuery, MemoryStore};
use tool_runtime::{CallOutcome, CallState, Runtime, RuntimeError, StoredCall, ToolCall};

/// A memory store with switches.
type Faulty = common::faulty::Faulty<MemoryStore>;

/// A tool needing approval that sleeps `for_ms` and answers `"paid"`;
/// `dropped` turns on if its future is dropped before it ends.
fn pay(for_ms: u64, dropped: Arc<AtomicBool>) -> Tool {
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .execute(move |_input: Value, _ctx: ToolContext<Value, Value>| {
            let dropped = Arc::clone(&dropped);
            async move {
                let guard = SetOnDrop(dropped);
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
                std::mem::forget(guard);
                Ok::<_, ToolError>(json!("paid"))
            }
        })
        .build()
        .unwrap()
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn runtime(store: &Faulty, tool: Tool, lease: Duration) -> Runtime {
    Runtime::builder()
        .tool(tool)
        .store(store.clone())
        .lease(lease)
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_outcome_the_store_refused_is_offered_again_and_the_decider_gets_the_record() {
    let store = Faulty::new(MemoryStore::new());
    let runtime = runtime(&store, pay(50, Arc::default()), Duration::from_secs(5));
    runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    store.finish_down.store(true, Ordering::SeqCst);
    let approving = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.approve("c1").await }
    });
    // The database comes back after a blink of 300 ms.
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.finish_down.store(false, Ordering::SeqCst);
    let outcome = approving.await.unwrap().unwrap();
    assert_eq!(outcome.output(), Some(&json!("paid")));
    assert!(
        store.finish_tries.load(Ordering::SeqCst) > 1,
        "the outcome was offered again"
    );
    let stored = runtime.inbox().stored("c1").await.unwrap().unwrap();
    assert!(
        matches!(&stored.state, CallState::Settled { outcome: recorded, .. } if CallOutcome::from(recorded.clone()) == outcome),
        "the answer is the record: {stored:?}"
    );
}

#[tokio::test]
async fn a_decider_hears_after_one_lease_that_the_outcome_is_not_recorded_yet_and_it_is_later() {
    let store = Faulty::new(MemoryStore::new());
    let lease = Duration::from_millis(200);
    let runtime = runtime(&store, pay(10, Arc::default()), lease);
    runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    store.finish_down.store(true, Ordering::SeqCst);
    let started = Instant::now();
    match runtime.approve("c1").await {
        Err(RuntimeError::NotRecorded { call_id, reason }) => {
            assert_eq!(call_id, "c1");
            assert!(reason.contains("keeps offering"), "{reason}");
        }
        other => panic!("expected NotRecorded, got {other:?}"),
    }
    assert!(started.elapsed() < lease * 4, "{:?}", started.elapsed());
    assert!(
        matches!(
            runtime.inbox().stored("c1").await.unwrap().unwrap().state,
            CallState::Running { .. }
        ),
        "not recorded as anything else meanwhile"
    );
    // The outage ends; the offering in the background records it.
    store.finish_down.store(false, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(StoredCall {
            state: CallState::Settled { outcome, .. },
            ..
        }) = runtime.inbox().stored("c1").await.unwrap()
        {
            assert_eq!(CallOutcome::from(outcome).output(), Some(&json!("paid")));
            break;
        }
        assert!(Instant::now() < deadline, "never recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Asked again, the decider answers with the record.
    assert_eq!(
        runtime.approve("c1").await.unwrap().output(),
        Some(&json!("paid"))
    );
}

#[tokio::test]
async fn a_call_whose_lease_cannot_be_renewed_stops_at_its_lease_before_anyone_may_take_it_over() {
    let store = Faulty::new(MemoryStore::new());
    let lease = Duration::from_millis(300);
    let dropped = Arc::new(AtomicBool::new(false));
    let runtime = runtime(&store, pay(60_000, Arc::clone(&dropped)), lease);
    let other = Runtime::builder()
        .tool(pay(10, Arc::default()))
        .store(store.clone())
        .lease(lease)
        .build()
        .unwrap();
    runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    store.renew_down.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let answer = runtime.approve("c1").await;
    let stopped_after = started.elapsed();
    match answer {
        Err(RuntimeError::NotRecorded { reason, .. }) => {
            assert!(reason.contains("could not renew"), "{reason}")
        }
        other => panic!("expected NotRecorded, got {other:?}"),
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's future was dropped"
    );
    assert!(
        stopped_after >= lease && stopped_after < lease * 2,
        "stopped at its lease by its own clock: {stopped_after:?}"
    );
    // Nobody could take it over before the executor stopped it.
    assert!(other.recover().await.unwrap().is_empty());
    // After the grace, recovery takes it (not retry-safe: interrupted).
    tokio::time::sleep(lease).await;
    let recovered = other.recover().await.unwrap();
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert!(!recovered[0].rerun);
}

/// A caller waiting for a call another instance runs (a background call
/// left to a worker, in the foreground) reads its outcome from the store;
/// a blink of the store does not turn that into a failure the store never
/// recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_waiting_on_the_store_rides_out_a_blink_of_it() {
    let store = Faulty::new(MemoryStore::new());
    let report = Tool::builder("report")
        .description("Builds a report")
        .background(
            tool_core::BackgroundConfig::new().disposition(tool_core::Disposition::Foreground),
        )
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, ToolError>(json!("ready"))
            },
        )
        .build()
        .unwrap();
    let front = Runtime::builder()
        .tool(report.clone())
        .store(store.clone())
        .leave_tasks_to_workers(true)
        .lease(Duration::from_millis(600))
        .build()
        .unwrap();
    let worker = Runtime::builder()
        .tool(report)
        .store(store.clone())
        .build()
        .unwrap();
    let working = tokio::spawn(worker.worker().run());
    let calling = tokio::spawn({
        let front = front.clone();
        async move { front.call(ToolCall::new("t1", "report", json!({}))).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    store.get_down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(250)).await;
    store.get_down.store(false, Ordering::SeqCst);
    let outcome = calling.await.unwrap();
    assert_eq!(outcome.output(), Some(&json!("ready")), "{outcome:?}");
    working.abort();
}

/// A call to be stored (one waiting for approval) while the database
/// restarts is tried again until the store takes it, within the runtime's
/// retry budget, and stored promptly once the store answers.
#[tokio::test]
async fn a_call_to_be_stored_is_tried_again_while_the_database_restarts() {
    let store = Faulty::new(MemoryStore::new());
    let runtime = runtime(&store, pay(10, Arc::default()), Duration::from_secs(5));
    store.down.store(true, Ordering::SeqCst);
    let calling = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.call(ToolCall::new("c1", "pay", json!({}))).await }
    });
    // The database is back after 300 ms.
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.down.store(false, Ordering::SeqCst);
    let back = Instant::now();
    let outcome = calling.await.unwrap();
    let stored_after = back.elapsed();
    assert!(
        matches!(outcome, CallOutcome::ApprovalRequired { .. }),
        "{outcome:?}"
    );
    assert!(store.insert_tries.load(Ordering::SeqCst) > 1, "tried again");
    assert!(
        stored_after < Duration::from_millis(250),
        "stored soon after the store came back: {stored_after:?}"
    );
    let requested = runtime
        .inbox()
        .audit(AuditQuery::all().call("c1"))
        .await
        .unwrap();
    assert_eq!(requested.len(), 1, "requested once: {requested:?}");
    assert_eq!(
        runtime.approve("c1").await.unwrap().output(),
        Some(&json!("paid"))
    );
}

/// A call the store cannot take within the runtime's retry budget fails:
/// the model reads that it could not be stored, the store's last error and
/// the tries; nothing is stored. A budget of zero tries once.
#[tokio::test]
async fn a_call_the_store_cannot_take_within_the_retry_budget_fails_saying_so() {
    let store = Faulty::new(MemoryStore::new());
    let budget = Duration::from_millis(300);
    let runtime = Runtime::builder()
        .tool(pay(10, Arc::default()))
        .store(store.clone())
        .store_retry_budget(budget)
        .build()
        .unwrap();
    store.down.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let outcome = runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    let failed_after = started.elapsed();
    let message = outcome.error().expect("failed").message();
    assert!(
        message.starts_with(
            "Tool pay needs approval, but the call could not be stored: the pending store faulty failed: insert: the database is not reachable (tried "
        ) && message.ends_with(" ms)"),
        "{message}"
    );
    let tries = store.insert_tries.load(Ordering::SeqCst);
    assert!(tries > 2, "{tries}");
    assert!(
        message.contains(&format!("(tried {tries} times over ")),
        "{message}"
    );
    assert!(
        failed_after >= budget && failed_after < budget * 2,
        "failed when the budget ran out: {failed_after:?}"
    );
    store.down.store(false, Ordering::SeqCst);
    assert!(
        runtime.inbox().stored("c1").await.unwrap().is_none(),
        "nothing stored"
    );

    let once = Runtime::builder()
        .tool(pay(10, Arc::default()))
        .store(store.clone())
        .store_retry_budget(Duration::ZERO)
        .build()
        .unwrap();
    store.inserts_failing.store(1, Ordering::SeqCst);
    let outcome = once.call(ToolCall::new("c2", "pay", json!({}))).await;
    let message = outcome.error().expect("failed").message();
    assert!(
        message.ends_with("could not be stored: the pending store faulty failed: insert: the database is not reachable"),
        "{message}"
    );
    assert_eq!(store.insert_tries.load(Ordering::SeqCst), tries + 1);
}

/// An insert the store took whose answer was lost (the connection dropped
/// after the commit) is tried again: the call is found stored as it was
/// sent, so it is neither refused as a duplicate nor stored twice. A call
/// given an id that is stored already is still refused at once.
#[tokio::test]
async fn an_insert_whose_answer_was_lost_is_neither_a_duplicate_nor_stored_twice() {
    let store = Faulty::new(MemoryStore::new());
    let runtime = runtime(&store, pay(10, Arc::default()), Duration::from_secs(5));
    store.inserts_unanswered.store(1, Ordering::SeqCst);
    let outcome = runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    assert!(
        matches!(outcome, CallOutcome::ApprovalRequired { .. }),
        "{outcome:?}"
    );
    assert_eq!(store.insert_tries.load(Ordering::SeqCst), 2);
    let waiting = runtime.inbox().waiting().await.unwrap();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let requested = runtime
        .inbox()
        .audit(AuditQuery::all().call("c1"))
        .await
        .unwrap();
    assert_eq!(requested.len(), 1, "requested once: {requested:?}");

    let again = runtime
        .call(ToolCall::new("c1", "pay", json!({ "again": true })))
        .await;
    let message = again.error().expect("refused").message();
    assert!(
        message.contains("could not be stored") && message.contains("already stored"),
        "{message}"
    );
    assert_eq!(store.insert_tries.load(Ordering::SeqCst), 3, "tried once");
    assert_eq!(
        runtime.approve("c1").await.unwrap().output(),
        Some(&json!("paid"))
    );
}

/// An instance that ran a call to its end but could not reach the store to
/// record it (an outage longer than the lease) is alive: the instance that
/// takes the call over records why it was interrupted as far as it knows
/// (the lease ran out before an outcome was recorded), not that the
/// process stopped. The record is the recovery's: the outcome offered late
/// is refused by its fencing token.
#[tokio::test]
async fn a_call_taken_over_after_an_outage_is_recorded_with_what_the_recoverer_knows() {
    let store = Faulty::new(MemoryStore::new());
    let elsewhere = store.beside();
    let lease = Duration::from_millis(200);
    let other = runtime(&elsewhere, pay(10, Arc::default()), lease);
    let runtime = runtime(&store, pay(10, Arc::default()), lease);
    runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    // This instance cannot reach the database; the other one can.
    store.finish_down.store(true, Ordering::SeqCst);
    match runtime.approve("c1").await {
        Err(RuntimeError::NotRecorded { reason, .. }) => {
            assert!(reason.contains("keeps offering"), "{reason}")
        }
        other => panic!("expected NotRecorded, got {other:?}"),
    }
    // Past the lease and its grace, the other instance takes the call over.
    tokio::time::sleep(lease / 2).await;
    let recovered = other.recover().await.unwrap();
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert!(!recovered[0].rerun);
    let message = recovered[0]
        .outcome
        .error()
        .expect("settled as failed")
        .message()
        .to_owned();
    assert!(message.contains("was interrupted"), "{message}");
    assert!(
        message.contains("lease") && message.contains("before an outcome was recorded"),
        "says what is known: {message}"
    );
    assert!(
        !message.contains("stopped before"),
        "does not claim the process stopped: {message}"
    );
    // The database comes back for this instance: its offer is refused.
    store.finish_down.store(false, Ordering::SeqCst);
    let tries = store.finish_tries.load(Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.finish_tries.load(Ordering::SeqCst) == tries {
        assert!(Instant::now() < deadline, "never offered again");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stored = runtime.inbox().stored("c1").await.unwrap().unwrap();
    assert!(
        matches!(&stored.state, CallState::Settled { outcome, .. } if CallOutcome::from(outcome.clone()) == recovered[0].outcome),
        "the record is the recovery's: {stored:?}"
    );
}

/// An outcome the store could not take during an outage is offered again
/// as soon as the store answers, not at the end of a backoff that grew
/// while it was down: the window in which another instance could take the
/// call over once the store is back stays short.
#[tokio::test]
async fn an_outcome_is_offered_again_as_soon_as_the_store_answers() {
    let store = Faulty::new(MemoryStore::new());
    let runtime = runtime(&store, pay(100, Arc::default()), Duration::from_secs(5));
    runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    let approving = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.approve("c1").await }
    });
    // Claimed and running; then the database goes down for a second, and
    // the tool ends meanwhile.
    tokio::time::sleep(Duration::from_millis(30)).await;
    store.down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    store.down.store(false, Ordering::SeqCst);
    let back = Instant::now();
    let outcome = approving.await.unwrap().unwrap();
    let recorded_after = back.elapsed();
    assert_eq!(outcome.output(), Some(&json!("paid")));
    assert!(
        store.finish_tries.load(Ordering::SeqCst) > 1,
        "offered again"
    );
    assert!(
        recorded_after < Duration::from_millis(300),
        "recorded soon after the store came back: {recorded_after:?}"
    );
}

/// A store that answers reads but fails the write (a database gone
/// read-only) is not hammered: the probe wakes the offer once, then it
/// waits its backoff.
#[tokio::test]
async fn a_store_that_answers_reads_but_not_writes_is_offered_the_outcome_at_the_backoff_pace() {
    let store = Faulty::new(MemoryStore::new());
    let runtime = runtime(&store, pay(10, Arc::default()), Duration::from_secs(5));
    runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
    store.finish_down.store(true, Ordering::SeqCst);
    let approving = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.approve("c1").await }
    });
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    // Backoff from 50 ms: 5 tries in a second (every 50 ms would be 20).
    let tries = store.finish_tries.load(Ordering::SeqCst);
    assert!((2..=7).contains(&tries), "{tries} tries in a second");
    store.finish_down.store(false, Ordering::SeqCst);
    let outcome = approving.await.unwrap().unwrap();
    assert_eq!(outcome.output(), Some(&json!("paid")));
}

/// A claim the store answers only after its lease ran out by this
/// instance's clock (a store slow under load), before the tool ran: the
/// instance does not leave it to an outside recovery. It renews the claim
/// as soon as the store answers and runs the call, once; the decider gets
/// its outcome.
#[tokio::test]
async fn a_claim_answered_after_its_lease_ran_out_runs_once_on_the_live_instance() {
    let store = Faulty::new(MemoryStore::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let lease = Duration::from_millis(200);
    let runtime = runtime(&store, pay(5, Arc::clone(&dropped)), lease);
    for call_id in ["c1", "c2"] {
        let waiting = runtime.call(ToolCall::new(call_id, "pay", json!({}))).await;
        assert!(
            matches!(waiting, CallOutcome::ApprovalRequired { .. }),
            "{waiting:?}"
        );
    }
    store.decide_answer_ms.store(400, Ordering::SeqCst);
    let approved = runtime.approve("c1").await.unwrap();
    assert_eq!(approved.output(), Some(&json!("paid")));
    // And with the store down when the lease ran out: renewed once it
    // answers again.
    let approving = tokio::spawn(runtime.approve("c2"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.down.store(false, Ordering::SeqCst);
    store.decide_answer_ms.store(0, Ordering::SeqCst);
    let approved = approving.await.unwrap().unwrap();
    assert_eq!(approved.output(), Some(&json!("paid")));
    assert!(!dropped.load(Ordering::SeqCst), "the tool ran to its end");
    for call_id in ["c1", "c2"] {
        let stored = runtime.inbox().stored(call_id).await.unwrap().unwrap();
        assert!(
            matches!(stored.state, CallState::Settled { .. }),
            "{stored:?}"
        );
        assert_eq!(
            runtime.approve(call_id).await.unwrap().output(),
            Some(&json!("paid"))
        );
    }
}

/// A call stopped here at its lease (renewals could not reach the store)
/// is recovered by the live instance itself once its claim may be taken
/// over, as `recover()` would: not retry-safe, it settles as interrupted;
/// retry-safe, it runs again, once. Nobody calls `recover()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_stopped_at_its_lease_is_recovered_by_the_live_instance_itself() {
    for retry_safe in [false, true] {
        let store = Faulty::new(MemoryStore::new());
        let lease = Duration::from_millis(200);
        let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = Arc::clone(&runs);
        let slow_first = Tool::builder("pay")
            .description("Pays")
            .require_approval(true)
            .retry_safe(retry_safe)
            .execute(move |_input: Value, _ctx: ToolContext<Value, Value>| {
                let run = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    if run == 0 {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                    Ok::<_, ToolError>(json!("paid"))
                }
            })
            .build()
            .unwrap();
        let runtime = runtime(&store, slow_first, lease);
        runtime.call(ToolCall::new("c1", "pay", json!({}))).await;
        store.renew_down.store(true, Ordering::SeqCst);
        let stopped = runtime.approve("c1").await;
        assert!(
            matches!(stopped, Err(RuntimeError::NotRecorded { .. })),
            "{stopped:?}"
        );
        store.renew_down.store(false, Ordering::SeqCst);
        let deadline = Instant::now() + lease * 20;
        let outcome = loop {
            let stored = runtime.inbox().stored("c1").await.unwrap().unwrap();
            if let CallState::Settled { outcome, .. } = stored.state {
                break CallOutcome::from(outcome);
            }
            assert!(Instant::now() < deadline, "still {:?}", stored.state);
            tokio::time::sleep(lease / 4).await;
        };
        if retry_safe {
            assert_eq!(outcome.output(), Some(&json!("paid")));
            assert_eq!(runs.load(Ordering::SeqCst), 2, "ran again, once");
        } else {
            let message = outcome.error().expect("interrupted").message();
            assert!(message.contains("was interrupted"), "{message}");
            assert_eq!(runs.load(Ordering::SeqCst), 1, "not run again");
        }
        assert_eq!(runtime.approve("c1").await.unwrap(), outcome);
    }
}
