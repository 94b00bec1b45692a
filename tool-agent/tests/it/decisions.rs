//! Two decisions on a run's last two waiting calls at the same moment, from
//! two agents on two runtimes sharing one store: each stream reports its
//! call's result once, whatever compare-and-set retries the run's save
//! takes, and exactly one of them goes on with the next step. On the memory
//! and SQLite stores, and on PostgreSQL when `DATABASE_URL` is set.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_agent::{
    Agent, AgentChunk, FinishReason, Message, ModelFinish, ScriptedModel, ScriptedStep, Thread,
};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::Runtime;
use tool_runtime::store::{
    AuditLog, CallStore, MemoryStore, Outbox, RuleStore, RunStore, SqliteStore,
};

const ROUNDS: usize = 8;

fn pay() -> Tool {
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(json!({ "paid": input }))
        })
        .build()
        .unwrap()
}

/// Two agents, each on a runtime of its own over `store`, sharing `model`.
fn agents<S: CallStore + RunStore + AuditLog + RuleStore + Outbox>(
    store: Arc<S>,
    model: &ScriptedModel,
) -> [Agent; 2] {
    [0, 1].map(|_| {
        let runtime = Runtime::builder()
            .tool(pay())
            .store(Arc::clone(&store))
            .build()
            .unwrap();
        Agent::builder("payer", model.clone(), runtime)
            .instructions("You pay")
            .build()
            .unwrap()
    })
}

async fn last_decisions_report_each_result_once<
    S: CallStore + RunStore + AuditLog + RuleStore + Outbox,
>(
    store: S,
    label: &str,
) {
    let store = Arc::new(store);
    for round in 0..ROUNDS {
        let model = ScriptedModel::new([
            ScriptedStep::new()
                .tool_call("c-a", "pay", json!({ "to": "a" }))
                .tool_call("c-b", "pay", json!({ "to": "b" }))
                .finish(ModelFinish::ToolCalls),
            ScriptedStep::answer("both paid"),
        ]);
        let [first, second] = agents(Arc::clone(&store), &model);
        let paused = first
            .generate(
                Thread::new(format!("{label}-{round}")),
                vec![Message::user("pay both")],
            )
            .await
            .unwrap();
        assert_eq!(paused.finish_reason, FinishReason::Suspended);
        let run_id = paused.run_id.clone();
        let (a, b) = tokio::join!(
            async {
                first
                    .approve_tool_call(&run_id, "c-a")
                    .await
                    .unwrap()
                    .output()
                    .await
            },
            async {
                second
                    .approve_tool_call(&run_id, "c-b")
                    .await
                    .unwrap()
                    .output()
                    .await
            },
        );
        let mut went_on = 0;
        for (call_id, output) in [("c-a", &a), ("c-b", &b)] {
            let results: Vec<&str> = output
                .chunks
                .iter()
                .filter_map(|chunk| match chunk {
                    AgentChunk::ToolResult { call_id, .. } => Some(call_id.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(
                results,
                [call_id],
                "{label} round {round}: the stream of {call_id}'s approval reports its result once: {:?}",
                output.chunks
            );
            if output.finish_reason == FinishReason::Stop {
                went_on += 1;
                assert_eq!(output.text, "both paid");
            } else {
                assert_eq!(
                    output.finish_reason,
                    FinishReason::Suspended,
                    "{label} round {round}"
                );
            }
        }
        assert_eq!(went_on, 1, "{label} round {round}: one decision goes on");
        assert_eq!(model.requests().len(), 2, "{label} round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_last_decisions_report_each_result_once_on_the_memory_and_sqlite_stores() {
    last_decisions_report_each_result_once(MemoryStore::new(), "memory").await;
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("tool-agent-decisions-")
        .tempdir()
        .unwrap();
    let sqlite = SqliteStore::open(tmp.path().join("runs.sqlite")).unwrap();
    last_decisions_report_each_result_once(sqlite, "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_last_decisions_report_each_result_once_on_the_postgres_store() {
    let url = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            assert_ne!(
                std::env::var("REQUIRE_POSTGRES").as_deref(),
                Ok("1"),
                "REQUIRE_POSTGRES=1 but DATABASE_URL is not set"
            );
            eprintln!("skipping the PostgreSQL case: DATABASE_URL is not set");
            return;
        }
    };
    // A schema of its own: the store's tables are per schema.
    let schema = format!("t_agent_decisions_{}", std::process::id());
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await
        .unwrap();
    let separator = if url.contains('?') { '&' } else { '?' };
    let store = tool_runtime::store::PostgresStore::connect(&format!(
        "{url}{separator}options=-csearch_path%3D{schema}"
    ))
    .await
    .unwrap();
    last_decisions_report_each_result_once(store, "postgres").await;
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
