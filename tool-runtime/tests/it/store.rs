//! Stores: the shared contract on the memory and SQLite stores, the SQLite
//! file (corrupt files, migration, two runtimes on one file), and survival
//! of `kill -9` in a real child process, while pending and while running.

use crate::common;

use common::calls;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::echo_tool;
use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::store::{
    AuditLog, CallStore, Decided, MemoryStore, RunStore, SqliteStore, Transition,
};
use tool_runtime::{
    CallOutcome, CallState, PendingCall, PendingKind, Runtime, RuntimeError, StoreError, ToolCall,
};

/// A new directory, removed with what it holds when the guard drops, also
/// when the test fails: keep the guard until the test's end.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tool-runtime-test-{name}-"))
        .tempdir()
        .unwrap()
}

/// A store file in `dir` holding one call, `c-bad`, whose record is not JSON.
fn store_with_unreadable_record(dir: &Path) -> PathBuf {
    let path = dir.join("bad-record.sqlite");
    let call = PendingCall::new("c-bad", "t", PendingKind::Approval, json!({}));
    block_on(SqliteStore::open(&path).unwrap().insert(call)).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE calls SET record = '{not json' WHERE call_id = 'c-bad'",
            [],
        )
        .unwrap();
    path
}

/// Runs a store future from a test that has no tokio runtime of its own.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_sqlite_stores_meet_the_store_contract() {
    common::contract::store_contract("memory", MemoryStore::new).await;
    let tmp = temp_dir("contract");
    let dir = tmp.path().to_path_buf();
    let counter = std::sync::atomic::AtomicUsize::new(0);
    common::contract::store_contract("sqlite", || {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SqliteStore::open(dir.join(format!("store-{n}.sqlite"))).unwrap()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_and_typed_decisions_settle_once_on_the_memory_and_sqlite_stores() {
    common::respond::respond_decisions("memory", std::sync::Arc::new(MemoryStore::new())).await;
    let tmp = temp_dir("respond");
    let path = tmp.path().join("store.sqlite");
    common::respond::respond_decisions("sqlite", SqliteStore::open(path).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_deciders_on_each_of_200_items_make_one_decision_each_on_memory_and_sqlite() {
    let memory = std::sync::Arc::new(MemoryStore::new());
    let shared = (0..5).map(|_| std::sync::Arc::clone(&memory)).collect();
    common::deciders::five_deciders_per_item("memory", shared, 200).await;
    let tmp = temp_dir("deciders");
    let path = tmp.path().join("store.sqlite");
    let files = (0..5).map(|_| SqliteStore::open(&path).unwrap()).collect();
    common::deciders::five_deciders_per_item("sqlite", files, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_of_five_approvers_run_each_call_once_on_memory_and_sqlite() {
    let memory = std::sync::Arc::new(MemoryStore::new());
    let shared = (0..5).map(|_| std::sync::Arc::clone(&memory)).collect();
    common::deciders::three_of_five_approvers_per_item("memory", shared, 40).await;
    let tmp = temp_dir("quorum");
    let path = tmp.path().join("store.sqlite");
    let files = (0..5).map(|_| SqliteStore::open(&path).unwrap()).collect();
    common::deciders::three_of_five_approvers_per_item("sqlite", files, 40).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_deciders_granting_and_editing_run_each_call_once_on_memory_and_sqlite() {
    let memory = std::sync::Arc::new(MemoryStore::new());
    let shared = (0..3).map(|_| std::sync::Arc::clone(&memory)).collect();
    common::deciders::twenty_deciders_granting_and_editing("memory", shared, 20).await;
    let tmp = temp_dir("editing");
    let path = tmp.path().join("store.sqlite");
    let files = (0..3).map(|_| SqliteStore::open(&path).unwrap()).collect();
    common::deciders::twenty_deciders_granting_and_editing("sqlite", files, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn futures_dropped_at_random_points_lose_no_call_on_the_memory_and_sqlite_stores() {
    common::drops::dropped_futures_lose_nothing(MemoryStore::new(), "memory", 60).await;
    let tmp = temp_dir("drops");
    let dir = tmp.path().to_path_buf();
    let store = SqliteStore::open(dir.join("drops.sqlite")).unwrap();
    common::drops::dropped_futures_lose_nothing(store, "sqlite", 60).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_under_load_on_a_short_lease_never_stick_on_the_sqlite_store() {
    let tmp = temp_dir("load");
    let store = SqliteStore::open(tmp.path().join("load.sqlite")).unwrap();
    common::drops::decisions_under_load_never_stick(store, "sqlite", 300, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_decisions_from_two_connections_to_one_file_claim_each_call_once() {
    let tmp = temp_dir("concurrent-decisions");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    for i in 0..100 {
        a.insert(PendingCall::new(
            format!("c{i}"),
            "t",
            PendingKind::Approval,
            json!(i),
        ))
        .await
        .unwrap();
    }
    let decider = |store: SqliteStore, owner: &'static str| {
        tokio::spawn(async move {
            let mut claimed = 0;
            for i in 0..100 {
                let run = Transition::Run {
                    owner: owner.into(),
                    lease: std::time::Duration::from_secs(60),
                    resume_data: None,
                };
                if let Decided::Won(_) = store
                    .decide(&format!("c{i}"), PendingKind::Approval, run)
                    .await
                    .unwrap()
                {
                    claimed += 1;
                }
            }
            claimed
        })
    };
    let (ta, tb) = (decider(a.clone(), "a"), decider(b, "b"));
    assert_eq!(
        ta.await.unwrap() + tb.await.unwrap(),
        100,
        "every call claimed exactly once"
    );
    assert!(a.list().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_saves_from_four_connections_to_one_file_lose_no_update() {
    let tmp = temp_dir("concurrent-runs");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    let stores = (0..4).map(|_| SqliteStore::open(&path).unwrap()).collect();
    common::contract::run_updates_from_several_stores_lose_nothing(stores, "r1", 25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runtimes_on_one_file_run_each_approved_call_once() {
    let tmp = temp_dir("two-runtimes");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let first = Runtime::builder()
        .tool(tool.clone())
        .sqlite_store(&path)
        .build()
        .unwrap();
    let second = Runtime::builder()
        .tool(tool)
        .sqlite_store(&path)
        .build()
        .unwrap();
    for i in 0..20 {
        let outcome = first
            .call(ToolCall::new(format!("c{i}"), "pay", json!({ "n": i })))
            .await;
        assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    }
    assert_eq!(
        second.inbox().waiting().await.unwrap().len(),
        20,
        "the second runtime sees the first's calls"
    );
    common::approve_all_at_once(&[first.clone(), second.clone()], 0..=19).await;
    assert_eq!(runs.lock().unwrap().len(), 20, "each call ran once");
    for i in 0..20 {
        let stored = second
            .inbox()
            .stored(&format!("c{i}"))
            .await
            .unwrap()
            .unwrap();
        assert!(
            matches!(stored.state, CallState::Settled { .. }),
            "{stored:?}"
        );
        // Asked again on either runtime: the recorded outcome, no new run.
        let again = first.approve(&format!("c{i}")).await.unwrap();
        assert_eq!(again.output().unwrap()["echo"]["n"], i);
    }
    assert_eq!(runs.lock().unwrap().len(), 20);
}

#[test]
fn a_corrupt_store_file_is_an_error_naming_it_and_one_unreadable_record_does_not_stop_the_store() {
    let tmp = temp_dir("corrupt");
    let dir = tmp.path().to_path_buf();
    for (name, bytes) in [
        ("short.sqlite", b"garbage!".to_vec()),
        ("long.sqlite", b"not a database at all. ".repeat(200)),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let error = SqliteStore::open(&path).unwrap_err();
        assert!(
            matches!(error, StoreError::Corrupt { .. }),
            "{name}: {error:?}"
        );
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "the file is left untouched"
        );
        let error = Runtime::builder().sqlite_store(&path).build().unwrap_err();
        assert!(error.to_string().contains(name), "{error}");
    }

    let error = SqliteStore::open(&dir).unwrap_err();
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&dir.display().to_string()),
        "{error}"
    );

    let other = dir.join("other-app.sqlite");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch(
            "CREATE TABLE invoices (id INTEGER PRIMARY KEY); INSERT INTO invoices VALUES (1);",
        )
        .unwrap();
    let error = SqliteStore::open(&other).unwrap_err();
    assert!(error.to_string().contains("another program"), "{error}");

    let bad_record = store_with_unreadable_record(&dir);
    // One unreadable record does not stop the store (the durable-calls
    // issue: it used to make every pending call unreachable): it opens and
    // serves the others, and the bad call is an error naming it.
    let store = SqliteStore::open(&bad_record).expect("opens despite one bad record");
    block_on(store.insert(PendingCall::new(
        "c-good",
        "t",
        PendingKind::Approval,
        json!({}),
    )))
    .unwrap();
    let listed = block_on(store.list()).unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|c| c.call.head.call_id.as_str())
            .collect::<Vec<_>>(),
        ["c-good"]
    );
    let error = block_on(store.get("c-bad")).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("bad-record.sqlite") && message.contains("c-bad"),
        "{message}"
    );
    let claim = || Transition::Run {
        owner: "a".into(),
        lease: std::time::Duration::from_secs(60),
        resume_data: None,
    };
    assert!(block_on(store.decide("c-bad", PendingKind::Approval, claim())).is_err());
    assert!(
        block_on(store.get("c-bad")).is_err(),
        "left in place for the operator"
    );
    assert!(matches!(
        block_on(store.decide("c-good", PendingKind::Approval, claim())).unwrap(),
        Decided::Won(_)
    ));
}

#[test]
fn store_errors_keep_the_underlying_error_as_their_source() {
    use std::error::Error as _;

    let tmp = temp_dir("sources");
    let dir = tmp.path().to_path_buf();
    let garbage = dir.join("garbage.sqlite");
    std::fs::write(&garbage, b"not a database at all. ".repeat(200)).unwrap();
    let error = SqliteStore::open(&garbage).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    let source = error.source().expect("SQLite's error is the source");
    assert!(error.to_string().contains(&source.to_string()), "{error}");
    // Through the runtime: RuntimeError -> StoreError -> SQLite's error.
    let error = Runtime::builder()
        .sqlite_store(&garbage)
        .build()
        .unwrap_err();
    let store_error = error.source().expect("the store error");
    assert!(store_error.source().is_some(), "{error:?}");

    let bad_record = store_with_unreadable_record(&dir);
    let store = SqliteStore::open(&bad_record).unwrap();
    let error = block_on(store.get("c-bad")).unwrap_err();
    assert!(
        error.source().is_some_and(|e| e.is::<serde_json::Error>()),
        "the parse error is the source: {error:?}"
    );

    // A directory is refused before SQLite sees it: nothing underneath.
    let error = SqliteStore::open(&dir).unwrap_err();
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(error.source().is_none(), "{error:?}");
}

// ---- kill -9 in a real child process --------------------------------------

const ROLE: &str = "TOOL_RUNTIME_TEST_CHILD_ROLE";
const DIR: &str = "TOOL_RUNTIME_TEST_CHILD_DIR";

fn record(dir: &Path, line: &str) {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("runs.log"))
        .unwrap();
    writeln!(log, "{line}").unwrap();
}

/// How long a claim of the child processes' runtimes lasts: short, so that
/// the test recovers a killed child's calls quickly.
const CHILD_LEASE: std::time::Duration = std::time::Duration::from_millis(300);

/// The tools of the child processes: `transfer` needs approval; `confirm`
/// suspends; `pay` and `sync` (retry-safe) need approval and never finish
/// their first run; `report` is a background task with one retry that
/// hangs on its first attempt. Each execution appends a line to `runs.log`.
fn child_runtime(dir: &Path) -> Runtime {
    let (d1, d2) = (dir.to_path_buf(), dir.to_path_buf());
    let interruptible = ["pay", "sync"].map(|id| {
        let dir = dir.to_path_buf();
        Tool::builder(id)
            .description("Never finishes its first run")
            .require_approval(true)
            .retry_safe(id == "sync")
            .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
                record(&dir, &format!("{}:{}", ctx.tool_id(), ctx.attempt()));
                async move {
                    if ctx.attempt() == 1 {
                        std::future::pending::<()>().await;
                    }
                    Ok::<_, ToolError>(json!({ "attempt": ctx.attempt() }))
                }
            })
            .build()
            .unwrap()
    });
    let transfer = Tool::builder("transfer")
        .description("Sends money")
        .require_approval(true)
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            record(&d1, &format!("transfer:{}", input["amount"]));
            async move { Ok::<_, ToolError>(json!({ "sent": input["amount"] })) }
        })
        .build()
        .unwrap();
    let confirm = Tool::builder("confirm")
        .description("Asks first")
        .resume_schema(json!({ "type": "string" }))
        .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
            match ctx.resume_data() {
                None => record(&d2, "confirm:first"),
                Some(data) => record(
                    &d2,
                    &format!("confirm:resumed:{data}:{}", ctx.suspend_payload().unwrap()),
                ),
            }
            async move {
                match ctx.resume_data() {
                    None => ctx.suspend(json!({ "question": "sure?" })),
                    Some(data) => Ok::<_, ToolError>(json!({ "answer": data })),
                }
            }
        })
        .build()
        .unwrap();
    let report_dir = dir.to_path_buf();
    let report = Tool::builder("report")
        .description("A background task that hangs on its first attempt")
        .background(tool_core::BackgroundConfig::new().max_retries(1))
        .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
            record(&report_dir, &format!("report:{}", ctx.attempt()));
            async move {
                if ctx.attempt() == 1 {
                    std::future::pending::<()>().await;
                }
                Ok::<_, ToolError>(json!({ "attempt": ctx.attempt() }))
            }
        })
        .build()
        .unwrap();
    Runtime::builder()
        .tools([transfer, confirm, report])
        .tools(interruptible)
        .sqlite_store(dir.join("pending.sqlite"))
        .lease(CHILD_LEASE)
        .build()
        .unwrap()
}

