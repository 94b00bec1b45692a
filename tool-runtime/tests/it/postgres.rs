//! The PostgreSQL store against a real server (`DATABASE_URL`, a
//! `postgres://` URL): the shared store contract, errors that name the
//! database and the call, two runtimes on one database, three processes
//! approving the same calls at once, tasks run by worker processes woken by
//! NOTIFY, and recovery of the calls of a process killed with SIGKILL while
//! running them.
//!
//! Each test works in a schema of its own (through the URL's `search_path`),
//! so tests running in parallel never see each other's calls. Without
//! `DATABASE_URL` the tests are skipped; with `REQUIRE_POSTGRES=1` (as CI
//! sets) that is a failure instead.

use crate::common;

use common::calls;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::echo_tool;
use serde_json::{Value, json};
use tool_core::{BackgroundConfig, Tool, ToolContext, ToolError};
use tool_runtime::store::{CallStore, Committed, PostgresStore, RunStore};
use tool_runtime::{
    CallOutcome, CallState, PendingCall, PendingKind, Runtime, RuntimeError, StoreError, ToolCall,
};

/// The server's URL, or `None` (after a notice) to skip.
fn database_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert_ne!(
                std::env::var("REQUIRE_POSTGRES").as_deref(),
                Ok("1"),
                "REQUIRE_POSTGRES=1 but DATABASE_URL is not set: start a server (source .ci/postgres start)"
            );
            eprintln!("skipping PostgreSQL tests: DATABASE_URL is not set");
            None
        }
    }
}

/// A schema of one test, new and empty; `url` connects to it.
struct Schema {
    name: String,
    url: String,
    admin: tokio_postgres::Client,
}

impl Schema {
    async fn new(database_url: &str, test: &str) -> Schema {
        static N: AtomicUsize = AtomicUsize::new(0);
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros();
        let name = format!(
            "t_{test}_{}_{stamp}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let (admin, connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to DATABASE_URL: {e}"));
        tokio::spawn(connection);
        admin
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .unwrap();
        let separator = if database_url.contains('?') { '&' } else { '?' };
        let url = format!("{database_url}{separator}options=-csearch_path%3D{name}");
        Schema { name, url, admin }
    }

    async fn store(&self) -> PostgresStore {
        PostgresStore::connect(&self.url).await.unwrap()
    }

    async fn drop(self) {
        self.admin
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name))
            .await
            .unwrap();
    }
}

