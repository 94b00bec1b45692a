//! The contract every store meets (`CallStore`, `RunStore`, `AuditLog`), run
//! against each store (memory, SQLite, PostgreSQL): the lifecycle transitions,
//! fencing tokens of running calls, recovery of expired leases, retention, and
//! that of concurrent decisions on one call exactly one wins; agent runs saved
//! by compare-and-set (of concurrent saves of one revision exactly one wins),
//! purged once finished; the size bound of the retention (oldest settled first,
//! purged ids remembered); and the limits every store enforces alike (ids at
//! most `MAX_ID_BYTES` bytes without NUL, JSON at most `MAX_JSON_DEPTH`
//! levels), each run just under and just over; the audit log, appended to in
//! order (concurrently too), read by call and from a place, never changed by
//! purges, refusing what calls refuse; standing rules, kept once by id,
//! read in force by tool and time in the order made, revoked once (of
//! concurrent revocations exactly one wins), refusing what calls refuse;
//! the outbox, written with a change if and only if it applied, claimed
//! in order per call under fencing tokens (concurrent claimers get
//! different notifications), dead letters sent again, purged when settled.

use std::sync::Arc;

use super::calls;
use std::time::Duration;

use serde_json::json;
use tool_runtime::store::{
    AuditEntry, AuditKind, AuditLog, AuditQuery, AuditRetention, CallStore, Decided, Delivery,
    DeliveryState, Expected, MAX_ID_BYTES, MAX_JSON_DEPTH, Notification, NotificationKind, Outbox,
    OutboxQuery, PendingOrder, PendingQuery, RecordedOutcome, RequiredApprovals, Retention,
    Revocation, RuleStore, RunStore, Settlement, StandingRule, StoredRun, Transition,
};
use tool_runtime::{CallState, PendingCall, PendingKind, StoreError, StoredCall};

const LONG: Duration = Duration::from_secs(60);

fn run(owner: &str, lease: Duration, resume_data: Option<serde_json::Value>) -> Transition {
    Transition::Run {
        owner: owner.into(),
        lease,
        resume_data,
    }
}

/// A retention by age alone.
fn aged(age: Duration) -> Retention {
    Retention::new(age, usize::MAX)
}

fn completed(n: i64) -> RecordedOutcome {
    RecordedOutcome::from_outcome(&tool_runtime::CallOutcome::Completed {
        output: json!(n),
        model_output: None,
        state: None,
    })
    .unwrap()
}

fn won(decided: Decided) -> StoredCall {
    match decided {
        Decided::Won(stored) => stored,
        Decided::Lost(found) => panic!("expected to win, found {found:?}"),
    }
}

fn lost(decided: Decided) -> Option<StoredCall> {
    match decided {
        Decided::Lost(found) => found,
        Decided::Won(stored) => panic!("expected to lose, won {stored:?}"),
    }
}

/// Runs the whole contract on stores made by `fresh` (each call: an empty store;
/// `prefix` keeps call ids apart when the stores share a database).
pub async fn store_contract<S: CallStore + RunStore + AuditLog + RuleStore + Outbox>(
    prefix: &str,
    fresh: impl Fn() -> S,
) {
    lifecycle(&fresh(), prefix).await;
    ownership_and_recovery(&fresh(), prefix).await;
    fencing(&fresh(), prefix).await;
    decline_and_retention(&fresh(), prefix).await;
    awaiting_output(&fresh(), prefix).await;
    concurrent_decisions(Arc::new(fresh()), prefix).await;
    claiming_tasks(Arc::new(fresh()), prefix).await;
    runs(Arc::new(fresh()), prefix).await;
    size_bound(&fresh(), prefix).await;
    limits(&fresh(), prefix).await;
    audit_log(Arc::new(fresh()), prefix).await;
    edited_claims(&fresh(), prefix).await;
    pages(&fresh(), prefix).await;
    versioned_decisions(&fresh(), prefix).await;
    revisions(&fresh(), prefix).await;
    standing_rules(Arc::new(fresh()), prefix).await;
    sparse_pages(&fresh(), prefix).await;
    audit_retention(&fresh(), prefix).await;
    ordered_pages(&fresh(), prefix).await;
    outbox(Arc::new(fresh()), prefix).await;
}

