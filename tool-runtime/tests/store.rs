//! Stores: the shared contract on the memory and SQLite stores, the SQLite
//! file (corrupt files, migration, two runtimes on one file), and survival
//! of `kill -9` in a real child process, while pending and while running.

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::echo_tool;
use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::{
    CallOutcome, CallState, Decided, MemoryStore, PendingCall, PendingKind, PendingStore, Runtime,
    RuntimeError, SqliteStore, StoreError, ToolCall, Transition,
};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-runtime-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
    let dir = temp_dir("contract");
    let counter = std::sync::atomic::AtomicUsize::new(0);
    common::contract::store_contract("sqlite", || {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SqliteStore::open(dir.join(format!("store-{n}.sqlite"))).unwrap()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_decisions_from_two_connections_to_one_file_claim_each_call_once() {
    let dir = temp_dir("concurrent-decisions");
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
async fn two_runtimes_on_one_file_run_each_approved_call_once() {
    let dir = temp_dir("two-runtimes");
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
        second.pending().await.unwrap().len(),
        20,
        "the second runtime sees the first's calls"
    );
    let mut handles = Vec::new();
    for i in 0..20 {
        for runtime in [first.clone(), second.clone()] {
            handles.push(tokio::spawn(async move {
                runtime.approve(&format!("c{i}")).await
            }));
        }
    }
    for handle in handles {
        match handle.await.unwrap() {
            // The one that ran it, or a later one given the recorded outcome.
            Ok(outcome) => assert!(outcome.output().is_some(), "{outcome:?}"),
            // One that came while the other ran it.
            Err(RuntimeError::Running { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(runs.lock().unwrap().len(), 20, "each call ran once");
    for i in 0..20 {
        let stored = second.stored(&format!("c{i}")).await.unwrap().unwrap();
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
    let dir = temp_dir("corrupt");
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
            .map(|c| c.call_id.as_str())
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

    let dir = temp_dir("sources");
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

/// The tools of the child processes: `transfer` needs approval; `confirm`
/// suspends. Each execution appends a line to `runs.log`.
fn child_runtime(dir: &Path) -> Runtime {
    let (d1, d2) = (dir.to_path_buf(), dir.to_path_buf());
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
    Runtime::builder()
        .tools([transfer, confirm])
        .sqlite_store(dir.join("pending.sqlite"))
        .build()
        .unwrap()
}

/// Run by `pending_calls_survive_sigkill_of_a_child_process` in child processes.
#[test]
#[ignore = "a child process of pending_calls_survive_sigkill_of_a_child_process"]
fn child_process() {
    let (Ok(role), Ok(dir)) = (std::env::var(ROLE), std::env::var(DIR)) else {
        panic!("run by pending_calls_survive_sigkill_of_a_child_process only");
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
            other => panic!("unknown role {other}"),
        }
    });
}

fn spawn_child(role: &str, dir: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
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
    let dir = temp_dir("sigkill");
    let mut first = spawn_child("first", &dir);
    let mut lines = BufReader::new(first.stdout.take().unwrap()).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.ends_with("READY"));
    if !ready {
        let output = first.wait_with_output().unwrap();
        panic!(
            "first child failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    first.kill().unwrap(); // SIGKILL on unix
    let status = first.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "killed with SIGKILL");
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

/// `levels` levels of objects and arrays: an object holding nested arrays.
fn nested(levels: usize) -> Value {
    json!({ "v": (1..levels).fold(json!(1), |inner, _| json!([inner])) })
}

#[tokio::test]
async fn a_model_cannot_poison_the_store_with_deep_arguments() {
    let dir = temp_dir("deep-arguments");
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
    let dir = temp_dir("deep-values");
    let path = dir.join("pending.sqlite");
    let store = SqliteStore::open(&path).unwrap();
    // 127 levels, the most serde_json parses: inside a record that wrapped
    // it, it would be 128 and unreadable.
    let mut call = PendingCall::new("c1", "t", PendingKind::Suspended, nested(127));
    call.payload = Some(nested(127));
    call.messages = vec![nested(126)];
    store.insert(call.clone()).await.unwrap();
    let reopened = SqliteStore::open(&path).expect("every record reads back");
    assert_eq!(reopened.list().await.unwrap(), [call]);

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
    let dir = temp_dir("legacy-record");
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
    assert_eq!(block_on(store.list()).unwrap(), [legacy]);
}

#[tokio::test(flavor = "current_thread")]
async fn sqlite_io_waits_off_the_async_executor() {
    let dir = temp_dir("off-executor");
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