/// A new directory, removed with what it holds when the guard drops, also
/// when the test fails: keep the guard until the test's end.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tool-runtime-pg-{name}-"))
        .tempdir()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_meets_the_store_contract() {
    let Some(url) = database_url() else { return };
    // The contract purges and recovers across the whole table: each of its
    // stores gets a schema of its own.
    const STORES: usize = 20;
    let mut schemas = Vec::new();
    let mut stores = Vec::new();
    for _ in 0..STORES {
        let schema = Schema::new(&url, "contract").await;
        stores.push(schema.store().await);
        schemas.push(schema);
    }
    let stores = Mutex::new(stores);
    let prefix = format!("pg-{}", std::process::id());
    common::contract::store_contract(&prefix, || {
        stores
            .lock()
            .unwrap()
            .pop()
            .expect("a store per part of the contract")
    })
    .await;
    for schema in schemas {
        schema.drop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_the_database_without_its_password_and_the_call() {
    let Some(url) = database_url() else { return };

    // Nobody listens on port 1: refused at once, named without the password.
    let error = PostgresStore::connect("postgres://app:hunter2@127.0.0.1:1/app")
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("postgres://app@127.0.0.1:1/app") && !message.contains("hunter2"),
        "{message}"
    );
    assert!(std::error::Error::source(&error).is_some(), "{error:?}");

    let schema = Schema::new(&url, "errors").await;
    let store = schema.store().await;
    assert!(!store.location().contains("search_path"), "{store:?}");
    // Reconnecting to existing tables checks their version and keeps the calls.
    store
        .insert(PendingCall::new(
            "c-bad",
            "t",
            PendingKind::Approval,
            json!({}),
        ))
        .await
        .unwrap();
    store
        .insert(PendingCall::new(
            "c-good",
            "t",
            PendingKind::Approval,
            json!({ "k": [1, 2] }),
        ))
        .await
        .unwrap();
    assert_eq!(schema.store().await.list().await.unwrap().len(), 2);

    // One unreadable row: listed around, and an error naming it.
    schema
        .admin
        .batch_execute(&format!(
            "UPDATE {}.tool_runtime_calls SET input = '{{not json' WHERE call_id = 'c-bad'",
            schema.name
        ))
        .await
        .unwrap();
    let listed = schema.store().await.list().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|c| c.call.head.call_id.as_str())
            .collect::<Vec<_>>(),
        ["c-good"]
    );
    assert_eq!(listed[0].call.input, json!({ "k": [1, 2] }));
    let message = store.get("c-bad").await.unwrap_err().to_string();
    assert!(
        message.contains("c-bad") && message.contains(store.location()),
        "{message}"
    );

    // JSON that would not read back is refused, naming the call.
    let deep = (0..200).fold(json!(1), |inner, _| json!([inner]));
    let error = store
        .insert(PendingCall::new("c-deep", "t", PendingKind::Approval, deep))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("\"c-deep\"") && error.to_string().contains("127 levels"),
        "{error}"
    );
    assert!(store.get("c-deep").await.unwrap().is_none());

    // One unreadable run: the store still connects, and loading it is an
    // error naming the run and the database.
    store
        .save_run("r-bad", None, false, json!({}))
        .await
        .unwrap();
    store
        .save_run("r-good", None, false, json!([1]))
        .await
        .unwrap();
    schema
        .admin
        .batch_execute(&format!(
            "UPDATE {}.tool_runtime_runs SET record = '{{not json' WHERE run_id = 'r-bad'",
            schema.name
        ))
        .await
        .unwrap();
    let reconnected = schema.store().await;
    let message = reconnected.load_run("r-bad").await.unwrap_err().to_string();
    assert!(
        message.contains("\"r-bad\"") && message.contains(store.location()),
        "{message}"
    );
    assert_eq!(
        reconnected
            .load_run("r-good")
            .await
            .unwrap()
            .unwrap()
            .record,
        json!([1])
    );

    // A schema of a newer version than this build knows is refused.
    schema
        .admin
        .batch_execute(&format!(
            "UPDATE {}.tool_runtime_schema SET version = 99",
            schema.name
        ))
        .await
        .unwrap();
    let error = PostgresStore::connect(&schema.url).await.unwrap_err();
    assert!(matches!(error, StoreError::Io { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("version 99") && message.contains("(11)"),
        "{message}"
    );
    schema.drop().await;
}

/// A schema of version 1, as the build before agent runs created it: its
/// tables by hand, one pending call. Connecting migrates it to version 10
/// (the runs table, fencing tokens, calls waiting for their output, the
/// ids of purged calls, the audit log, when calls were asked for, the
/// approvals a call needs, standing rules, the orders by time), keeping
/// the call; concurrent first connections migrate it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_of_version_1_is_migrated_to_version_11_and_keeps_its_calls() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "v1").await;
    schema
        .admin
        .batch_execute(&format!(
            "SET search_path TO {};
             CREATE TABLE tool_runtime_schema (version integer NOT NULL);
             CREATE TABLE tool_runtime_calls (
                 call_id text PRIMARY KEY,
                 kind text NOT NULL CHECK (kind IN ('approval', 'suspended', 'task')),
                 tool_id text NOT NULL,
                 state text NOT NULL CHECK (state IN ('pending', 'running', 'settled')),
                 owner text,
                 lease_expires_at timestamptz,
                 attempt integer NOT NULL DEFAULT 0,
                 input text NOT NULL,
                 request_context text NOT NULL,
                 messages text NOT NULL,
                 payload text,
                 resume_data text,
                 outcome text,
                 settled_at timestamptz
             );
             CREATE INDEX tool_runtime_calls_expiring ON tool_runtime_calls (lease_expires_at)
                 WHERE state = 'running';
             CREATE INDEX tool_runtime_calls_settled ON tool_runtime_calls (settled_at)
                 WHERE state = 'settled';
             INSERT INTO tool_runtime_schema (version) VALUES (1);
             INSERT INTO tool_runtime_calls
                 (call_id, kind, tool_id, state, attempt, input, request_context, messages)
                 VALUES ('c-old', 'approval', 't', 'pending', 0, '{{\"n\":1}}', '{{}}', '[]');
             SET search_path TO DEFAULT;",
            schema.name
        ))
        .await
        .unwrap();

    let connecting: Vec<_> = (0..3)
        .map(|_| {
            let url = schema.url.clone();
            tokio::spawn(async move { PostgresStore::connect(&url).await })
        })
        .collect();
    let mut stores = Vec::new();
    for store in connecting {
        stores.push(store.await.unwrap().expect("version 1 is migrated"));
    }
    let versions: Vec<i32> = schema
        .admin
        .query(
            &format!("SELECT version FROM {}.tool_runtime_schema", schema.name),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(versions, [11]);
    let store = &stores[0];
    let rule =
        tool_runtime::StandingRule::new("r1", "t", SystemTime::now() + Duration::from_secs(60));
    assert!(
        tool_runtime::store::RuleStore::add_rule(store, rule)
            .await
            .unwrap(),
        "and gains the rules table"
    );
    let old = PendingCall::new("c-old", "t", PendingKind::Approval, json!({ "n": 1 }));
    assert_eq!(
        calls(store.list().await.unwrap()),
        std::slice::from_ref(&old)
    );
    let by_age = tool_runtime::store::PendingQuery::waiting_for_people()
        .order(tool_runtime::store::PendingOrder::Asked);
    assert_eq!(
        calls(store.list_page(by_age).await.unwrap()),
        [old],
        "and the orders by time (a call that does not say when: last)"
    );
    assert_eq!(
        store
            .save_run("r1", None, false, json!({ "step": 1 }))
            .await
            .unwrap(),
        Some(1),
        "the runs table is there"
    );
    store
        .insert(PendingCall::new(
            "c-new",
            "t",
            PendingKind::Output,
            json!({}),
        ))
        .await
        .expect("a call may wait for its output");
    assert_eq!(
        store
            .purge_settled(tool_runtime::store::Retention::new(
                std::time::Duration::from_secs(60),
                0
            ))
            .await
            .unwrap(),
        0,
        "the table of purged ids is there"
    );
    let reconnected = schema.store().await;
    assert_eq!(
        reconnected.load_run("r1").await.unwrap().unwrap().revision,
        1
    );
    let noted = tool_runtime::store::Notification::new(
        tool_runtime::store::NotificationKind::ApprovalRequested,
        "c-noted",
        "t",
        json!({}),
    );
    let new_call = PendingCall::new("c-noted", "t", PendingKind::Approval, json!({}));
    store.insert_notifying(new_call, vec![noted]).await.unwrap();
    let outbox =
        tool_runtime::store::Outbox::outbox(store, tool_runtime::store::OutboxQuery::all());
    assert_eq!(outbox.await.unwrap().len(), 1, "and the outbox");
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_and_typed_decisions_settle_once_on_the_postgres_store() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "respond").await;
    common::respond::respond_decisions("pg", schema.store().await).await;
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_deciders_on_each_of_200_items_make_one_decision_each_on_postgres() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "deciders").await;
    let mut stores = Vec::new();
    for _ in 0..5 {
        stores.push(schema.store().await);
    }
    common::deciders::five_deciders_per_item("pg", stores, 200).await;
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_deciders_granting_and_editing_on_three_runtimes_run_each_call_once_on_postgres() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "editing").await;
    let mut stores = Vec::new();
    for _ in 0..3 {
        stores.push(schema.store().await);
    }
    common::deciders::twenty_deciders_granting_and_editing("pg", stores, 20).await;
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_of_five_approvers_run_each_call_once_on_postgres() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "quorum").await;
    let mut stores = Vec::new();
    for _ in 0..5 {
        stores.push(schema.store().await);
    }
    common::deciders::three_of_five_approvers_per_item("pg", stores, 40).await;
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_under_load_on_a_short_lease_never_stick_on_the_postgres_store() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "load").await;
    common::drops::decisions_under_load_never_stick(schema.store().await, "pg", 300, 20).await;
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn futures_dropped_at_random_points_lose_no_call_on_the_postgres_store() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "drops").await;
    common::drops::dropped_futures_lose_nothing(schema.store().await, "pg", 60).await;
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_saves_from_four_stores_on_one_database_lose_no_update() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "run_updates").await;
    let mut stores = Vec::new();
    for _ in 0..4 {
        stores.push(schema.store().await);
    }
    common::contract::run_updates_from_several_stores_lose_nothing(stores, "r1", 25).await;
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_created_on_one_runtime_is_approved_on_another_and_runs_once() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "two_runtimes").await;
    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let first = Runtime::builder()
        .tool(tool.clone())
        .store(schema.store().await)
        .build()
        .unwrap();
    let second = Runtime::builder()
        .tool(tool)
        .store(schema.store().await)
        .build()
        .unwrap();

    let outcome = first
        .call(ToolCall::new("c0", "pay", json!({ "n": 0 })))
        .await;
    assert!(
        matches!(outcome, CallOutcome::ApprovalRequired { .. }),
        "{outcome:?}"
    );
    assert_eq!(second.inbox().waiting().await.unwrap().len(), 1);
    let done = second.approve("c0").await.unwrap();
    assert_eq!(done.output().unwrap()["echo"]["n"], 0);
    let again = first.approve("c0").await.unwrap();
    assert_eq!(again, done, "the recorded outcome, not a second run");
    assert_eq!(runs.lock().unwrap().len(), 1);

    // Both approve each of 20 calls at once: each runs once.
    for i in 1..=20 {
        let outcome = first
            .call(ToolCall::new(format!("c{i}"), "pay", json!({ "n": i })))
            .await;
        assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    }
    common::approve_all_at_once(&[first.clone(), second.clone()], 1..=20).await;
    assert_eq!(runs.lock().unwrap().len(), 21, "each call ran once");
    let stored = first.inbox().stored("c20").await.unwrap().unwrap();
    assert!(
        matches!(stored.state, CallState::Settled { .. }),
        "{stored:?}"
    );
    schema.drop().await;
}