/// Run by the SIGKILL tests in child processes (the role says which part).
#[test]
#[ignore = "a child process of the SIGKILL tests"]
fn child_process() {
    let (Ok(role), Ok(dir)) = (std::env::var(ROLE), std::env::var(DIR)) else {
        panic!("run by the SIGKILL tests only");
    };
    let dir = PathBuf::from(dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let runtime = child_runtime(&dir);
        match role.as_str() {
            "first" => {
                let a = runtime
                    .call(ToolCall::new(
                        "c-transfer",
                        "transfer",
                        json!({ "amount": 10 }),
                    ))
                    .await;
                assert!(matches!(a, CallOutcome::ApprovalRequired { .. }), "{a:?}");
                let b = runtime
                    .call(ToolCall::new("c-confirm", "confirm", json!({})))
                    .await;
                assert!(matches!(b, CallOutcome::Suspended { .. }), "{b:?}");
                println!("READY");
                std::io::stdout().flush().unwrap();
                std::thread::sleep(std::time::Duration::from_secs(60));
            }
            "second" => {
                let a = runtime.approve("c-transfer").await.unwrap();
                println!("APPROVED {}", a.output().unwrap());
                let b = runtime.resume("c-confirm", json!("yes")).await.unwrap();
                println!("RESUMED {}", b.output().unwrap());
                // Asked again: the recorded outcomes, no second run.
                let again = runtime.approve("c-transfer").await.unwrap();
                println!("AGAIN {}", again.output().unwrap());
                let again = runtime.resume("c-confirm", json!("no")).await.unwrap();
                println!("AGAIN {}", again.output().unwrap());
            }
            "runner" => {
                for tool_id in ["pay", "sync"] {
                    let call_id = format!("c-{tool_id}");
                    let waiting = runtime
                        .call(ToolCall::new(call_id.as_str(), tool_id, json!({})))
                        .await;
                    assert!(matches!(waiting, CallOutcome::ApprovalRequired { .. }));
                    drop(tokio::spawn(runtime.approve(&call_id)));
                }
                let started = runtime
                    .call(ToolCall::new("c-report", "report", json!({})))
                    .await;
                assert!(matches!(started, CallOutcome::BackgroundStarted { .. }));
                let log = dir.join("runs.log");
                while std::fs::read_to_string(&log).map_or(0, |l| l.lines().count()) < 3 {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                println!("RUNNING");
                std::io::stdout().flush().unwrap();
                std::future::pending::<()>().await;
            }
            other => panic!("unknown role {other}"),
        }
    });
}

