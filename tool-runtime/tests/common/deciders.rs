//! Many people deciding one inbox at once: every item decided by five
//! deciders with different decisions (approve, decline with one of two
//! reasons, respond), through five runtimes sharing one store. Run against
//! each store (memory, SQLite, PostgreSQL).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_core::{Tool, ToolError};
use tool_runtime::store::{AuditKind, AuditQuery, CallStore, RunStore};
use tool_runtime::{CallOutcome, CallState, Decider, Decision, Runtime, RuntimeError, ToolCall};

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
pub async fn five_deciders_per_item<S: CallStore + RunStore>(
    prefix: &str,
    stores: Vec<S>,
    items: usize,
) {
    assert_eq!(stores.len(), 5);
    let runs: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let runtimes: Vec<Runtime> = stores
        .into_iter()
        .map(|store| {
            let runs = Arc::clone(&runs);
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
            Runtime::builder().tool(pay).store(store).build().unwrap()
        })
        .collect();
    let ids: Vec<String> = (0..items).map(|n| format!("{prefix}-pay-{n}")).collect();
    for id in &ids {
        let outcome = runtimes[0]
            .call(ToolCall::new(id, "pay", json!({ "invoice": id })))
            .await;
        assert!(
            matches!(outcome, CallOutcome::ApprovalRequired { .. }),
            "{outcome:?}"
        );
    }

    let mut deciding = Vec::new();
    for id in &ids {
        let digest = runtimes[0].stored(id).await.unwrap().unwrap().digest();
        for (n, (principal, decision)) in decisions().into_iter().enumerate() {
            let runtime = runtimes[n].clone();
            let (id, decider) = (id.clone(), Decider::new(principal, &digest));
            deciding.push(tokio::spawn(async move {
                let answer = runtime.decide_as(&id, decision, decider).await;
                (id, principal, answer)
            }));
        }
    }
    let mut answers: HashMap<String, Vec<Answer>> = HashMap::new();
    for task in deciding {
        let (id, principal, answer) = task.await.unwrap();
        answers.entry(id).or_default().push((principal, answer));
    }

    let log = runtimes[0]
        .audit(AuditQuery::all().limit(100_000))
        .await
        .unwrap();
    let runs = runs.lock().unwrap().clone();
    for id in &ids {
        let answers = &answers[id];
        let winners: Vec<_> = answers.iter().filter(|(_, a)| a.is_ok()).collect();
        assert_eq!(winners.len(), 1, "{id}: {answers:?}");
        let (winner, won) = (winners[0].0, winners[0].1.as_ref().unwrap());
        let stored = runtimes[0].stored(id).await.unwrap().unwrap();
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