/// The server processes of the connections named `application_name`.
async fn backends(admin: &tokio_postgres::Client, application_name: &str) -> Vec<i32> {
    let rows = admin
        .query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid",
            &[&application_name],
        )
        .await
        .unwrap();
    rows.iter().map(|row| row.get(0)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_opens_the_pool_so_a_burst_of_calls_opens_no_connection() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "warm_pool").await;
    let name = format!("{}_pool", schema.name);
    let store = PostgresStore::connect(&format!("{}&application_name={name}", schema.url))
        .await
        .unwrap();
    let opened = backends(&schema.admin, &name).await;
    assert_eq!(
        opened.len(),
        10,
        "every connection of the pools (8, and 2 for leases): {opened:?}"
    );

    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let runtime = Runtime::builder().tool(tool).store(store).build().unwrap();
    let calls: Vec<_> = (0..32)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                let call_id = format!("c{i}");
                runtime
                    .call(ToolCall::new(call_id.as_str(), "pay", json!({ "n": i })))
                    .await;
                runtime.approve(&call_id).await.unwrap()
            })
        })
        .collect();
    for call in calls {
        assert!(call.await.unwrap().output().is_some());
    }
    assert_eq!(runs.lock().unwrap().len(), 32);
    assert_eq!(
        backends(&schema.admin, &name).await,
        opened,
        "the burst was served by the connections opened when connecting"
    );
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_allows_fewer_connections_than_the_pool_still_serves_calls() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "few").await;
    let role = format!("{}_few", schema.name);
    schema
        .admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN CONNECTION LIMIT 3; GRANT ALL ON SCHEMA {} TO {role};",
            schema.name
        ))
        .await
        .unwrap();
    let user = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .map(|(user, _)| user.to_owned())
        .expect("DATABASE_URL names a user");
    let as_role = schema
        .url
        .replacen(&format!("{user}@"), &format!("{role}@"), 1);
    let application_name = format!("{}_pool", schema.name);
    let store = PostgresStore::connect(&format!("{as_role}&application_name={application_name}"))
        .await
        .expect("a store on the connections the server allows");
    assert_eq!(backends(&schema.admin, &application_name).await.len(), 3);

    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let runtime = Runtime::builder().tool(tool).store(store).build().unwrap();
    let outcome = runtime
        .call(ToolCall::new("c1", "pay", json!({ "n": 1 })))
        .await;
    assert!(
        matches!(outcome, CallOutcome::ApprovalRequired { .. }),
        "{outcome:?}"
    );
    let done = runtime.approve("c1").await.unwrap();
    assert_eq!(done.output().unwrap()["echo"]["n"], 1);
    assert_eq!(runs.lock().unwrap().len(), 1);
    drop(runtime);
    schema.drop().await;
}