async fn lifecycle(store: &(impl CallStore + RunStore), p: &str) {
    let id = format!("{p}-life");
    let mut call = PendingCall::new(&id, "tool", PendingKind::Suspended, json!({ "a": 1 }));
    call.payload = Some(json!({ "p": false }));
    call.head
        .request_context
        .insert("userId".into(), json!("u"));
    call.head.messages.push(json!({ "role": "user" }));
    call.head.agent = Some(
        tool_core::AgentContext::new("agent", "run-1")
            .with_thread("thread")
            .with_resource("user"),
    );
    store.insert(call.clone()).await.unwrap();
    assert!(matches!(
        store.insert(call.clone()).await,
        Err(StoreError::Duplicate { .. })
    ));
    let stored = store.get(&id).await.unwrap().unwrap();
    assert_eq!(stored, StoredCall::pending(call.clone()));
    assert_eq!(calls(store.list().await.unwrap()), [call.clone()]);

    // Wrong kind: nothing changes.
    let found = lost(
        store
            .decide(&id, PendingKind::Approval, run("a", LONG, None))
            .await
            .unwrap(),
    );
    assert_eq!(found.unwrap().state, CallState::Pending);

    // Resume claims it, with its data.
    let claimed = won(store
        .decide(
            &id,
            PendingKind::Suspended,
            run("a", LONG, Some(json!("yes"))),
        )
        .await
        .unwrap());
    assert!(matches!(&claimed.state, CallState::Running { owner, .. } if owner == "a"));
    assert_eq!(claimed.attempt, 1);
    assert!(claimed.epoch > 0, "a claim draws a fencing token");
    assert_eq!(claimed.resume_data, Some(json!("yes")));
    assert_eq!(store.get(&id).await.unwrap().unwrap(), claimed);
    assert!(store.list().await.unwrap().is_empty(), "no longer pending");
    // A second decision loses and sees it running.
    let found = lost(
        store
            .decide(&id, PendingKind::Suspended, run("b", LONG, None))
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(matches!(found.state, CallState::Running { .. }));

    // Suspends again: pending for resume, with the new payload, never run.
    assert!(
        store
            .finish(
                &id,
                claimed.epoch,
                Settlement::Suspended { payload: json!(2) }
            )
            .await
            .unwrap()
    );
    let again = store.get(&id).await.unwrap().unwrap();
    assert_eq!(again.state, CallState::Pending);
    assert_eq!((again.attempt, again.resume_data), (0, None));
    assert_eq!(again.call.payload, Some(json!(2)));
    assert_eq!(again.call.input, call.input);
    assert_eq!(
        again.call.head.agent, call.head.agent,
        "the agent is kept across a suspension"
    );

    assert_eq!(again.epoch, claimed.epoch, "suspending draws no token");

    // Resumed and settled: the outcome is kept.
    let resumed = won(store
        .decide(&id, PendingKind::Suspended, run("b", LONG, Some(json!(1))))
        .await
        .unwrap());
    assert!(
        resumed.epoch > claimed.epoch,
        "a token never repeats across suspend and resume"
    );
    assert!(
        !store
            .finish(&id, claimed.epoch, Settlement::Settled(completed(0)))
            .await
            .unwrap(),
        "only the current claim settles"
    );
    assert!(
        store
            .finish(&id, resumed.epoch, Settlement::Settled(completed(7)))
            .await
            .unwrap()
    );
    let settled = store.get(&id).await.unwrap().unwrap();
    assert!(
        matches!(&settled.state, CallState::Settled { outcome, .. } if *outcome == completed(7)),
        "{settled:?}"
    );
    let found = lost(
        store
            .decide(&id, PendingKind::Suspended, run("c", LONG, None))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(found.state, settled.state, "a settled call stays settled");
    assert!(
        !store
            .finish(&id, resumed.epoch, Settlement::Settled(completed(8)))
            .await
            .unwrap(),
        "settled once"
    );
    assert!(matches!(
        store.insert(call).await,
        Err(StoreError::Duplicate { .. })
    ));
    assert!(
        lost(
            store
                .decide(
                    &format!("{p}-none"),
                    PendingKind::Approval,
                    run("a", LONG, None)
                )
                .await
                .unwrap()
        )
        .is_none()
    );
}

/// The lease of a claim the contract lets run out: long enough that a
/// loaded machine does not see it end before the checks that it is live.
const DEAD_LEASE: Duration = Duration::from_millis(800);

async fn ownership_and_recovery(store: &(impl CallStore + RunStore), p: &str) {
    let (short, other) = (format!("{p}-short"), format!("{p}-other-tool"));
    let mut epochs = Vec::new();
    for (id, tool) in [(&short, "tool"), (&other, "elsewhere")] {
        store
            .insert(PendingCall::new(id, tool, PendingKind::Approval, json!({})))
            .await
            .unwrap();
        let claimed = won(store
            .decide(id, PendingKind::Approval, run("dead", DEAD_LEASE, None))
            .await
            .unwrap());
        epochs.push(claimed.epoch);
    }
    let dead = epochs[0];
    let tools = ["tool".to_owned()];
    assert!(
        store
            .recover_expired("b", LONG, &tools)
            .await
            .unwrap()
            .is_empty(),
        "a live lease is not recovered"
    );
    assert!(store.renew(&short, dead, DEAD_LEASE).await.unwrap());
    assert!(
        !store.renew(&short, epochs[1], LONG).await.unwrap(),
        "only the current claim renews"
    );
    tokio::time::sleep(DEAD_LEASE + Duration::from_millis(200)).await;

    let recovered = store.recover_expired("b", LONG, &tools).await.unwrap();
    assert_eq!(
        recovered.len(),
        1,
        "only calls of the given tools: {recovered:?}"
    );
    assert_eq!(recovered[0].call.head.call_id, short);
    assert_eq!(recovered[0].attempt, 2);
    assert!(matches!(&recovered[0].state, CallState::Running { owner, .. } if owner == "b"));
    assert!(recovered[0].epoch > dead, "a takeover draws a new token");
    assert!(
        store
            .recover_expired("c", LONG, &tools)
            .await
            .unwrap()
            .is_empty(),
        "recovered once"
    );
    assert!(
        !store.renew(&short, dead, LONG).await.unwrap(),
        "the dead owner lost it"
    );
    assert!(
        !store
            .finish(&short, dead, Settlement::Settled(completed(1)))
            .await
            .unwrap()
    );
    assert!(
        store
            .finish(
                &short,
                recovered[0].epoch,
                Settlement::Settled(completed(2))
            )
            .await
            .unwrap()
    );
}

/// Fencing tokens: an instance that takes its own expired call over again
/// fences off its earlier execution; a finish for the current token
/// succeeds after the lease ran out, as long as nobody took the call; and
/// the tokens of one store never repeat.
async fn fencing(store: &(impl CallStore + RunStore), p: &str) {
    let tools = ["tool".to_owned()];
    let id = format!("{p}-fenced");
    store
        .insert(PendingCall::new(
            &id,
            "tool",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    let first = won(store
        .decide(
            &id,
            PendingKind::Approval,
            run("a", Duration::from_millis(20), None),
        )
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(60)).await;
    let again = store.recover_expired("a", LONG, &tools).await.unwrap();
    assert_eq!(again.len(), 1, "{again:?}");
    assert!(again[0].epoch > first.epoch);
    assert!(
        !store
            .finish(&id, first.epoch, Settlement::Settled(completed(1)))
            .await
            .unwrap(),
        "the same owner's stale execution settles nothing"
    );
    assert!(!store.renew(&id, first.epoch, LONG).await.unwrap());

    let late = format!("{p}-late");
    store
        .insert(PendingCall::new(
            &late,
            "tool",
            PendingKind::Task,
            json!({}),
        ))
        .await
        .unwrap();
    let claimed = store
        .claim_next(PendingKind::Task, "a", Duration::from_millis(20), &tools)
        .await
        .unwrap()
        .unwrap();
    assert!(claimed.epoch > again[0].epoch, "tokens only grow");
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert!(
        store
            .finish(&late, claimed.epoch, Settlement::Settled(completed(3)))
            .await
            .unwrap(),
        "a lease that ran out with nobody taking the call still settles"
    );
    let settled = store.get(&late).await.unwrap().unwrap();
    assert!(
        matches!(&settled.state, CallState::Settled { outcome, .. } if *outcome == completed(3))
    );

    // A call id purged and used again never meets an old token.
    store
        .finish(&id, again[0].epoch, Settlement::Settled(completed(2)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    store
        .purge_settled(aged(Duration::from_millis(10)))
        .await
        .unwrap();
    store
        .insert(PendingCall::new(
            &id,
            "tool",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    let reused = won(store
        .decide(&id, PendingKind::Approval, run("a", LONG, None))
        .await
        .unwrap());
    assert!(reused.epoch > claimed.epoch);
    for stale in [first.epoch, again[0].epoch, claimed.epoch] {
        assert!(!store.renew(&id, stale, LONG).await.unwrap());
    }
}

/// A call that waits for its output (a declaration-only tool's) is listed
/// with its kind, taken only by a decision for that kind, and settled once
/// with the output given; it reads back as it was.
async fn awaiting_output(store: &(impl CallStore + RunStore), p: &str) {
    let id = format!("{p}-output");
    let call = PendingCall::new(&id, "pick", PendingKind::Output, json!({ "q": "color?" }));
    store.insert(call.clone()).await.unwrap();
    assert_eq!(
        calls(store.list().await.unwrap()),
        std::slice::from_ref(&call)
    );
    let found = lost(
        store
            .decide(&id, PendingKind::Approval, run("a", LONG, None))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        found.state,
        CallState::Pending,
        "another kind changes nothing"
    );
    let settled = won(store
        .decide(&id, PendingKind::Output, Transition::Settle(completed(7)))
        .await
        .unwrap());
    assert!(
        matches!(&settled.state, CallState::Settled { outcome, .. } if *outcome == completed(7))
    );
    assert_eq!(
        (settled.attempt, settled.epoch),
        (0, 0),
        "never ran, never claimed"
    );
    let found = lost(
        store
            .decide(&id, PendingKind::Output, Transition::Settle(completed(8)))
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(matches!(&found.state, CallState::Settled { outcome, .. } if *outcome == completed(7)));
    assert_eq!(found.call, call, "it reads back as stored, its kind too");
    assert!(store.list().await.unwrap().is_empty());
}

async fn decline_and_retention(store: &(impl CallStore + RunStore), p: &str) {
    let id = format!("{p}-declined");
    store
        .insert(PendingCall::new(
            &id,
            "tool",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    let declined = RecordedOutcome::from_outcome(&tool_runtime::CallOutcome::Declined {
        reason: Some("no".into()),
    })
    .unwrap();
    let settled = won(store
        .decide(
            &id,
            PendingKind::Approval,
            Transition::Settle(declined.clone()),
        )
        .await
        .unwrap());
    assert!(matches!(&settled.state, CallState::Settled { outcome, .. } if *outcome == declined));
    assert_eq!(settled.attempt, 0, "never ran");
    let found = lost(
        store
            .decide(&id, PendingKind::Approval, run("a", LONG, None))
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(matches!(found.state, CallState::Settled { .. }));

    let pending = format!("{p}-kept");
    store
        .insert(PendingCall::new(
            &pending,
            "tool",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    assert_eq!(
        store.purge_settled(aged(LONG)).await.unwrap(),
        0,
        "recent: kept"
    );
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(
        store
            .purge_settled(aged(Duration::from_millis(10)))
            .await
            .unwrap(),
        1
    );
    assert!(store.get(&id).await.unwrap().is_none());
    assert!(
        store.get(&pending).await.unwrap().is_some(),
        "pending calls are never purged"
    );
}

async fn concurrent_decisions<S: CallStore + RunStore>(store: Arc<S>, p: &str) {
    let ids: Vec<String> = (0..20).map(|i| format!("{p}-race-{i}")).collect();
    for id in &ids {
        store
            .insert(PendingCall::new(
                id,
                "tool",
                PendingKind::Approval,
                json!({}),
            ))
            .await
            .unwrap();
    }
    let mut deciders = Vec::new();
    for decider in 0..8 {
        let (store, ids) = (Arc::clone(&store), ids.clone());
        deciders.push(tokio::spawn(async move {
            let mut wins = 0;
            for id in &ids {
                let transition = run(&format!("d{decider}"), LONG, None);
                if let Decided::Won(_) = store
                    .decide(id, PendingKind::Approval, transition)
                    .await
                    .unwrap()
                {
                    wins += 1;
                }
            }
            wins
        }));
    }
    let mut wins = 0;
    for decider in deciders {
        wins += decider.await.unwrap();
    }
    assert_eq!(wins, ids.len(), "each call won by exactly one decision");
}

async fn claiming_tasks<S: CallStore + RunStore>(store: Arc<S>, p: &str) {
    let tools = ["tool".to_owned()];
    assert!(
        store
            .claim_next(PendingKind::Task, "w", LONG, &tools)
            .await
            .unwrap()
            .is_none(),
        "nothing to claim"
    );
    store
        .insert(PendingCall::new(
            format!("{p}-approval"),
            "tool",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    store
        .insert(PendingCall::new(
            format!("{p}-elsewhere"),
            "other",
            PendingKind::Task,
            json!({}),
        ))
        .await
        .unwrap();
    let ids: Vec<String> = (0..10).map(|i| format!("{p}-task-{i}")).collect();
    for id in &ids {
        store
            .insert(PendingCall::new(id, "tool", PendingKind::Task, json!({})))
            .await
            .unwrap();
    }
    let mut workers = Vec::new();
    for worker in 0..4 {
        let (store, tools) = (Arc::clone(&store), tools.clone());
        workers.push(tokio::spawn(async move {
            let mut claimed = Vec::new();
            let owner = format!("w{worker}");
            while let Some(task) = store
                .claim_next(PendingKind::Task, &owner, LONG, &tools)
                .await
                .unwrap()
            {
                assert!(matches!(&task.state, CallState::Running { owner: o, .. } if *o == owner));
                assert_eq!(task.attempt, 1);
                claimed.push(task.call.head.call_id);
            }
            claimed
        }));
    }
    let mut claimed = Vec::new();
    for worker in workers {
        claimed.extend(worker.await.unwrap());
    }
    claimed.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(
        claimed, expected,
        "each task claimed once; other kinds and tools left"
    );
    let approval = store.get(&format!("{p}-approval")).await.unwrap().unwrap();
    assert_eq!(approval.state, CallState::Pending);
}

/// A value `levels` deep: arrays in arrays.
fn nested(levels: usize) -> serde_json::Value {
    (1..levels).fold(json!(1), |inner, _| json!([inner]))
}

async fn runs<S: CallStore + RunStore>(store: Arc<S>, p: &str) {
    let id = format!("{p}-run");
    assert_eq!(store.load_run(&id).await.unwrap(), None, "no such run");
    assert_eq!(
        store
            .save_run(&id, Some(1), false, json!({}))
            .await
            .unwrap(),
        None,
        "nothing to replace"
    );
    assert_eq!(store.load_run(&id).await.unwrap(), None);

    // Created at revision 1, read back as saved.
    let record = json!({ "messages": [{ "role": "user", "text": "hi" }], "waiting": ["c1", "c2"] });
    assert_eq!(
        store
            .save_run(&id, None, false, record.clone())
            .await
            .unwrap(),
        Some(1)
    );
    let loaded = store.load_run(&id).await.unwrap().unwrap();
    assert_eq!(loaded, StoredRun::new(&id, 1, false, record.clone()));
    assert_eq!(
        store
            .save_run(&id, None, false, json!("again"))
            .await
            .unwrap(),
        None,
        "creating an existing run loses"
    );
    assert_eq!(store.load_run(&id).await.unwrap().unwrap(), loaded);

    // Replaced with the revision read; a stale revision loses, changing nothing.
    assert_eq!(
        store
            .save_run(&id, Some(1), false, json!({ "step": 2 }))
            .await
            .unwrap(),
        Some(2)
    );
    for stale in [1, 3] {
        assert_eq!(
            store
                .save_run(&id, Some(stale), true, json!({ "stale": stale }))
                .await
                .unwrap(),
            None,
            "revision {stale} is not the current one"
        );
    }
    assert_eq!(
        store.load_run(&id).await.unwrap().unwrap(),
        StoredRun::new(&id, 2, false, json!({ "step": 2 }))
    );

    // Concurrent saves naming one revision (and concurrent creations of one
    // run): exactly one wins, and its record is the one kept.
    const SAVERS: usize = 8;
    let raced = format!("{p}-run-race");
    for expected in [None, Some(1), Some(2)] {
        let mut savers = Vec::new();
        for saver in 0..SAVERS {
            let (store, raced) = (Arc::clone(&store), raced.clone());
            savers.push(tokio::spawn(async move {
                let saved = store
                    .save_run(&raced, expected, false, json!({ "saver": saver }))
                    .await
                    .unwrap();
                saved.map(|revision| (saver, revision))
            }));
        }
        let mut winners = Vec::new();
        for saver in savers {
            winners.extend(saver.await.unwrap());
        }
        let next = expected.map_or(1, |r| r + 1);
        assert_eq!(
            winners.len(),
            1,
            "exactly one save of {expected:?} wins: {winners:?}"
        );
        assert_eq!(winners[0].1, next);
        assert_eq!(
            store.load_run(&raced).await.unwrap().unwrap(),
            StoredRun::new(&raced, next, false, json!({ "saver": winners[0].0 }))
        );
    }

    // A record a JSON parser could not read back is refused, naming the
    // run; nothing is saved.
    let error = store
        .save_run(&id, Some(2), false, nested(200))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&format!("{id:?}")) && error.contains("127 levels"),
        "{error}"
    );
    let deep = format!("{p}-run-deep");
    assert!(
        store
            .save_run(&deep, None, false, nested(200))
            .await
            .is_err()
    );
    assert_eq!(store.load_run(&deep).await.unwrap(), None);
    assert_eq!(store.load_run(&id).await.unwrap().unwrap().revision, 2);
    // As deep as a parser reads: kept and read back.
    assert_eq!(
        store
            .save_run(&deep, None, false, nested(127))
            .await
            .unwrap(),
        Some(1)
    );
    assert_eq!(
        store.load_run(&deep).await.unwrap().unwrap().record,
        nested(127)
    );

    // Finished runs are purged once older than the age (and counted);
    // unfinished ones never.
    let done = format!("{p}-run-done");
    store.save_run(&done, None, false, json!(1)).await.unwrap();
    assert_eq!(
        store
            .save_run(&done, Some(1), true, json!(2))
            .await
            .unwrap(),
        Some(2)
    );
    assert!(store.load_run(&done).await.unwrap().unwrap().finished);
    assert_eq!(
        store.purge_settled(aged(LONG)).await.unwrap(),
        0,
        "recent: kept"
    );
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(
        store
            .purge_settled(aged(Duration::from_millis(10)))
            .await
            .unwrap(),
        1,
        "the finished run"
    );
    assert_eq!(store.load_run(&done).await.unwrap(), None);
    for paused in [&id, &raced, &deep] {
        assert!(
            store.load_run(paused).await.unwrap().is_some(),
            "unfinished runs are never purged: {paused}"
        );
    }
    assert_eq!(
        store.save_run(&done, None, false, json!(3)).await.unwrap(),
        Some(1),
        "a purged run's id is free again"
    );
}

/// Stores sharing one database (separate connections, as separate processes
/// have) each add 1 to a run's counter, `rounds` times, by load and save,
/// loading again when another save came first: no update is lost.
pub async fn run_updates_from_several_stores_lose_nothing<S: CallStore + RunStore + Clone>(
    stores: Vec<S>,
    run_id: &str,
    rounds: u64,
) {
    let first = stores.first().expect("a store").clone();
    assert_eq!(
        first
            .save_run(run_id, None, false, json!({ "count": 0 }))
            .await
            .unwrap(),
        Some(1)
    );
    let instances = stores.len() as u64;
    let mut tasks = Vec::new();
    for store in stores {
        let run_id = run_id.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut lost = 0;
            for _ in 0..rounds {
                loop {
                    let run = store.load_run(&run_id).await.unwrap().unwrap();
                    let count = run.record["count"].as_u64().unwrap();
                    let saved = store
                        .save_run(
                            &run_id,
                            Some(run.revision),
                            false,
                            json!({ "count": count + 1 }),
                        )
                        .await
                        .unwrap();
                    match saved {
                        Some(revision) => {
                            assert_eq!(revision, run.revision + 1);
                            break;
                        }
                        None => lost += 1,
                    }
                }
            }
            lost
        }));
    }
    let mut lost = 0;
    for task in tasks {
        lost += task.await.unwrap();
    }
    let run = first.load_run(run_id).await.unwrap().unwrap();
    assert_eq!(
        run.record,
        json!({ "count": instances * rounds }),
        "every update kept ({lost} saves lost a race and were retried)"
    );
    assert_eq!(run.revision, 1 + instances * rounds);
}

/// A paused instance's transactional call: claimed for a lease that runs
/// out, its tool's `work` done through the handle in `extensions`, then
/// taken over by another instance; its commit must commit nothing. Returns
/// what the commit answered (the caller checks its table is untouched).
pub async fn commit_after_takeover<S: CallStore>(
    store: &S,
    call_id: &str,
    work: impl AsyncFnOnce(&tool_core::Extensions),
) -> tool_runtime::store::Committed {
    store
        .insert(PendingCall::new(
            call_id,
            "record",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    let first = won(store
        .decide(
            call_id,
            PendingKind::Approval,
            run("paused", Duration::from_millis(20), None),
        )
        .await
        .unwrap());
    let transaction = store.transaction().expect("the store runs transactions");
    let mut extensions = tool_core::Extensions::new();
    transaction.add_handle(&mut extensions);
    work(&extensions).await;
    drop(extensions);
    // The paused instance's lease ran out; another took the call over.
    tokio::time::sleep(Duration::from_millis(60)).await;
    let taken = store
        .recover_expired("other", LONG, &["record".to_owned()])
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    let committed = transaction
        .commit(
            call_id.to_owned(),
            first.epoch,
            Settlement::Settled(completed(1)),
            Vec::new(),
        )
        .await
        .unwrap();
    assert!(matches!(
        store.get(call_id).await.unwrap().unwrap().state,
        CallState::Running { .. }
    ));
    committed
}

/// A new call `id` waiting for approval.
fn approval(id: &str) -> PendingCall {
    PendingCall::new(id, "tool", PendingKind::Approval, json!({}))
}

/// Settles the new approval call `id` by declining it.
async fn settled_call(store: &impl CallStore, id: &str) {
    store.insert(approval(id)).await.unwrap();
    let declined =
        RecordedOutcome::from_outcome(&tool_runtime::CallOutcome::Declined { reason: None })
            .unwrap();
    won(store
        .decide(id, PendingKind::Approval, Transition::Settle(declined))
        .await
        .unwrap());
}

/// The size bound of the retention: all but the newest `max_settled`
/// settled calls are purged, oldest settled first, whatever their ids; the
/// ids purged so are remembered for the age, and only those.
async fn size_bound(store: &(impl CallStore + RunStore), p: &str) {
    // Settled in this order, apart in time (the durable stores keep
    // milliseconds); ids in another order, so that the order is by time.
    let settled: Vec<String> = ["e", "d", "c", "b", "a"]
        .iter()
        .map(|name| format!("{p}-bound-{name}"))
        .collect();
    for id in &settled {
        settled_call(store, id).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let pending = format!("{p}-bound-pending");
    store.insert(approval(&pending)).await.unwrap();
    let running = format!("{p}-bound-running");
    store.insert(approval(&running)).await.unwrap();
    won(store
        .decide(&running, PendingKind::Approval, run("a", LONG, None))
        .await
        .unwrap());

    assert_eq!(
        store.purge_settled(Retention::new(LONG, 5)).await.unwrap(),
        0,
        "five settled, five kept"
    );
    assert_eq!(
        store.purge_settled(Retention::new(LONG, 2)).await.unwrap(),
        3,
        "the three oldest settled purged"
    );
    for id in &settled[..3] {
        assert!(store.get(id).await.unwrap().is_none(), "{id} purged");
        assert!(
            store.purged(id).await.unwrap().is_some(),
            "{id} remembered as purged"
        );
    }
    for id in &settled[3..] {
        assert!(
            matches!(
                store.get(id).await.unwrap().unwrap().state,
                CallState::Settled { .. }
            ),
            "{id}, among the newest two, kept"
        );
        assert_eq!(store.purged(id).await.unwrap(), None);
    }
    for id in [&pending, &running] {
        assert!(
            store.get(id).await.unwrap().is_some(),
            "pending and running calls are never purged: {id}"
        );
    }
    let never = format!("{p}-bound-never");
    assert_eq!(store.purged(&never).await.unwrap(), None, "never stored");
    // A decision on a purged call finds nothing; the runtime asks `purged`.
    assert_eq!(
        lost(
            store
                .decide(&settled[0], PendingKind::Approval, run("a", LONG, None))
                .await
                .unwrap()
        ),
        None
    );
    assert_eq!(
        store.purge_settled(Retention::new(LONG, 2)).await.unwrap(),
        0,
        "nothing more to purge"
    );
    assert_eq!(
        store.purge_settled(Retention::new(LONG, 0)).await.unwrap(),
        2,
        "a bound of 0 keeps no settled call"
    );
    assert!(store.purged(&settled[4]).await.unwrap().is_some());

    // The remembered ids are themselves kept for the age only.
    tokio::time::sleep(Duration::from_millis(30)).await;
    store
        .purge_settled(Retention::new(Duration::from_millis(10), 0))
        .await
        .unwrap();
    for id in &settled {
        assert_eq!(store.purged(id).await.unwrap(), None, "{id} forgotten");
    }
    assert!(store.get(&pending).await.unwrap().is_some());
}

/// `levels` levels of arrays.
fn nested_arrays(levels: usize) -> serde_json::Value {
    (1..levels).fold(json!([]), |inner, _| json!([inner]))
}

/// `error` is the refusal of every store: it names `subject` and says
/// `limit`, and quotes no more than an excerpt of what it refused.
fn refused(result: Result<impl std::fmt::Debug, StoreError>, subject: &str, limit: &str) {
    let error = result.expect_err("refused");
    let message = error.to_string();
    assert!(matches!(error, StoreError::Refused { .. }), "{error:?}");
    assert!(message.contains(subject), "{message} names {subject}");
    assert!(message.contains(limit), "{message} says {limit}");
    assert!(message.len() < 1_000, "a bounded message: {message}");
}

/// The limits every store enforces alike, before it writes: ids at most
/// `MAX_ID_BYTES` bytes without NUL, JSON at most `MAX_JSON_DEPTH` levels.
/// Each just under (kept, read back) and just over (refused, nothing written).
async fn limits(store: &(impl CallStore + RunStore), p: &str) {
    assert_eq!(MAX_ID_BYTES, 1024);
    assert_eq!(MAX_JSON_DEPTH, 127);
    // Ids of digits, not one repeated byte: PostgreSQL compresses a
    // repetitive id before indexing it, and would keep a longer one.
    let id_of = |bytes: usize| {
        let mut id = format!("{p}-id-");
        let mut n = 0_u64;
        while id.len() < bytes {
            id.push_str(&format!("{n:x}"));
            n = n
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
        }
        id.truncate(bytes);
        id
    };

    // Call ids.
    let longest = id_of(MAX_ID_BYTES);
    store.insert(approval(&longest)).await.unwrap();
    assert_eq!(
        store.get(&longest).await.unwrap().unwrap().call,
        approval(&longest)
    );
    let longer = id_of(MAX_ID_BYTES + 1);
    refused(
        store.insert(approval(&longer)).await,
        "the id of call",
        "at most 1024 bytes",
    );
    let huge = id_of(1 << 20);
    refused(
        store.insert(approval(&huge)).await,
        "(1048576 bytes in all)",
        "1024 bytes",
    );
    let with_nul = format!("{p}-nul\0id");
    refused(
        store.insert(approval(&with_nul)).await,
        "the id of call",
        "NUL",
    );
    // Nothing written; a lookup of an id no store keeps finds nothing.
    for id in [&longer, &huge, &with_nul] {
        assert_eq!(store.get(id).await.unwrap(), None);
        assert_eq!(
            lost(
                store
                    .decide(id, PendingKind::Approval, run("a", LONG, None))
                    .await
                    .unwrap()
            ),
            None
        );
        assert_eq!(store.purged(id).await.unwrap(), None);
    }

    // Tool ids.
    let tool_call = |tool: &str| {
        PendingCall::new(
            format!("{p}-tool-{}", tool.len()),
            tool,
            PendingKind::Approval,
            json!({}),
        )
    };
    store.insert(tool_call(&id_of(MAX_ID_BYTES))).await.unwrap();
    refused(
        store.insert(tool_call(&id_of(MAX_ID_BYTES + 1))).await,
        &format!("the tool of call \"{p}-tool-1025\""),
        "at most 1024 bytes",
    );
    refused(
        store.insert(tool_call("to\0ol")).await,
        "the tool of call",
        "NUL",
    );

    // JSON depth: of each value a call keeps.
    let deep = format!("{p}-deep");
    let mut deepest = PendingCall::new(&deep, "tool", PendingKind::Suspended, nested_arrays(127));
    deepest.payload = Some(nested_arrays(127));
    deepest.head.messages = vec![nested_arrays(126)];
    deepest
        .head
        .request_context
        .insert("k".into(), nested_arrays(126));
    store.insert(deepest.clone()).await.unwrap();
    assert_eq!(store.get(&deep).await.unwrap().unwrap().call, deepest);
    let deeper = format!("{p}-deeper");
    let too_deep = |change: &dyn Fn(&mut PendingCall)| {
        let mut call = PendingCall::new(&deeper, "tool", PendingKind::Suspended, json!({}));
        change(&mut call);
        call
    };
    let subject = |what: &str| format!("the {what} of call \"{deeper}\"");
    for (what, call) in [
        ("arguments", too_deep(&|c| c.input = nested_arrays(128))),
        (
            "payload",
            too_deep(&|c| c.payload = Some(nested_arrays(128))),
        ),
        (
            "messages",
            too_deep(&|c| c.head.messages = vec![nested_arrays(127)]),
        ),
        (
            "request context",
            too_deep(&|c| {
                c.head
                    .request_context
                    .insert("k".into(), nested_arrays(127));
            }),
        ),
    ] {
        refused(store.insert(call).await, &subject(what), "127 levels");
    }
    assert_eq!(store.get(&deeper).await.unwrap(), None, "nothing written");

    // Resume data: refused, and the call stays pending.
    let subject = |what: &str| format!("the {what} of call \"{deep}\"");
    refused(
        store
            .decide(
                &deep,
                PendingKind::Suspended,
                run("a", LONG, Some(nested_arrays(128))),
            )
            .await,
        &subject("resume data"),
        "127 levels",
    );
    assert_eq!(
        store.get(&deep).await.unwrap().unwrap().state,
        CallState::Pending
    );
    let claimed = won(store
        .decide(
            &deep,
            PendingKind::Suspended,
            run("a", LONG, Some(nested_arrays(127))),
        )
        .await
        .unwrap());
    assert_eq!(claimed.resume_data, Some(nested_arrays(127)));
    // A suspension's payload and an outcome: refused, the call still running.
    refused(
        store
            .finish(
                &deep,
                claimed.epoch,
                Settlement::Suspended {
                    payload: nested_arrays(128),
                },
            )
            .await,
        &subject("payload"),
        "127 levels",
    );
    // The outcome's output sits one level inside the recorded outcome.
    let output = |levels| RecordedOutcome::Completed {
        output: nested_arrays(levels),
        model_output: None,
        state: None,
    };
    refused(
        store
            .finish(&deep, claimed.epoch, Settlement::Settled(output(127)))
            .await,
        &subject("outcome"),
        "127 levels",
    );
    assert!(matches!(
        store.get(&deep).await.unwrap().unwrap().state,
        CallState::Running { .. }
    ));
    assert!(
        store
            .finish(&deep, claimed.epoch, Settlement::Settled(output(126)))
            .await
            .unwrap()
    );
    let settled = store.get(&deep).await.unwrap().unwrap();
    assert!(
        matches!(&settled.state, CallState::Settled { outcome, .. } if *outcome == output(126))
    );
    // A decline's outcome, likewise.
    let approval_id = format!("{p}-deep-approval");
    store.insert(approval(&approval_id)).await.unwrap();
    refused(
        store
            .decide(
                &approval_id,
                PendingKind::Approval,
                Transition::Settle(output(127)),
            )
            .await,
        &format!("the outcome of call \"{approval_id}\""),
        "127 levels",
    );
    assert_eq!(
        store.get(&approval_id).await.unwrap().unwrap().state,
        CallState::Pending
    );

    // Run ids, as call ids.
    let run_id = id_of(MAX_ID_BYTES);
    assert_eq!(
        store
            .save_run(&run_id, None, false, json!(1))
            .await
            .unwrap(),
        Some(1)
    );
    assert_eq!(store.load_run(&run_id).await.unwrap().unwrap().revision, 1);
    refused(
        store
            .save_run(&id_of(MAX_ID_BYTES + 1), None, false, json!(1))
            .await,
        "the id of run",
        "at most 1024 bytes",
    );
    refused(
        store.save_run("r\0un", None, false, json!(1)).await,
        "the id of run",
        "NUL",
    );
    assert_eq!(store.load_run("r\0un").await.unwrap(), None);
}

/// The audit log: entries come back in the order they were appended, each
/// with a larger `seq` (appended concurrently too), selected by call, after
/// a place and up to a limit; a purge of settled calls leaves it whole; an
/// entry whose call id or detail a call could not have is refused.
async fn audit_log<S: CallStore + AuditLog>(store: Arc<S>, p: &str) {
    let call = format!("{p}-audited");
    let other = format!("{p}-audited-other");
    let entry = |call_id: &str, kind, action: &str| AuditEntry::new(kind, call_id, "t", action);
    let first = store
        .append_audit(entry(&call, AuditKind::Requested, "approval"))
        .await
        .unwrap();
    store
        .append_audit(entry(&other, AuditKind::Requested, "suspended"))
        .await
        .unwrap();
    let decided = entry(&call, AuditKind::Decided, "decline")
        .principal("alice")
        .digest("sha256:ab")
        .reason("too much")
        .detail(json!({ "shown": true }));
    let second = store.append_audit(decided.clone()).await.unwrap();
    assert!(second > first);

    let mut appending = Vec::new();
    for n in 0..8 {
        let (store, call) = (Arc::clone(&store), call.clone());
        appending.push(tokio::spawn(async move {
            let refused = AuditEntry::new(AuditKind::Refused, call, "t", "approve")
                .reason(format!("attempt {n}"));
            store.append_audit(refused).await.unwrap()
        }));
    }
    let mut seqs = Vec::new();
    for task in appending {
        seqs.push(task.await.unwrap());
    }
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(
        seqs.len(),
        8,
        "every concurrent append has a place of its own"
    );

    // The log's end is its newest entry: nothing comes after it.
    let end = store.audit_end().await.unwrap();
    assert!(end >= seqs[7], "{end} < {}", seqs[7]);
    let newest = store.audit(AuditQuery::all().after(end - 1)).await.unwrap();
    assert_eq!(newest.iter().map(|e| e.seq).collect::<Vec<_>>(), [end]);
    assert!(
        store
            .audit(AuditQuery::all().after(end))
            .await
            .unwrap()
            .is_empty()
    );

    store
        .purge_settled(Retention::new(Duration::ZERO, 0))
        .await
        .unwrap();
    let log = store.audit(AuditQuery::all().call(&call)).await.unwrap();
    assert_eq!(log.len(), 10, "{log:?}");
    assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!((log[0].seq, log[0].kind), (first, AuditKind::Requested));
    let read = &log[1];
    assert_eq!(read.seq, second);
    assert_eq!(
        (
            read.principal.as_deref(),
            read.digest.as_deref(),
            read.reason.as_deref()
        ),
        (Some("alice"), Some("sha256:ab"), Some("too much"))
    );
    assert_eq!(
        (read.detail.as_ref(), read.at_ms),
        (Some(&json!({ "shown": true })), decided.at_ms)
    );
    let after = store
        .audit(AuditQuery::all().call(&call).after(second).limit(3))
        .await
        .unwrap();
    assert_eq!(after.len(), 3);
    assert!(
        after
            .iter()
            .all(|e| e.seq > second && e.kind == AuditKind::Refused)
    );
    let others = store.audit(AuditQuery::all().call(&other)).await.unwrap();
    assert_eq!(others.len(), 1);

    let long_id = "x".repeat(MAX_ID_BYTES + 1);
    let refused = store
        .append_audit(entry(&long_id, AuditKind::Refused, "approve"))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Refused { .. })),
        "{refused:?}"
    );
    let mut deep = json!(1);
    for _ in 0..MAX_JSON_DEPTH + 1 {
        deep = json!([deep]);
    }
    let refused = store
        .append_audit(entry(&call, AuditKind::Decided, "resume").detail(deep))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Refused { .. })),
        "{refused:?}"
    );
    assert_eq!(
        store
            .audit(AuditQuery::all().call(&call))
            .await
            .unwrap()
            .len(),
        10
    );
}

/// A call's requester, expiry, required approvals and time limit read back; an approval with edits: the
/// claim replaces the stored input in the same step (what a recovery
/// runs), once; a call pending for another kind is
/// not claimed so, and an input the stores refuse is refused.
async fn edited_claims(store: &(impl CallStore + RunStore), p: &str) {
    let id = format!("{p}-edited");
    let mut call = approval(&id);
    call.head.requester = Some("alice".into());
    call.expires_at_ms = Some(4_102_444_800_000);
    call.asked_at_ms = Some(4_102_444_000_000);
    call.approvals = Some(RequiredApprovals::new(2).from_group("finance"));
    call.head.timeout_ms = Some(90_000);
    store.insert(call.clone()).await.unwrap();
    assert_eq!(
        store.get(&id).await.unwrap().unwrap().call,
        call,
        "who asked, when, when it expires, the approvals it needs and its own time limit read back"
    );
    let edit = |input: serde_json::Value| Transition::RunEdited {
        owner: "a".into(),
        lease: Duration::from_secs(30),
        input,
    };
    let mut deep = json!(1);
    for _ in 0..MAX_JSON_DEPTH + 1 {
        deep = json!([deep]);
    }
    let refused = store.decide(&id, PendingKind::Approval, edit(deep)).await;
    assert!(
        matches!(refused, Err(StoreError::Refused { .. })),
        "{refused:?}"
    );
    let wrong_kind = store
        .decide(&id, PendingKind::Suspended, edit(json!({ "amount": 1 })))
        .await
        .unwrap();
    assert!(matches!(wrong_kind, Decided::Lost(Some(_))));
    let Decided::Won(claimed) = store
        .decide(&id, PendingKind::Approval, edit(json!({ "amount": 1 })))
        .await
        .unwrap()
    else {
        panic!("the edit claims the call")
    };
    assert!(matches!(claimed.state, CallState::Running { .. }));
    assert_eq!(claimed.call.input, json!({ "amount": 1 }));
    let read = store.get(&id).await.unwrap().unwrap();
    assert_eq!(
        (read.call.input, read.resume_data),
        (json!({ "amount": 1 }), None)
    );
    let again = store
        .decide(&id, PendingKind::Approval, edit(json!({ "amount": 2 })))
        .await
        .unwrap();
    assert!(matches!(again, Decided::Lost(Some(_))), "once");
}

/// Pages of pending calls: by id (bytes order), of the kinds and tool
/// asked for, after a cursor, at most a limit; running, settled and other
/// kinds' calls are not listed.
async fn pages(store: &(impl CallStore + RunStore), p: &str) {
    for n in 0..7 {
        let (kind, tool) = match n % 3 {
            0 => (PendingKind::Approval, "pay"),
            1 => (PendingKind::Suspended, "ask"),
            _ => (PendingKind::Task, "pay"),
        };
        let mut call = PendingCall::new(format!("{p}-page-{n}"), tool, kind, json!({ "n": n }));
        // Even calls an agent made; the first two carol asked for; all
        // but the last say when they were asked for.
        call.head.agent = (n % 2 == 0).then(|| {
            tool_core::AgentContext::new("helper", "run-even")
                .with_thread(format!("th-{}", n % 3))
                .with_resource(format!("res-{n}"))
        });
        call.head.requester = (n <= 1).then(|| "carol".to_owned());
        call.asked_at_ms = (n != 6).then_some(1_000 * (n + 1));
        store.insert(call).await.unwrap();
    }
    // A claimed approval is no longer pending.
    let claimed = format!("{p}-page-3");
    won(store
        .decide(&claimed, PendingKind::Approval, run("a", LONG, None))
        .await
        .unwrap());
    let ids = |page: Vec<StoredCall>| -> Vec<String> {
        page.into_iter()
            .map(|s| s.call.head.call_id.replace(&format!("{p}-page-"), ""))
            .collect()
    };
    let people = PendingQuery::waiting_for_people();
    assert_eq!(
        ids(store.list_page(people.clone()).await.unwrap()),
        ["0", "1", "4", "6"]
    );
    assert_eq!(
        ids(store.list_page(people.clone().limit(2)).await.unwrap()),
        ["0", "1"]
    );
    let after = people.clone().after(format!("{p}-page-1")).limit(2);
    assert_eq!(ids(store.list_page(after).await.unwrap()), ["4", "6"]);
    let pay = people.clone().tool("pay");
    assert_eq!(ids(store.list_page(pay).await.unwrap()), ["0", "6"]);
    let asked = people.clone().kind(PendingKind::Suspended);
    assert_eq!(ids(store.list_page(asked).await.unwrap()), ["1", "4"]);
    // Who made them, who asked, and when: the listed calls are 0, 1, 4, 6.
    for (query, expected) in [
        (people.clone().run("run-even"), vec!["0", "4", "6"]),
        (people.clone().run("run-odd"), vec![]),
        (people.clone().thread("th-0"), vec!["0", "6"]),
        (people.clone().resource("res-4"), vec!["4"]),
        (people.clone().requester("carol"), vec!["0", "1"]),
        // A search over tool id, requester and call id, ignoring case.
        (people.clone().text("CAR"), vec!["0", "1"]),
        (people.clone().text("ask"), vec!["1", "4"]),
        (people.clone().text("page-6"), vec!["6"]),
        (people.clone().text("nobody"), vec![]),
        (people.clone().asked_before_ms(2_500), vec!["0", "1"]),
        (people.clone().asked_after_ms(1_500), vec!["1", "4"]),
        (
            people.clone().asked_after_ms(1_500).asked_before_ms(4_500),
            vec!["1"],
        ),
        (
            people.clone().run("run-even").asked_after_ms(0).limit(1),
            vec!["0"],
        ),
        (
            people.clone().run("run-even").after(format!("{p}-page-0")),
            vec!["4", "6"],
        ),
    ] {
        let described = format!("{query:?}");
        assert_eq!(
            ids(store.list_page(query).await.unwrap()),
            expected,
            "{described}"
        );
    }
}

/// A decision that expects a fencing token applies to the call only while
/// it has that token: a suspension resumed and suspended again in between
/// (the same kind, a new version) is not decided by it, on any store.
async fn versioned_decisions(store: &(impl CallStore + RunStore), p: &str) {
    let id = format!("{p}-versioned");
    let call = PendingCall::new(&id, "t", PendingKind::Suspended, json!({}));
    store.insert(call).await.unwrap();
    let first = store.get(&id).await.unwrap().unwrap().epoch;
    let suspended = Expected::from(PendingKind::Suspended);
    let claimed = won(store
        .decide(&id, suspended.at(first), run("a", LONG, Some(json!(1))))
        .await
        .unwrap());
    let finished = store
        .finish(
            &id,
            claimed.epoch,
            Settlement::Suspended {
                payload: json!("again"),
            },
        )
        .await
        .unwrap();
    assert!(finished, "the claim suspends the call again");
    let stale = store
        .decide(&id, suspended.at(first), Transition::Settle(completed(1)))
        .await
        .unwrap();
    let found = lost(stale).expect("the call is there");
    assert!(found.state.is_pending() && found.epoch == claimed.epoch);
    assert_eq!(
        store.get(&id).await.unwrap().unwrap().call.payload,
        Some(json!("again")),
        "the stale decision changed nothing"
    );
    won(store
        .decide(
            &id,
            suspended.at(claimed.epoch),
            Transition::Settle(completed(2)),
        )
        .await
        .unwrap());
}

/// A revision (an edit of a call waiting for several approvals) replaces
/// the input and the approvals it needs and keeps the call pending as a new
/// version: a decision on the earlier version loses and changes nothing; one
/// on the new version wins; a revision of the earlier version loses too.
async fn revisions(store: &(impl CallStore + RunStore), p: &str) {
    let id = format!("{p}-revised");
    let mut call = approval(&id);
    call.approvals = Some(RequiredApprovals::new(2));
    store.insert(call).await.unwrap();
    let first = store.get(&id).await.unwrap().unwrap().epoch;
    let waiting = Expected::from(PendingKind::Approval);
    let revise = |amount: u32| Transition::Revise {
        input: json!({ "amount": amount }),
        approvals: Some(RequiredApprovals::new(2).from_group("finance")),
    };
    let revised = won(store
        .decide(&id, waiting.at(first), revise(8))
        .await
        .unwrap());
    assert!(revised.state.is_pending(), "{revised:?}");
    assert_ne!(revised.epoch, first, "a new version");
    assert_eq!(revised.call.input, json!({ "amount": 8 }));
    assert_eq!(
        revised.call.approvals,
        Some(RequiredApprovals::new(2).from_group("finance"))
    );
    assert_eq!(store.get(&id).await.unwrap().unwrap(), revised, "as stored");
    let stale = store
        .decide(&id, waiting.at(first), revise(9))
        .await
        .unwrap();
    assert_eq!(
        lost(stale).expect("there").call.input,
        json!({ "amount": 8 })
    );
    let stale = store
        .decide(&id, waiting.at(first), run("a", LONG, None))
        .await
        .unwrap();
    assert!(lost(stale).expect("there").state.is_pending());
    let claimed = won(store
        .decide(&id, waiting.at(revised.epoch), run("a", LONG, None))
        .await
        .unwrap());
    assert_eq!(
        claimed.call.input,
        json!({ "amount": 8 }),
        "the new version runs"
    );
}

/// Standing rules: an id kept once; those in force read by tool and time,
/// in the order made, as stored; a revocation wins once (of concurrent
/// ones exactly one), and a revoked rule is read as revoked but is no
/// longer in force; ids and values refused as a call's are.
async fn standing_rules<S: RuleStore>(store: Arc<S>, p: &str) {
    let base_ms = 1_700_000_000_000_u64;
    let at = |ms: u64| std::time::UNIX_EPOCH + Duration::from_millis(ms);
    let rule = |id: &str, tool: &str, until_ms: u64| {
        let mut rule = StandingRule::new(format!("{p}-{id}"), tool, at(until_ms))
            .when_equals("/customer", json!("acme"))
            .when("amount_at_most", json!({ "cap": 200 }))
            .for_requester("agent-7");
        rule.author = "dana".into();
        rule.author_groups = vec!["finance-leads".into()];
        rule.created_at_ms = base_ms;
        rule
    };
    let first = rule("r1", "refund", base_ms + 1_000);
    assert!(store.add_rule(first.clone()).await.unwrap());
    let mut same_id = rule("r1", "other", base_ms + 9_000);
    same_id.author = "mallory".into();
    assert!(
        !store.add_rule(same_id).await.unwrap(),
        "an id is kept once"
    );
    assert!(
        store
            .add_rule(rule("r2", "refund", base_ms + 5_000))
            .await
            .unwrap()
    );
    assert!(
        store
            .add_rule(rule("r3", "lookup", base_ms + 5_000))
            .await
            .unwrap()
    );
    let ids = |rules: Vec<StandingRule>| -> Vec<String> {
        rules.into_iter().map(|rule| rule.rule_id).collect()
    };
    let named =
        |ids: &[&str]| -> Vec<String> { ids.iter().map(|id| format!("{p}-{id}")).collect() };
    let refunds = store.rules_in_force(Some("refund"), base_ms).await.unwrap();
    assert_eq!(refunds[0], first, "read back as stored");
    assert_eq!(ids(refunds), named(&["r1", "r2"]), "in the order made");
    assert_eq!(
        ids(store.rules_in_force(None, base_ms).await.unwrap()),
        named(&["r1", "r2", "r3"])
    );
    assert_eq!(
        ids(store
            .rules_in_force(Some("refund"), base_ms + 1_000)
            .await
            .unwrap()),
        named(&["r2"]),
        "expired at its until, excluded"
    );
    assert!(
        store
            .rules_in_force(Some("none"), base_ms)
            .await
            .unwrap()
            .is_empty()
    );

    // Twenty concurrent revocations of one rule: exactly one wins.
    let r2 = format!("{p}-r2");
    let revocations = (0..20).map(|i| {
        let (store, r2) = (store.clone(), r2.clone());
        tokio::spawn(async move {
            store
                .revoke_rule(&r2, Revocation::new(format!("lead-{i}"), base_ms + 10))
                .await
                .unwrap()
        })
    });
    let won: Vec<StandingRule> = futures_util::future::join_all(revocations)
        .await
        .into_iter()
        .filter_map(|joined| joined.unwrap())
        .collect();
    assert_eq!(won.len(), 1, "one revocation wins: {won:?}");
    let revoked = store.rule(&r2).await.unwrap().expect("kept, revoked");
    assert_eq!(revoked.revoked, won[0].revoked);
    assert_eq!(revoked.revoked.as_ref().unwrap().at_ms, base_ms + 10);
    assert_eq!(
        ids(store.rules_in_force(Some("refund"), base_ms).await.unwrap()),
        named(&["r1"])
    );
    assert!(
        !store
            .add_rule(rule("r2", "refund", base_ms + 5_000))
            .await
            .unwrap(),
        "never reused"
    );
    assert!(
        store
            .revoke_rule(&format!("{p}-none"), Revocation::new("x", 0))
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.rule(&format!("{p}-none")).await.unwrap().is_none());

    // Refused as a call's values are, before anything is written.
    let long = StandingRule::new("r".repeat(MAX_ID_BYTES + 1), "refund", at(base_ms + 1_000));
    assert!(matches!(
        store.add_rule(long).await,
        Err(StoreError::Refused { .. })
    ));
    let deep = (1..=MAX_JSON_DEPTH).fold(json!([]), |inner, _| json!([inner]));
    let deep = StandingRule::new(format!("{p}-deep"), "refund", at(base_ms + 1_000))
        .when_equals("/x", deep);
    assert!(matches!(
        store.add_rule(deep).await,
        Err(StoreError::Refused { .. })
    ));
    assert!(store.rule(&format!("{p}-deep")).await.unwrap().is_none());
}

/// A page whose filter matches few calls spans as many as it must (more
/// than a store reads at a time), in call-id order, skipping calls no
/// longer pending, and stops at its limit.
async fn sparse_pages(store: &impl CallStore, p: &str) {
    for n in 0..450 {
        let mut call = PendingCall::new(
            format!("{p}-sparse-{n:03}"),
            "pay",
            PendingKind::Approval,
            json!({}),
        );
        if n % 100 == 7 {
            call.head.requester = Some("carol".into());
        }
        store.insert(call).await.unwrap();
    }
    // One of carol's calls settles: no longer a page's.
    let settled = format!("{p}-sparse-207");
    won(store
        .decide(
            &settled,
            Expected::from(PendingKind::Approval),
            Transition::Settle(completed(1)),
        )
        .await
        .unwrap());
    let carol = PendingQuery::waiting_for_people().requester("carol");
    let ids = |page: Vec<StoredCall>| -> Vec<String> {
        page.into_iter()
            .map(|stored| stored.call.head.call_id)
            .collect()
    };
    let all = ids(store.list_page(carol.clone().limit(10)).await.unwrap());
    let expected: Vec<String> = [7, 107, 307, 407]
        .iter()
        .map(|n| format!("{p}-sparse-{n:03}"))
        .collect();
    assert_eq!(all, expected);
    let first = ids(store.list_page(carol.clone().limit(2)).await.unwrap());
    assert_eq!(first, expected[..2]);
    let next = ids(store
        .list_page(carol.after(&first[1]).limit(2))
        .await
        .unwrap());
    assert_eq!(next, expected[2..]);
    let everyone = store
        .list_page(PendingQuery::waiting_for_people().limit(300))
        .await
        .unwrap();
    assert_eq!(everyone.len(), 300, "a full page across batches");
}

/// The audit log's retention: entries past the age go, then the oldest
/// beyond the size; a pending call's entries stay whatever their age;
/// `seq`s go on growing after a purge.
async fn audit_retention(store: &(impl CallStore + AuditLog), p: &str) {
    let waiting = format!("{p}-audit-waits");
    let settled = format!("{p}-audit-settled");
    store
        .insert(PendingCall::new(
            &waiting,
            "t",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    store
        .insert(PendingCall::new(
            &settled,
            "t",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    let declined = RecordedOutcome::Declined { reason: None };
    store
        .decide(
            &settled,
            PendingKind::Approval,
            Transition::Settle(declined),
        )
        .await
        .unwrap();
    let hour_ago = |entry: AuditEntry| {
        let mut entry = entry;
        entry.at_ms -= 2 * 3_600_000;
        entry
    };
    let note = |call_id: &str, n: u32| {
        AuditEntry::new(AuditKind::Noted, call_id, "t", format!("note {n}"))
    };
    // Two old entries of each call, then four recent ones of the settled.
    for n in 0..2 {
        store
            .append_audit(hour_ago(note(&waiting, n)))
            .await
            .unwrap();
        store
            .append_audit(hour_ago(note(&settled, n)))
            .await
            .unwrap();
    }
    for n in 2..6 {
        store.append_audit(note(&settled, n)).await.unwrap();
    }
    let actions = |log: Vec<AuditEntry>| -> Vec<String> {
        log.into_iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e.call_id.replace(&format!("{p}-audit-"), ""),
                    e.action
                )
            })
            .collect()
    };
    let hour = Duration::from_secs(3600);
    // The age: the settled call's old entries go, the waiting call's stay.
    assert_eq!(
        store
            .purge_audit(AuditRetention::new(hour, 100))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        actions(store.audit(AuditQuery::all()).await.unwrap()),
        [
            "waits note 0",
            "waits note 1",
            "settled note 2",
            "settled note 3",
            "settled note 4",
            "settled note 5"
        ]
    );
    // The size: at most 3, the oldest purgeable first.
    assert_eq!(
        store
            .purge_audit(AuditRetention::new(hour, 3))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        actions(store.audit(AuditQuery::all()).await.unwrap()),
        ["waits note 0", "waits note 1", "settled note 5"]
    );
    // Nothing more to purge; a new entry comes after every earlier one.
    let end = store.audit_end().await.unwrap();
    assert_eq!(
        store
            .purge_audit(AuditRetention::new(hour, 3))
            .await
            .unwrap(),
        0
    );
    let next = store.append_audit(note(&settled, 6)).await.unwrap();
    assert!(next > end, "{next} after {end}");
    // Everything of settled calls may go; the waiting call's never.
    assert_eq!(
        store
            .purge_audit(AuditRetention::new(Duration::ZERO, 0))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        actions(store.audit(AuditQuery::all()).await.unwrap()),
        ["waits note 0", "waits note 1"]
    );
}

/// Pages in an order by time: by when the calls were asked for (the
/// longest waiting first) and by expiry (the soonest first), ties and
/// calls without the time (last) by call id; each page goes on after the
/// last one's position.
async fn ordered_pages(store: &impl CallStore, p: &str) {
    let calls = [
        ("a", Some(3_000), None),
        ("b", Some(1_000), Some(9_000)),
        ("c", None, Some(5_000)),
        ("d", Some(1_000), Some(5_000)),
        ("e", Some(2_000), None),
    ];
    for (id, asked, expires) in calls {
        let mut call = PendingCall::new(
            format!("{p}-ord-{id}"),
            "t",
            PendingKind::Approval,
            json!({}),
        );
        call.asked_at_ms = asked;
        call.expires_at_ms = expires;
        store.insert(call).await.unwrap();
    }
    let ids = |page: &[StoredCall]| -> Vec<String> {
        page.iter()
            .map(|s| s.call.head.call_id.replace(&format!("{p}-ord-"), ""))
            .collect()
    };
    for (order, expected) in [
        (PendingOrder::Asked, ["b", "d", "e", "a", "c"]),
        (PendingOrder::Expires, ["c", "d", "b", "a", "e"]),
    ] {
        let query = PendingQuery::waiting_for_people().order(order);
        let all = store.list_page(query.clone()).await.unwrap();
        assert_eq!(ids(&all), expected, "{order:?}");
        // Pages of two, each from the last one's position.
        let mut paged = Vec::new();
        let mut next = query.clone().limit(2);
        loop {
            let page = store.list_page(next.clone()).await.unwrap();
            let Some(last) = page.last() else { break };
            let key = order.key(&last.call).unwrap();
            next = query
                .clone()
                .limit(2)
                .after_position(key, &last.call.head.call_id);
            paged.extend(ids(&page));
        }
        assert_eq!(paged, expected, "{order:?} in pages of two");
    }
    // A filter applies in the order too.
    let late = PendingQuery::waiting_for_people()
        .order(PendingOrder::Asked)
        .asked_after_ms(1_500);
    assert_eq!(ids(&store.list_page(late).await.unwrap()), ["e", "a"]);
}

/// A notification of `kind` about `call_id`, with `n` in its data.
fn notification(kind: NotificationKind, call_id: &str, n: i64) -> Notification {
    Notification::new(kind, call_id, "t", json!({ "n": n }))
}

/// The data's `n` of every entry, in order.
fn numbers(entries: &[tool_runtime::store::OutboxEntry]) -> Vec<i64> {
    entries
        .iter()
        .map(|entry| entry.notification.data["n"].as_i64().unwrap())
        .collect()
}

async fn outbox<S: CallStore + AuditLog + Outbox>(store: Arc<S>, p: &str) {
    let (a, b) = (format!("{p}-outbox-a"), format!("{p}-outbox-b"));
    let asked = notification(NotificationKind::ApprovalRequested, &a, 1);
    let call_a = PendingCall::new(&a, "t", PendingKind::Approval, json!({}));
    store
        .insert_notifying(call_a.clone(), vec![asked.clone()])
        .await
        .unwrap();
    // A write that does not apply stores none of its notifications.
    let duplicate = store
        .insert_notifying(
            call_a,
            vec![notification(NotificationKind::ApprovalRequested, &a, 99)],
        )
        .await;
    assert!(matches!(duplicate, Err(StoreError::Duplicate { .. })));
    let lost_decision = store
        .decide_notifying(
            &a,
            PendingKind::Suspended,
            Transition::Settle(RecordedOutcome::Declined { reason: None }),
            vec![notification(NotificationKind::Decided, &a, 99)],
        )
        .await
        .unwrap();
    assert!(matches!(lost_decision, Decided::Lost(Some(_))));
    // A value no store keeps refuses the whole write.
    let nested = (1..MAX_JSON_DEPTH + 2).fold(json!([]), |inner, _| json!([inner]));
    let deep = Notification::new(NotificationKind::Suspended, &b, "t", nested);
    let refused = store
        .insert_notifying(
            PendingCall::new(&b, "t", PendingKind::Suspended, json!({})),
            vec![deep],
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::Refused { .. })),
        "{refused:?}"
    );
    assert!(
        store.get(&b).await.unwrap().is_none(),
        "the call is not stored without its notification"
    );

    // Those of writes that apply are, in order, as given.
    let claimed = won(store
        .decide_notifying(
            &a,
            PendingKind::Approval,
            run("x", LONG, None),
            vec![notification(NotificationKind::Decided, &a, 2)],
        )
        .await
        .unwrap());
    let stale = store
        .finish_notifying(
            &a,
            claimed.epoch + 1,
            Settlement::Settled(completed(1)),
            vec![notification(NotificationKind::TaskCompleted, &a, 99)],
        )
        .await
        .unwrap();
    assert!(!stale);
    assert!(
        store
            .finish_notifying(
                &a,
                claimed.epoch,
                Settlement::Suspended { payload: json!({}) },
                vec![notification(NotificationKind::Suspended, &a, 3)],
            )
            .await
            .unwrap()
    );
    store
        .insert_notifying(
            PendingCall::new(&b, "t", PendingKind::Approval, json!({})),
            vec![notification(NotificationKind::ApprovalRequested, &b, 4)],
        )
        .await
        .unwrap();
    let grant = AuditEntry::new(AuditKind::Granted, &b, "t", "approve").principal("ann");
    store
        .append_audit_notifying(
            grant,
            vec![notification(NotificationKind::ApprovalGranted, &b, 5)],
        )
        .await
        .unwrap();
    let all = store.outbox(OutboxQuery::all()).await.unwrap();
    assert_eq!(numbers(&all), [1, 2, 3, 4, 5]);
    assert_eq!(all[0].notification.id, asked.id, "the id given is kept");
    assert_eq!(
        all[0].notification.kind,
        NotificationKind::ApprovalRequested
    );
    assert!(
        all.windows(2)
            .all(|w| w[0].notification.seq < w[1].notification.seq)
    );
    assert!(
        all.iter()
            .all(|e| e.state == DeliveryState::Waiting && e.attempts == 0)
    );
    assert_eq!(
        numbers(&store.outbox(OutboxQuery::all().call(&b)).await.unwrap()),
        [4, 5]
    );

    // A claim takes the first unsettled notification of each call only.
    let first = store.claim_notifications("d1", LONG, 10).await.unwrap();
    assert_eq!(numbers(&first), [1, 4]);
    assert!(first.iter().all(|e| e.attempts == 1
        && matches!(&e.state, DeliveryState::Sending { owner, .. } if owner == "d1")));
    assert!(
        store
            .claim_notifications("d2", LONG, 10)
            .await
            .unwrap()
            .is_empty(),
        "held by d1, and in order"
    );
    let (one, four) = (&first[0], &first[1]);
    let delivered = |to: &str| Delivery::Delivered {
        delivered_to: vec![to.to_owned()],
    };
    assert!(
        !store
            .settle_notification(one.notification.seq, one.epoch + 1, delivered("w"))
            .await
            .unwrap(),
        "another token"
    );
    assert!(
        store
            .settle_notification(one.notification.seq, one.epoch, delivered("w"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .settle_notification(one.notification.seq, one.epoch, delivered("w"))
            .await
            .unwrap(),
        "once"
    );
    // Tried again later: not due before then, and its call's later ones wait.
    let later = Delivery::Retry {
        next_at_ms: 4_000_000_000_000,
        delivered_to: vec!["w".into()],
        error: "w: 503".into(),
    };
    assert!(
        store
            .settle_notification(four.notification.seq, four.epoch, later)
            .await
            .unwrap()
    );
    let next = store.claim_notifications("d1", LONG, 10).await.unwrap();
    assert_eq!(numbers(&next), [2], "4 is not due, so 5 waits for it");
    let retried = &store.outbox(OutboxQuery::all().call(&b)).await.unwrap()[0];
    assert_eq!(
        (retried.delivered_to.clone(), retried.last_error.as_deref()),
        (vec!["w".to_owned()], Some("w: 503"))
    );

    // A claim whose lease ran out is taken over, and only the new one settles.
    let two = &next[0];
    let lapsed = Duration::ZERO;
    assert!(
        store
            .settle_notification(
                two.notification.seq,
                two.epoch,
                Delivery::Retry {
                    next_at_ms: 0,
                    delivered_to: Vec::new(),
                    error: "timeout".into()
                }
            )
            .await
            .unwrap()
    );
    let short = store.claim_notifications("d1", lapsed, 10).await.unwrap();
    assert_eq!(numbers(&short), [2]);
    tokio::time::sleep(Duration::from_millis(5)).await;
    let taken = store.claim_notifications("d2", LONG, 10).await.unwrap();
    assert_eq!(numbers(&taken), [2]);
    assert!(taken[0].epoch > short[0].epoch && taken[0].attempts == 3);
    let dead = Delivery::Dead {
        delivered_to: Vec::new(),
        error: "w: 410 Gone".into(),
    };
    assert!(
        !store
            .settle_notification(short[0].notification.seq, short[0].epoch, dead.clone())
            .await
            .unwrap()
    );
    assert!(
        store
            .settle_notification(taken[0].notification.seq, taken[0].epoch, dead)
            .await
            .unwrap()
    );

    // Dead: visible, and it does not hold its call's later ones back.
    let dead_letters = store
        .outbox(OutboxQuery::all().state("dead"))
        .await
        .unwrap();
    assert_eq!(numbers(&dead_letters), [2]);
    assert_eq!(dead_letters[0].last_error.as_deref(), Some("w: 410 Gone"));
    assert!(matches!(dead_letters[0].state, DeliveryState::Dead { at_ms } if at_ms > 0));
    let three = store.claim_notifications("d1", LONG, 10).await.unwrap();
    assert_eq!(numbers(&three), [3]);
    assert!(
        store
            .settle_notification(three[0].notification.seq, three[0].epoch, delivered("w"))
            .await
            .unwrap()
    );
    // Sent again: waiting, from the start of its attempts.
    assert!(
        store
            .redeliver(dead_letters[0].notification.seq)
            .await
            .unwrap()
    );
    assert!(
        !store
            .redeliver(dead_letters[0].notification.seq)
            .await
            .unwrap(),
        "no longer dead"
    );
    let again = store.claim_notifications("d1", LONG, 10).await.unwrap();
    assert_eq!((numbers(&again), again[0].attempts), (vec![2], 1));
    assert!(
        store
            .settle_notification(again[0].notification.seq, again[0].epoch, delivered("w"))
            .await
            .unwrap()
    );

    // Concurrent claimers get different notifications, every one of them.
    let ids: Vec<String> = (0..24).map(|n| format!("{p}-outbox-many-{n}")).collect();
    for (n, id) in ids.iter().enumerate() {
        let many = PendingCall::new(id, "t", PendingKind::Approval, json!({}));
        let n = i64::try_from(n).unwrap() + 100;
        store
            .insert_notifying(
                many,
                vec![notification(NotificationKind::ApprovalRequested, id, n)],
            )
            .await
            .unwrap();
    }
    let claimers = (0..4).map(|c| {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim_notifications(&format!("c{c}"), LONG, 3)
                    .await
                    .unwrap();
                if got.is_empty() {
                    break mine;
                }
                mine.extend(numbers(&got));
            }
        })
    });
    let mut claimed_all = Vec::new();
    for claimer in claimers {
        claimed_all.extend(claimer.await.unwrap());
    }
    claimed_all.sort_unstable();
    assert_eq!(claimed_all, (100..124).collect::<Vec<i64>>(), "each once");

    // Purged: settled ones beyond the bound, never one in delivery.
    let kept = store.outbox(OutboxQuery::all()).await.unwrap().len();
    let purged = store.purge_outbox(Retention::new(LONG, 1)).await.unwrap();
    let left = store.outbox(OutboxQuery::all()).await.unwrap();
    assert_eq!(purged, kept - left.len());
    assert_eq!(
        left.iter().filter(|e| e.state.is_settled()).count(),
        1,
        "the newest settled"
    );
    assert_eq!(
        left.iter().filter(|e| !e.state.is_settled()).count(),
        24 + 2,
        "the claimed many, 4 and 5 ({p})"
    );
}
