//! Many people deciding one inbox at once: every item decided by five
//! deciders with different decisions (approve, decline with one of two
//! reasons, respond), through five runtimes sharing one store. Run against
//! each store (memory, SQLite, PostgreSQL).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_core::{Tool, ToolError};
use tool_runtime::store::{AuditKind, AuditQuery, IntoStore};
use tool_runtime::{
    CallOutcome, CallState, Decider, Decision, Principal, Runtime, RuntimeError, ToolCall,
};

/// How many times the tool ran for each call id.
type Runs = Arc<Mutex<HashMap<String, usize>>>;

/// A decider's answer: who, and what the runtime told them.
type Answer = (&'static str, Result<CallOutcome, RuntimeError>);

/// The five decisions each item gets at once, with who takes them.
fn decisions() -> [(&'static str, Decision); 5] {
    [
        ("ann", Decision::Approve),
        ("bob", Decision::Decline(Some("no".into()))),
        ("cem", Decision::Decline(Some("later".into()))),
        ("dee", Decision::Respond(json!({ "paid": "by hand" }))),
        ("eve", Decision::Approve),
    ]
}

/// `items` calls, each decided at once by five deciders on five runtimes
/// (one per store of `stores`): exactly one decision per item takes
/// effect; every other decider is told it lost, with the recorded outcome
/// (or that the winner is running the call); the audit log has one
/// decision per item, by the winner; the tool ran once exactly for the
/// items an approval won.
pub async fn five_deciders_per_item<S: IntoStore>(prefix: &str, stores: Vec<S>, items: usize) {
    assert_eq!(stores.len(), 5);
    let runs: Runs = Arc::default();
    let runtimes = runtimes_of(stores, &runs, 1);
    let ids = asked(&runtimes[0], prefix, items).await;

    let plan = ids.iter().flat_map(|id| {
        decisions()
            .into_iter()
            .enumerate()
            .map(move |(n, (principal, decision))| (id.clone(), n, principal, decision))
    });
    let answers = decide_at_once(&runtimes, plan.collect()).await;

    let log = runtimes[0]
        .inbox()
        .audit(AuditQuery::all().limit(100_000))
        .await
        .unwrap();
    let runs = runs.lock().unwrap().clone();
    for id in &ids {
        let answers = &answers[id];
        let winners: Vec<_> = answers.iter().filter(|(_, a)| a.is_ok()).collect();
        assert_eq!(winners.len(), 1, "{id}: {answers:?}");
        let (winner, won) = (winners[0].0, winners[0].1.as_ref().unwrap());
        let stored = runtimes[0].inbox().stored(id).await.unwrap().unwrap();
        let CallState::Settled { outcome, .. } = stored.state else {
            panic!("{id} is not settled: {stored:?}")
        };
        let recorded = CallOutcome::from(outcome);
        assert_eq!(
            won, &recorded,
            "{id}: the winner's outcome is the one recorded"
        );
        for (principal, answer) in answers.iter().filter(|(p, _)| *p != winner) {
            match answer {
                Err(RuntimeError::AlreadyDecided { outcome, .. }) => {
                    assert_eq!(
                        **outcome, recorded,
                        "{id}: {principal} is told what was recorded"
                    )
                }
                // The winner approved and was running the call then.
                Err(RuntimeError::Running { .. }) => {}
                other => panic!("{id}: {principal} got {other:?}"),
            }
        }
        let decided: Vec<_> = log
            .iter()
            .filter(|e| &e.call_id == id && e.kind == AuditKind::Decided)
            .collect();
        assert_eq!(decided.len(), 1, "{id}: one decision in the log");
        assert_eq!(decided[0].principal.as_deref(), Some(winner));
        let approved = matches!(winner, "ann" | "eve");
        assert_eq!(
            runs.get(id).copied().unwrap_or(0),
            usize::from(approved),
            "{id} ran as decided"
        );
    }
}

/// Takes every decision of `plan` (a call, the runtime to decide on, who,
/// what) at once, each with the call's digest as first read; each
/// decider's answer, by call id.
async fn decide_at_once(
    runtimes: &[Runtime],
    plan: Vec<(String, usize, &'static str, Decision)>,
) -> HashMap<String, Vec<Answer>> {
    let mut digests = HashMap::new();
    let mut deciding = Vec::new();
    for (id, on, principal, decision) in plan {
        if !digests.contains_key(&id) {
            let stored = runtimes[0].inbox().stored(&id).await.unwrap().unwrap();
            digests.insert(id.clone(), stored.digest());
        }
        let (runtime, decider) = (
            runtimes[on].clone(),
            Decider::new(Principal::new(principal), digests[&id].clone()),
        );
        deciding.push(tokio::spawn(async move {
            let answer = runtime.decide_as(&id, decision, decider).await;
            (id, principal, answer)
        }));
    }
    let mut answers: HashMap<String, Vec<Answer>> = HashMap::new();
    for task in deciding {
        let (id, principal, answer) = task.await.unwrap();
        answers.entry(id).or_default().push((principal, answer));
    }
    answers
}

/// One runtime per store, with a tool "pay" needing approval (of
/// `approvals` principals) that counts its runs in `runs`.
fn runtimes_of<S: IntoStore>(stores: Vec<S>, runs: &Runs, approvals: u32) -> Vec<Runtime> {
    stores
        .into_iter()
        .map(|store| {
            let runs = Arc::clone(runs);
            let pay = Tool::builder("pay")
                .description("Pays an invoice")
                .require_approval(true)
                .execute(move |_input: Value, ctx| {
                    *runs
                        .lock()
                        .unwrap()
                        .entry(ctx.call_id().to_owned())
                        .or_default() += 1;
                    async move { Ok::<_, ToolError>(json!({ "paid": "by the tool" })) }
                })
                .build()
                .unwrap();
            Runtime::builder()
                .tool(pay)
                .store(store)
                .approvals_required(approvals)
                .build()
                .unwrap()
        })
        .collect()
}

/// `items` calls of "pay", each waiting for approval: their ids.
async fn asked(runtime: &Runtime, prefix: &str, items: usize) -> Vec<String> {
    let ids: Vec<String> = (0..items).map(|n| format!("{prefix}-pay-{n}")).collect();
    for id in &ids {
        let outcome = runtime
            .call(ToolCall::new(id, "pay", json!({ "invoice": id })))
            .await;
        assert!(
            matches!(outcome, CallOutcome::ApprovalRequired { .. }),
            "{outcome:?}"
        );
    }
    ids
}

/// Three of five: `items` calls needing three approvals, each approved at
/// once by five principals on five runtimes (one per store of `stores`),
/// and as many needing three approved by two only. Each call approved by
/// five ran exactly once, its one decision in the log naming at least
/// three different approvers, each of whom granted once; no decider was
/// told anything but "still waiting", the outcome, or that it was decided
/// already (or running). The calls approved by two still wait, with those
/// two counted, on every runtime.
pub async fn three_of_five_approvers_per_item<S: IntoStore>(
    prefix: &str,
    stores: Vec<S>,
    items: usize,
) {
    assert_eq!(stores.len(), 5);
    let runs: Runs = Arc::default();
    let runtimes = runtimes_of(stores, &runs, 3);
    let ids = asked(&runtimes[0], prefix, 2 * items).await;
    let principals = ["ann", "bob", "cem", "dee", "eve"];
    let plan = ids.iter().enumerate().flat_map(|(n, id)| {
        let approvers = if n < items { 5 } else { 2 };
        principals
            .into_iter()
            .enumerate()
            .take(approvers)
            .map(move |(r, principal)| (id.clone(), r, principal, Decision::Approve))
    });
    let answers = decide_at_once(&runtimes, plan.collect()).await;
    let log = runtimes[0]
        .inbox()
        .audit(AuditQuery::all().limit(100_000))
        .await
        .unwrap();
    let runs = runs.lock().unwrap().clone();
    for (n, id) in ids.iter().enumerate() {
        let entries = |kind| -> Vec<_> {
            log.iter()
                .filter(|e| &e.call_id == id && e.kind == kind)
                .collect()
        };
        let mut granted: Vec<_> = entries(AuditKind::Granted)
            .iter()
            .map(|e| e.principal.clone().unwrap())
            .collect();
        let count = granted.len();
        granted.sort();
        granted.dedup();
        assert_eq!(granted.len(), count, "{id}: each principal granted once");
        for (principal, answer) in &answers[id] {
            match answer {
                Ok(CallOutcome::ApprovalRequired { .. } | CallOutcome::Completed { .. })
                | Err(RuntimeError::AlreadyDecided { .. } | RuntimeError::Running { .. }) => {}
                other => panic!("{id}: {principal} got {other:?}"),
            }
        }
        if n < items {
            assert_eq!(runs.get(id), Some(&1), "{id} ran once");
            let decided = entries(AuditKind::Decided);
            assert_eq!(decided.len(), 1, "{id}: one decision in the log");
            let approved_by = decided[0].detail.as_ref().unwrap()["approvedBy"]
                .as_array()
                .unwrap()
                .len();
            assert!(
                (3..=5).contains(&approved_by),
                "{id}: {approved_by} approvers"
            );
            let completed = answers[id]
                .iter()
                .filter(|(_, a)| matches!(a, Ok(CallOutcome::Completed { .. })))
                .count();
            assert_eq!(completed, 1, "{id}: one decider ran it: {:?}", answers[id]);
        } else {
            assert_eq!(runs.get(id), None, "{id} never ran");
            for runtime in &runtimes {
                let approvals = runtime.inbox().approvals(id).await.unwrap();
                assert_eq!(
                    (approvals.required, approvals.granted.len()),
                    (3, 2),
                    "{id}"
                );
            }
        }
    }
}

/// Twenty deciders granting and editing at once: `items` calls of an
/// editable "pay" needing three approvals, on the runtimes of `stores`
/// (sharing one database). In the first rounds, every fifth decider edits
/// the amount (a new version, counted as its editor's grant), the others
/// approve the version they read; then all approve, until each call ran.
/// Each call ran once, with the amount of the version that ran, whose
/// decision names at least three principals, every one of whom granted
/// that version (grants of earlier versions never count); no decider was
/// told anything but waiting, the outcome, stale, running or decided.
pub async fn twenty_deciders_granting_and_editing<S: IntoStore>(
    prefix: &str,
    stores: Vec<S>,
    items: usize,
) {
    let ran: Arc<Mutex<HashMap<String, Vec<u64>>>> = Arc::default();
    let runtimes: Vec<Runtime> = stores
        .into_iter()
        .map(|store| {
            let ran = Arc::clone(&ran);
            let pay = Tool::builder("pay")
                .description("Pays an invoice")
                .require_approval(true)
                .input_schema(json!({
                    "type": "object",
                    "properties": { "amount": { "type": "integer" } },
                    "required": ["amount"]
                }))
                .editable(["amount"])
                .execute(move |input: Value, ctx| {
                    ran.lock()
                        .unwrap()
                        .entry(ctx.call_id().to_owned())
                        .or_default()
                        .push(input["amount"].as_u64().unwrap());
                    async move { Ok::<_, ToolError>(json!({ "paid": input["amount"] })) }
                })
                .build()
                .unwrap();
            Runtime::builder()
                .tool(pay)
                .store(store)
                .approvals_required(3)
                .build()
                .unwrap()
        })
        .collect();
    let ids: Vec<String> = (0..items).map(|n| format!("{prefix}-edit-{n}")).collect();
    for id in &ids {
        let outcome = runtimes[0]
            .call(ToolCall::new(id, "pay", json!({ "amount": 1 })))
            .await;
        assert!(
            matches!(outcome, CallOutcome::ApprovalRequired { .. }),
            "{outcome:?}"
        );
    }
    const DECIDERS: usize = 20;
    const EDITING_ROUNDS: usize = 2;
    for round in 0..50 {
        let mut deciding = Vec::new();
        for id in &ids {
            let stored = runtimes[0].inbox().stored(id).await.unwrap().unwrap();
            if !stored.state.is_pending() {
                continue;
            }
            let digest = stored.digest();
            for j in 0..DECIDERS {
                let decision = if round < EDITING_ROUNDS && j % 5 == 0 {
                    Decision::Edit(json!({ "amount": 100 * (round + 1) + j }))
                } else {
                    Decision::Approve
                };
                let runtime = runtimes[j % runtimes.len()].clone();
                let decider = Decider::new(Principal::new(format!("p{j}")), digest.clone());
                let id = id.clone();
                deciding.push(tokio::spawn(async move {
                    let answer = runtime.decide_as(&id, decision, decider).await;
                    (id, answer)
                }));
            }
        }
        if deciding.is_empty() {
            break;
        }
        for task in deciding {
            let (id, answer) = task.await.unwrap();
            match answer {
                Ok(CallOutcome::ApprovalRequired { .. } | CallOutcome::Completed { .. })
                | Err(
                    RuntimeError::StaleDigest { .. }
                    | RuntimeError::Running { .. }
                    | RuntimeError::AlreadyDecided { .. },
                ) => {}
                other => panic!("{id} (round {round}): {other:?}"),
            }
        }
    }
    let log = runtimes[0]
        .inbox()
        .audit(AuditQuery::all().limit(1_000_000))
        .await
        .unwrap();
    let ran = ran.lock().unwrap().clone();
    let mut edited = 0;
    for id in &ids {
        let stored = runtimes[1].inbox().stored(id).await.unwrap().unwrap();
        assert!(
            matches!(stored.state, CallState::Settled { .. }),
            "{id}: {stored:?}"
        );
        let amount = stored.call.input["amount"].as_u64().unwrap();
        assert_eq!(
            ran.get(id),
            Some(&vec![amount]),
            "{id} ran once, with the version that ran"
        );
        edited += usize::from(amount != 1);
        let of_call = |kind: AuditKind| {
            log.iter()
                .filter(move |e| &e.call_id == id && e.kind == kind)
        };
        let ran_by: Vec<_> = of_call(AuditKind::Decided)
            .filter(|e| {
                e.detail
                    .as_ref()
                    .is_some_and(|d| d.get("approvedBy").is_some())
            })
            .collect();
        assert_eq!(ran_by.len(), 1, "{id}: one decision ran it");
        let version = ran_by[0].digest.as_deref().unwrap();
        let approved_by = ran_by[0].detail.as_ref().unwrap()["approvedBy"]
            .as_array()
            .unwrap();
        assert!(approved_by.len() >= 3, "{id}: {approved_by:?}");
        for principal in approved_by {
            let granted = of_call(AuditKind::Granted).any(|e| {
                e.principal.as_deref() == principal.as_str() && e.digest.as_deref() == Some(version)
            });
            assert!(granted, "{id}: {principal} granted the version that ran");
        }
    }
    assert!(edited > 0, "some calls ran edited: the edits were taken");
}