// ---- child processes -------------------------------------------------------

const ROLE: &str = "TOOL_RUNTIME_PG_CHILD_ROLE";
const URL: &str = "TOOL_RUNTIME_PG_CHILD_URL";
const DIR: &str = "TOOL_RUNTIME_PG_CHILD_DIR";
/// The lease of the SIGKILL test's runtimes: short, so recovery comes soon.
const SHORT_LEASE: Duration = Duration::from_millis(500);
const CALLS: usize = 100;

/// Appends `line` to `runs.log` in `dir` (one write, in append mode, so
/// lines of several processes never interleave).
fn record(dir: &Path, line: &str) {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("runs.log"))
        .unwrap();
    log.write_all(format!("{line}\n").as_bytes()).unwrap();
}

fn runs_log(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("runs.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `count`: needs approval, logs the `n` of each run and the process that ran it.
fn counting_tool(dir: &Path) -> Tool {
    let dir = dir.to_path_buf();
    Tool::builder("count")
        .description("Counts")
        .require_approval(true)
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            record(&dir, &format!("{} {}", input["n"], std::process::id()));
            async move { Ok::<_, ToolError>(json!({ "counted": input["n"] })) }
        })
        .build()
        .unwrap()
}

/// `count-task`: a background task that logs the `n` of each run and the
/// process that ran it.
fn counting_task(dir: &Path) -> Tool {
    let dir = dir.to_path_buf();
    Tool::builder("count-task")
        .description("Counts, in the background")
        .background(BackgroundConfig::new().timeout_ms(10_000))
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            record(&dir, &format!("{} {}", input["n"], std::process::id()));
            async move { Ok::<_, ToolError>(json!({ "counted": input["n"] })) }
        })
        .build()
        .unwrap()
}