fn spawn_child(role: &str, dir: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            common::test_name(module_path!(), "child_process").as_str(),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(DIR, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn pending_calls_survive_sigkill_of_a_child_process() {
    let tmp = temp_dir("sigkill");
    let dir = tmp.path().to_path_buf();
    let mut first = spawn_child("first", &dir);
    let mut lines = BufReader::new(first.stdout.take().unwrap()).lines();
    wait_for_line(&mut first, &mut lines, "READY");
    kill_9(&mut first);
    assert_eq!(
        std::fs::read_to_string(dir.join("runs.log")).unwrap(),
        "confirm:first\n"
    );

    let second = spawn_child("second", &dir).wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(
        second.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(stdout.contains(r#"APPROVED {"sent":10}"#), "{stdout}");
    assert!(stdout.contains(r#"RESUMED {"answer":"yes"}"#), "{stdout}");
    assert!(stdout.contains(r#"AGAIN {"sent":10}"#), "{stdout}");
    assert!(stdout.contains(r#"AGAIN {"answer":"yes"}"#), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(dir.join("runs.log")).unwrap(),
        "confirm:first\ntransfer:10\nconfirm:resumed:\"yes\":{\"question\":\"sure?\"}\n",
        "each call completed exactly once"
    );
    assert!(
        block_on(
            SqliteStore::open(dir.join("pending.sqlite"))
                .unwrap()
                .list()
        )
        .unwrap()
        .is_empty()
    );
}

/// Reads the child's output until a line ends with `marker`; a child that
/// exits first fails the test with its stderr.
fn wait_for_line(
    child: &mut std::process::Child,
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    marker: &str,
) {
    if !lines
        .map_while(Result::ok)
        .any(|line| line.ends_with(marker))
    {
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        panic!("the child exited before {marker}: {stderr}");
    }
}

fn kill_9(child: &mut std::process::Child) {
    child.kill().unwrap(); // SIGKILL on unix
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "killed with SIGKILL");
}

#[tokio::test]
async fn calls_running_in_a_process_killed_with_sigkill_are_recovered_per_the_tools_declaration() {
    let tmp = temp_dir("sigkill-running");
    let dir = tmp.path().to_path_buf();
    let mut runner = spawn_child("runner", &dir);
    let mut lines = BufReader::new(runner.stdout.take().unwrap()).lines();
    wait_for_line(&mut runner, &mut lines, "RUNNING");
    kill_9(&mut runner);

    let survivor = child_runtime(&dir);
    for call_id in ["c-pay", "c-sync", "c-report"] {
        let stored = survivor.inbox().stored(call_id).await.unwrap().unwrap();
        assert!(
            matches!(stored.state, CallState::Running { .. }),
            "{stored:?}"
        );
    }
    tokio::time::sleep(CHILD_LEASE + std::time::Duration::from_millis(200)).await;
    let mut recovered = survivor.recover().await.unwrap();
    recovered.sort_by(|a, b| a.call_id.cmp(&b.call_id));
    assert_eq!(recovered.len(), 3, "{recovered:?}");
    let (pay, report, sync) = (&recovered[0], &recovered[1], &recovered[2]);
    // The background task: run again (its declared retry), and `wait` in
    // the new process reads its outcome.
    assert!(report.rerun);
    assert_eq!(report.outcome.output(), Some(&json!({ "attempt": 2 })));
    assert_eq!(survivor.wait("c-report").await.unwrap(), report.outcome);
    assert!(!pay.rerun);
    let message = pay.outcome.error().expect("settled as failed").message();
    assert!(message.contains("was interrupted"), "{message}");
    assert!(sync.rerun);
    assert_eq!(sync.outcome.output(), Some(&json!({ "attempt": 2 })));
    assert_eq!(survivor.approve("c-pay").await.unwrap(), pay.outcome);
    let mut runs: Vec<String> = std::fs::read_to_string(dir.join("runs.log"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    runs.sort();
    assert_eq!(
        runs,
        ["pay:1", "report:1", "report:2", "sync:1", "sync:2"],
        "pay never ran again"
    );
}

#[test]
fn a_store_file_of_the_previous_layout_is_migrated_and_a_newer_one_refused() {
    let tmp = temp_dir("layouts");
    let dir = tmp.path().to_path_buf();
    let old = dir.join("layout-1.sqlite");
    let call = PendingCall::new("c-old", "t", PendingKind::Approval, json!({ "n": 1 }));
    let conn = rusqlite::Connection::open(&old).unwrap();
    conn.execute_batch(
        "CREATE TABLE pending (call_id TEXT PRIMARY KEY NOT NULL, kind TEXT NOT NULL,
             tool_id TEXT NOT NULL, record TEXT NOT NULL);
         PRAGMA application_id = 1953460076;
         PRAGMA user_version = 1;",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO pending VALUES ('c-old', 'approval', 't', ?1)",
        [serde_json::to_string(&call).unwrap()],
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(&old).expect("layout 1 is migrated");
    assert_eq!(
        calls(block_on(store.list()).unwrap()),
        std::slice::from_ref(&call)
    );
    assert_eq!(user_version(&old), 9);
    assert_eq!(
        block_on(store.save_run("r1", None, false, json!({}))).unwrap(),
        Some(1),
        "and gains the runs table"
    );
    let rule = tool_runtime::StandingRule::new(
        "r1",
        "t",
        std::time::SystemTime::now() + std::time::Duration::from_secs(60),
    );
    assert!(
        block_on(tool_runtime::store::RuleStore::add_rule(&store, rule)).unwrap(),
        "and the rules table"
    );
    let by_age = tool_runtime::store::PendingQuery::waiting_for_people()
        .order(tool_runtime::store::PendingOrder::Asked);
    assert_eq!(
        calls(block_on(store.list_page(by_age)).unwrap()),
        [call],
        "and the orders by time (a call that does not say when: last)"
    );
    let noted = tool_runtime::store::Notification::new(
        tool_runtime::store::NotificationKind::ApprovalRequested,
        "c-new",
        "t",
        json!({}),
    );
    let new_call = PendingCall::new("c-new", "t", PendingKind::Approval, json!({}));
    block_on(store.insert_notifying(new_call, vec![noted])).unwrap();
    let outbox =
        tool_runtime::store::Outbox::outbox(&store, tool_runtime::store::OutboxQuery::all());
    assert_eq!(block_on(outbox).unwrap().len(), 1, "and the outbox");

    let newer = dir.join("layout-10.sqlite");
    drop(SqliteStore::open(&newer).unwrap());
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute_batch("PRAGMA user_version = 10")
        .unwrap();
    let error = SqliteStore::open(&newer).unwrap_err().to_string();
    assert!(
        error.contains("layout-10.sqlite")
            && error.contains("version 10")
            && error.contains("reads 9"),
        "{error}"
    );
}

fn user_version(path: &Path) -> i32 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap()
}

/// A file of layout 2 (calls with their lifecycle, no runs), as the build
/// before agent runs wrote it: its schema by hand, one call of each state.
#[test]
fn a_store_file_of_layout_2_gains_the_runs_table_and_keeps_its_calls() {
    let tmp = temp_dir("layout-2");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("layout-2.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE calls (
             call_id TEXT PRIMARY KEY NOT NULL,
             kind TEXT NOT NULL,
             tool_id TEXT NOT NULL,
             state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'settled')),
             owner TEXT,
             lease_expires_at INTEGER,
             attempt INTEGER NOT NULL DEFAULT 0,
             record TEXT NOT NULL,
             resume_data TEXT,
             outcome TEXT,
             settled_at INTEGER
         );
         CREATE INDEX calls_by_state ON calls (state, lease_expires_at, settled_at);
         PRAGMA application_id = 1953460076;
         PRAGMA user_version = 2;",
    )
    .unwrap();
    let pending = PendingCall::new("c-pending", "t", PendingKind::Approval, json!({ "n": 1 }));
    let running = PendingCall::new("c-running", "t", PendingKind::Task, json!({ "n": 2 }));
    for (call, state, owner, lease) in [
        (&pending, "pending", None, None),
        (&running, "running", Some("dead"), Some(0_i64)),
    ] {
        conn.execute(
            "INSERT INTO calls (call_id, kind, tool_id, state, owner, lease_expires_at, attempt, record)
             VALUES (?1, ?2, 't', ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![
                call.head.call_id,
                call.kind.as_str(),
                state,
                owner,
                lease,
                i64::from(owner.is_some()),
                serde_json::to_string(call).unwrap()
            ],
        )
        .unwrap();
    }
    drop(conn);

    let store = SqliteStore::open(&path).expect("layout 2 is migrated");
    assert_eq!(user_version(&path), 9);
    assert_eq!(calls(block_on(store.list()).unwrap()), [pending]);
    let kept = block_on(store.get("c-running")).unwrap().unwrap();
    assert!(
        matches!(&kept.state, CallState::Running { owner, .. } if owner == "dead"),
        "{kept:?}"
    );
    assert_eq!((kept.call, kept.attempt, kept.epoch), (running, 1, 0));
    // Layout 4's fencing tokens: taking the old claim over draws one.
    let taken = block_on(store.recover_expired(
        "new",
        std::time::Duration::from_secs(60),
        &["t".to_owned()],
    ))
    .unwrap();
    assert_eq!(taken.len(), 1);
    assert!(taken[0].epoch > 0);
    // The runs table is there, and survives reopening.
    assert_eq!(
        block_on(store.save_run("r1", None, false, json!({ "step": 1 }))).unwrap(),
        Some(1)
    );
    // Layout 6's audit log is there.
    let entry = tool_runtime::store::AuditEntry::new(
        tool_runtime::store::AuditKind::Requested,
        "c-running",
        "t",
        "approval",
    );
    assert_eq!(block_on(store.append_audit(entry)).unwrap(), 1);
    drop(store);
    let reopened = SqliteStore::open(&path).expect("layout 6 opens as it is");
    let run = block_on(reopened.load_run("r1")).unwrap().unwrap();
    assert_eq!((run.revision, run.record), (1, json!({ "step": 1 })));
    assert_eq!(user_version(&path), 9);
}

#[test]
fn an_unreadable_run_is_an_error_naming_it_and_does_not_stop_the_store() {
    let tmp = temp_dir("bad-run");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    let store = SqliteStore::open(&path).unwrap();
    block_on(store.save_run("r-bad", None, false, json!({}))).unwrap();
    block_on(store.save_run("r-good", None, false, json!([1]))).unwrap();
    block_on(store.insert(PendingCall::new(
        "c1",
        "t",
        PendingKind::Approval,
        json!({}),
    )))
    .unwrap();
    drop(store);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE runs SET record = '{not json' WHERE run_id = 'r-bad'",
            [],
        )
        .unwrap();
    let store = SqliteStore::open(&path).expect("an unreadable run does not stop the store");
    let message = block_on(store.load_run("r-bad")).unwrap_err().to_string();
    assert!(
        message.contains("\"r-bad\"") && message.contains("pending.sqlite"),
        "{message}"
    );
    assert_eq!(
        block_on(store.load_run("r-good")).unwrap().unwrap().record,
        json!([1])
    );
    assert_eq!(block_on(store.list()).unwrap().len(), 1);
}

/// `levels` levels of objects and arrays: an object holding nested arrays.
fn nested(levels: usize) -> Value {
    json!({ "v": (1..levels).fold(json!(1), |inner, _| json!([inner])) })
}

#[tokio::test]
async fn a_model_cannot_poison_the_store_with_deep_arguments() {
    let tmp = temp_dir("deep-arguments");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    let (tool, runs) = echo_tool("deep", |b| b.require_approval(true));
    let runtime = Runtime::builder()
        .tool(tool.clone())
        .sqlite_store(&path)
        .build()
        .unwrap();
    // Deeper than admission allows: a model-readable error, nothing stored.
    let too_deep = nested(tool_core::MAX_NESTING + 1).to_string();
    let refused = runtime.call(ToolCall::new("c0", "deep", too_deep)).await;
    let error = refused.error().expect("refused at admission");
    assert_eq!(error.kind(), tool_core::ErrorKind::InputValidation);
    assert!(
        error.message().contains("Nested deeper than 64 levels"),
        "{}",
        error.message()
    );
    // As deep as admission allows: stored, read back by a new runtime, run.
    let deepest = nested(tool_core::MAX_NESTING).to_string();
    let waiting = runtime.call(ToolCall::new("c1", "deep", deepest)).await;
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );
    let reopened = Runtime::builder()
        .tool(tool)
        .sqlite_store(&path)
        .build()
        .unwrap();
    let done = reopened.approve("c1").await.unwrap();
    assert!(done.output().is_some(), "{done:?}");
    assert_eq!(runs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn values_as_deep_as_a_json_parser_reads_are_stored_readably_and_deeper_ones_are_refused() {
    let tmp = temp_dir("deep-values");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    let store = SqliteStore::open(&path).unwrap();
    // 127 levels, the most serde_json parses: inside a record that wrapped
    // it, it would be 128 and unreadable.
    let mut call = PendingCall::new("c1", "t", PendingKind::Suspended, nested(127));
    call.payload = Some(nested(127));
    call.head.messages = vec![nested(126)];
    store.insert(call.clone()).await.unwrap();
    let reopened = SqliteStore::open(&path).expect("every record reads back");
    assert_eq!(calls(reopened.list().await.unwrap()), [call]);

    let deeper = PendingCall::new("c2", "t", PendingKind::Suspended, nested(200));
    let error = reopened.insert(deeper).await.unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("\"c2\"")
            && message.contains("arguments")
            && message.contains("127 levels"),
        "{message}"
    );
    assert!(SqliteStore::open(&path).is_ok(), "the file stays readable");
}

#[test]
fn records_written_before_values_were_kept_as_text_still_read() {
    let tmp = temp_dir("legacy-record");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    drop(SqliteStore::open(&path).unwrap());
    let legacy = PendingCall::new("c-old", "t", PendingKind::Suspended, json!({ "a": [1] }));
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO calls (call_id, kind, tool_id, state, record) VALUES ('c-old', 'suspended', 't', 'pending', ?1)",
            [serde_json::to_string(&legacy).unwrap()],
        )
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(calls(block_on(store.list()).unwrap()), [legacy]);
}

#[tokio::test(flavor = "current_thread")]
async fn sqlite_io_waits_off_the_async_executor() {
    let tmp = temp_dir("off-executor");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    let store = SqliteStore::open(&path).unwrap();
    // Another connection holds the write lock: the store's insert waits for
    // it (SQLite's busy wait), which must not be on the executor's one thread.
    let blocker = rusqlite::Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let insert = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .insert(PendingCall::new(
                    "c1",
                    "t",
                    PendingKind::Approval,
                    json!({}),
                ))
                .await
        }
    });
    // Were the insert blocking this thread, the sleep would end only after
    // the insert gave up or got the lock.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!insert.is_finished(), "the insert still waits for the lock");
    blocker.execute_batch("COMMIT").unwrap();
    insert.await.unwrap().unwrap();
    assert_eq!(store.list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_on_a_call_purged_by_the_size_bound_says_it_was_purged_on_every_runtime_of_the_store()
 {
    let tmp = temp_dir("size-bound");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("pending.sqlite");
    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let bounded = Runtime::builder()
        .tool(tool.clone())
        .sqlite_store(&path)
        .settled_limit(2)
        .build()
        .unwrap();
    assert_eq!(bounded.retention().max_settled, 2);
    for i in 0..4 {
        let id = format!("c{i}");
        bounded
            .call(ToolCall::new(&id, "pay", json!({ "n": i })))
            .await;
        bounded.approve(&id).await.unwrap();
    }
    assert_eq!(runs.lock().unwrap().len(), 4);
    // A runtime purges after an eighth of its bound in settlements, at
    // least one: here after every approval, so c0 and c1 are gone. Another
    // runtime on the file (its own default bound) says so too.
    let other = Runtime::builder()
        .tool(tool)
        .sqlite_store(&path)
        .build()
        .unwrap();
    for runtime in [&bounded, &other] {
        for id in ["c0", "c1"] {
            let error = runtime.approve(id).await.unwrap_err();
            assert!(matches!(error, RuntimeError::Purged { .. }), "{error:?}");
            let message = error.to_string();
            assert!(
                message.contains(&format!(
                    "call \"{id}\" settled, but its outcome was purged"
                )) && message.contains("settled_limit"),
                "{message}"
            );
            assert!(matches!(
                runtime.decline(id, None).await,
                Err(RuntimeError::Purged { .. })
            ));
        }
        assert_eq!(
            runtime.approve("c3").await.unwrap().output(),
            Some(&json!({ "echo": { "n": 3 } })),
            "the newest kept"
        );
        assert!(matches!(
            runtime.approve("never").await,
            Err(RuntimeError::UnknownCall { .. })
        ));
    }
    assert_eq!(runs.lock().unwrap().len(), 4, "nothing ran again");
}

#[tokio::test]
async fn runtime_errors_quote_a_huge_id_as_a_bounded_excerpt() {
    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let huge = "x".repeat(1 << 20);
    let bounded = |message: String| {
        assert!(
            message.len() < 1_000 && message.contains("(1048576 bytes in all)"),
            "{message}"
        );
    };
    bounded(runtime.approve(&huge).await.unwrap_err().to_string());
    bounded(runtime.decline(&huge, None).await.unwrap_err().to_string());
    bounded(
        runtime
            .resume(&huge, json!(1))
            .await
            .unwrap_err()
            .to_string(),
    );
    bounded(runtime.cancel(&huge).unwrap_err().to_string());
    // A call with such an id is refused by the store (on memory as on
    // SQLite or PostgreSQL), in a bounded message naming the limit.
    let outcome = runtime
        .call(ToolCall::new(huge.as_str(), "pay", json!({})))
        .await;
    let message = outcome.error().expect("not stored").message().to_owned();
    bounded(message.clone());
    assert!(message.contains("at most 1024 bytes"), "{message}");
    assert!(runtime.inbox().waiting().await.unwrap().is_empty());
    assert!(runs.lock().unwrap().is_empty());
}