/// `stuck` and the retry-safe `stuck-safe`: need approval, log each run as
/// `tool:attempt`, and hang on their first attempt.
fn stuck_tools(dir: &Path) -> Vec<Tool> {
    ["stuck", "stuck-safe"]
        .into_iter()
        .map(|id| {
            let dir = dir.to_path_buf();
            Tool::builder(id)
                .description("Hangs on its first run")
                .require_approval(true)
                .retry_safe(id == "stuck-safe")
                .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
                    let attempt = ctx.attempt();
                    record(&dir, &format!("{id}:{attempt}"));
                    async move {
                        if attempt == 1 {
                            std::future::pending::<()>().await;
                        }
                        Ok::<_, ToolError>(json!({ "attempt": attempt }))
                    }
                })
                .build()
                .unwrap()
        })
        .collect()
}

/// Run in child processes by the multi-process tests.
#[test]
#[ignore = "a child process of the multi-process PostgreSQL tests"]
fn child_process() {
    let (Ok(role), Ok(url), Ok(dir)) =
        (std::env::var(ROLE), std::env::var(URL), std::env::var(DIR))
    else {
        panic!("run by the multi-process PostgreSQL tests only");
    };
    let dir = PathBuf::from(dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = PostgresStore::connect(&url).await.unwrap();
        match role.as_str() {
            approve if approve.starts_with("approve:") => {
                let runtime = Runtime::builder()
                    .tool(counting_tool(&dir))
                    .store(store)
                    .build()
                    .unwrap();
                // Every child starts approving when the parent says so.
                println!("READY");
                std::io::stdout().flush().unwrap();
                let mut go = String::new();
                std::io::stdin().read_line(&mut go).unwrap();
                // Each child starts a third further along, so that they
                // race both on the same id at once and on ids another
                // process already ran.
                let start: usize = approve["approve:".len()..].parse().unwrap();
                let approvals: Vec<_> = (0..CALLS)
                    .map(|j| {
                        let i = (j + start * CALLS / 3) % CALLS;
                        let runtime = runtime.clone();
                        tokio::spawn(async move { runtime.approve(&format!("c{i}")).await })
                    })
                    .collect();
                for approval in approvals {
                    match approval.await.unwrap() {
                        Ok(outcome) => assert!(outcome.output().is_some(), "{outcome:?}"),
                        Err(RuntimeError::Running { .. }) => {}
                        Err(other) => panic!("{other}"),
                    }
                }
                println!("DONE");
            }
            "worker" => {
                let runtime = Runtime::builder()
                    .tool(counting_task(&dir))
                    .store(store)
                    .build()
                    .unwrap();
                // Never polls within the test: tasks reach it by NOTIFY only.
                let worker = runtime.worker().poll_every(Duration::from_secs(3600));
                tokio::spawn(worker.run());
                // Its first claim (finding nothing) and its LISTEN happen now.
                tokio::time::sleep(Duration::from_millis(300)).await;
                println!("READY");
                std::io::stdout().flush().unwrap();
                // Runs until the parent closes stdin.
                tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new()))
                    .await
                    .unwrap()
                    .unwrap();
            }
            "stuck" => {
                let runtime = Runtime::builder()
                    .tools(stuck_tools(&dir))
                    .store(store)
                    .lease(SHORT_LEASE)
                    .build()
                    .unwrap();
                for id in ["c-stuck", "c-safe"] {
                    let runtime = runtime.clone();
                    tokio::spawn(async move { runtime.approve(id).await });
                }
                // Killed by the parent while both hang.
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            other => panic!("unknown role {other}"),
        }
    });
}

fn spawn_child(role: &str, url: &str, dir: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            common::test_name(module_path!(), "child_process").as_str(),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(URL, url)
        .env(DIR, dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads `child`'s stdout up to a line ending with `word`; panics with its
/// stderr if it ends first.
fn wait_for_line(child: &mut Child, word: &str) -> BufReader<std::process::ChildStdout> {
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            panic!("the child ended before {word}: {stderr}");
        }
        if line.trim_end().ends_with(word) {
            return stdout;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_approving_the_same_calls_run_each_once() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "processes").await;
    let tmp = temp_dir("processes");
    let dir = tmp.path().to_path_buf();
    let runtime = Runtime::builder()
        .tool(counting_tool(&dir))
        .store(schema.store().await)
        .build()
        .unwrap();
    for i in 0..CALLS {
        let outcome = runtime
            .call(ToolCall::new(format!("c{i}"), "count", json!({ "n": i })))
            .await;
        assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    }
    let started = Instant::now();
    let mut children: Vec<Child> = (0..3)
        .map(|k| spawn_child(&format!("approve:{k}"), &schema.url, &dir))
        .collect();
    let readers: Vec<_> = children
        .iter_mut()
        .map(|child| wait_for_line(child, "READY"))
        .collect();
    for child in &mut children {
        writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    }
    for (mut child, reader) in children.into_iter().zip(readers) {
        let rest: Vec<String> = reader.lines().map_while(Result::ok).collect();
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(
            status.success() && rest.iter().any(|line| line.ends_with("DONE")),
            "{rest:?}\n{stderr}"
        );
    }
    eprintln!(
        "3 processes approved {CALLS} calls in {:?}",
        started.elapsed()
    );

    let log = runs_log(&dir);
    let mut ran: Vec<usize> = log
        .iter()
        .map(|line| line.split(' ').next().unwrap().parse().unwrap())
        .collect();
    let mut by_process = std::collections::BTreeMap::<&str, usize>::new();
    for line in &log {
        *by_process
            .entry(line.split(' ').nth(1).unwrap())
            .or_default() += 1;
    }
    eprintln!("runs by process: {by_process:?}");
    ran.sort_unstable();
    assert_eq!(
        ran,
        (0..CALLS).collect::<Vec<_>>(),
        "each call ran exactly once"
    );
    assert!(runtime.inbox().waiting().await.unwrap().is_empty());
    let again = runtime.approve("c7").await.unwrap();
    assert_eq!(again.output(), Some(&json!({ "counted": 7 })));
    assert_eq!(runs_log(&dir).len(), CALLS);
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_stored_by_one_process_run_once_each_on_workers_of_three_others_woken_by_notify() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "workers").await;
    let tmp = temp_dir("workers");
    let dir = tmp.path().to_path_buf();
    let front = Runtime::builder()
        .tool(counting_task(&dir))
        .store(schema.store().await)
        .leave_tasks_to_workers(true)
        .build()
        .unwrap();
    let mut children: Vec<Child> = (0..3)
        .map(|_| spawn_child("worker", &schema.url, &dir))
        .collect();
    let _readers: Vec<_> = children
        .iter_mut()
        .map(|child| wait_for_line(child, "READY"))
        .collect();

    let started = Instant::now();
    for i in 0..CALLS {
        let outcome = front
            .call(ToolCall::new(
                format!("t{i}"),
                "count-task",
                json!({ "n": i }),
            ))
            .await;
        assert!(
            matches!(outcome, CallOutcome::BackgroundStarted { .. }),
            "{outcome:?}"
        );
    }
    for i in 0..CALLS {
        let done = tokio::time::timeout(Duration::from_secs(30), front.wait(&format!("t{i}")))
            .await
            .unwrap_or_else(|_| panic!("task t{i} never ran: no worker was woken"))
            .unwrap();
        assert_eq!(done.output(), Some(&json!({ "counted": i })));
    }
    eprintln!(
        "3 worker processes ran {CALLS} tasks in {:?}",
        started.elapsed()
    );
    for child in &mut children {
        drop(child.stdin.take()); // ends the child
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }

    let log = runs_log(&dir);
    let mut ran: Vec<usize> = log
        .iter()
        .map(|line| line.split(' ').next().unwrap().parse().unwrap())
        .collect();
    ran.sort_unstable();
    assert_eq!(
        ran,
        (0..CALLS).collect::<Vec<_>>(),
        "each task ran exactly once"
    );
    let front_pid = std::process::id().to_string();
    assert!(
        log.iter().all(|line| !line.ends_with(&front_pid)),
        "the front end ran none"
    );
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_listener_connection_is_killed_reconnects_and_is_woken_again() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "relisten").await;
    let tmp = temp_dir("relisten");
    let dir = tmp.path().to_path_buf();
    let runtime = |leave: bool, store: PostgresStore| {
        Runtime::builder()
            .tool(counting_task(&dir))
            .store(store)
            .leave_tasks_to_workers(leave)
            .build()
            .unwrap()
    };
    let front = runtime(true, schema.store().await);
    let back = runtime(false, schema.store().await);
    let worker = tokio::spawn(back.worker().poll_every(Duration::from_secs(3600)).run());
    let run = |id: &'static str, n: usize| {
        let front = front.clone();
        async move {
            front
                .call(ToolCall::new(id, "count-task", json!({ "n": n })))
                .await;
            tokio::time::timeout(Duration::from_secs(30), front.wait(id))
                .await
                .unwrap_or_else(|_| panic!("task {id} never ran"))
                .unwrap()
        }
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(run("t1", 1).await.output(), Some(&json!({ "counted": 1 })));

    // Every listener on the server loses its connection (other tests'
    // workers reconnect too).
    let killed: i64 = schema
        .admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name = 'tool_runtime_task_listener'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(killed >= 1, "the worker's listener was connected");
    // Stored while nobody listens: found once the listener is back.
    assert_eq!(run("t2", 2).await.output(), Some(&json!({ "counted": 2 })));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(run("t3", 3).await.output(), Some(&json!({ "counted": 3 })));
    worker.abort();
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_a_process_killed_while_running_them_are_recovered() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "sigkill").await;
    let tmp = temp_dir("sigkill");
    let dir = tmp.path().to_path_buf();
    let runtime = Runtime::builder()
        .tools(stuck_tools(&dir))
        .store(schema.store().await)
        .lease(SHORT_LEASE)
        .build()
        .unwrap();
    for (id, tool) in [("c-stuck", "stuck"), ("c-safe", "stuck-safe")] {
        let outcome = runtime.call(ToolCall::new(id, tool, json!({}))).await;
        assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    }

    let mut child = spawn_child("stuck", &schema.url, &dir);
    // A liveness bound (a process to start, connect and claim), not a speed
    // claim: generous, for a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(30);
    while runs_log(&dir).len() < 2 {
        assert!(Instant::now() < deadline, "the child never ran both calls");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed = Instant::now();
    assert!(
        runtime.recover().await.unwrap().is_empty(),
        "the dead child's leases have not expired yet"
    );

    // Recovered once the lease (renewed until the kill) has expired.
    let mut recovered = Vec::new();
    while recovered.len() < 2 {
        assert!(killed.elapsed() < Duration::from_secs(5), "{recovered:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        recovered.extend(runtime.recover().await.unwrap());
    }
    recovered.sort_by(|a, b| a.call_id.cmp(&b.call_id));
    eprintln!("recovered {:?} after the kill", killed.elapsed());
    let (safe, stuck) = (&recovered[0], &recovered[1]);

    assert_eq!((stuck.call_id.as_str(), stuck.rerun), ("c-stuck", false));
    let error = stuck.outcome.error().expect("settled as failed");
    assert!(
        error.message().contains("interrupted"),
        "{}",
        error.message()
    );
    assert_eq!((safe.call_id.as_str(), safe.rerun), ("c-safe", true));
    assert_eq!(safe.outcome.output(), Some(&json!({ "attempt": 2 })));

    let mut log = runs_log(&dir);
    log[..2].sort();
    assert_eq!(log, ["stuck-safe:1", "stuck:1", "stuck-safe:2"]);
    for id in ["c-stuck", "c-safe"] {
        let stored = runtime.inbox().stored(id).await.unwrap().unwrap();
        assert!(
            matches!(stored.state, CallState::Settled { .. }),
            "{stored:?}"
        );
    }
    // Asked again: the recorded outcomes.
    let again = runtime.approve("c-stuck").await.unwrap();
    assert!(again.error().unwrap().message().contains("interrupted"));
    assert!(runtime.recover().await.unwrap().is_empty());
    schema.drop().await;
}

/// A transactional tool on PostgreSQL: inserts a payment through its
/// call's `PostgresTransaction`, holds the transaction `hold_ms`, and fails
/// after its insert when asked to.
fn pg_record_payment() -> Tool {
    Tool::builder("record")
        .description("Records a payment")
        .transactional(true)
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            let tx = ctx
                .extension::<tool_runtime::store::PostgresTransaction>()
                .cloned()
                .ok_or_else(|| ToolError::new("no transaction"))?;
            let key = ctx.idempotency_key().to_string();
            let amount = input["amount"].as_i64().unwrap_or(0);
            tx.execute(
                "INSERT INTO payments (key, amount) VALUES ($1, $2)",
                &[&key, &amount],
            )
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
            tokio::time::sleep(Duration::from_millis(
                input["hold_ms"].as_u64().unwrap_or(0),
            ))
            .await;
            if input["fail"] == json!(true) {
                return Err(ToolError::new("the bank said no"));
            }
            if input["keep"] == json!(true) {
                // A clone that outlives the tool: the call must not commit.
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    // Ended: whatever it tries commits nothing (counted below).
                    let _ = tx
                        .execute("INSERT INTO payments VALUES ('after', 1)", &[])
                        .await;
                });
            }
            Ok::<_, ToolError>(json!({ "recorded": amount }))
        })
        .build()
        .unwrap()
}

async fn payment_count(schema: &Schema) -> i64 {
    schema
        .admin
        .query_one(
            &format!("SELECT count(*) FROM {}.payments", schema.name),
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// More concurrent transactional calls than the store's pool has
/// connections, each holding its transaction while its lease renews: the
/// store's own work never waits for them. A failed call's work is rolled
/// back; a commit for a claim taken over commits nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_calls_commit_their_work_with_their_outcome_on_postgres() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url, "transactional").await;
    schema
        .admin
        .batch_execute(&format!(
            "CREATE TABLE {}.payments (key text PRIMARY KEY, amount bigint NOT NULL)",
            schema.name
        ))
        .await
        .unwrap();
    let runtime = Runtime::builder()
        .tool(pg_record_payment())
        .store(schema.store().await)
        // Renewed every 50 ms while the calls hold their transactions.
        .lease(Duration::from_millis(150))
        .build()
        .unwrap();
    const CALLS: usize = 12; // the store's pool has 8 connections
    let calls: Vec<_> = (0..CALLS)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                runtime
                    .call(ToolCall::new(
                        format!("c{i}"),
                        "record",
                        json!({ "amount": i, "hold_ms": 400 }),
                    ))
                    .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let outcome = call.await.unwrap();
        assert_eq!(
            outcome.output(),
            Some(&json!({ "recorded": i })),
            "{outcome:?}"
        );
    }
    assert_eq!(payment_count(&schema).await, CALLS as i64);

    let failed = runtime
        .call(ToolCall::new(
            "bad",
            "record",
            json!({ "amount": 1, "fail": true }),
        ))
        .await;
    assert!(failed.error().is_some(), "{failed:?}");
    assert_eq!(
        payment_count(&schema).await,
        CALLS as i64,
        "its insert rolled back"
    );
    let kept = runtime
        .call(ToolCall::new(
            "kept",
            "record",
            json!({ "amount": 1, "keep": true }),
        ))
        .await;
    let message = kept
        .error()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    assert!(message.contains("outlived the tool"), "{kept:?}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        payment_count(&schema).await,
        CALLS as i64,
        "nothing of it committed"
    );
    assert!(matches!(
        runtime.inbox().stored("bad").await.unwrap().unwrap().state,
        CallState::Settled { .. }
    ));

    // A paused instance's commit, after another took its call over.
    let store = schema.store().await;
    let committed = common::contract::commit_after_takeover(&store, "late", async |extensions| {
        extensions
            .get::<tool_runtime::store::PostgresTransaction>()
            .unwrap()
            .execute("INSERT INTO payments VALUES ('late', 1)", &[])
            .await
            .unwrap();
    })
    .await;
    assert_eq!(committed, Committed::Superseded);
    assert_eq!(
        payment_count(&schema).await,
        CALLS as i64,
        "nothing of it committed"
    );
    schema.drop().await;
}
