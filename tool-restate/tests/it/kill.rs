//! The service process killed (SIGKILL) while a tool runs: Restate takes
//! the step again on the next process, and a tool that is not retry-safe is
//! not run twice (the call settles as interrupted) while a retry-safe one
//! runs again to completion.
//!
//! The service runs in a child process: this test binary again, running the
//! ignored test [`serve_tools_until_killed`] with `SERVE_ON` set.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tool_core::{BackgroundConfig, Tool, ToolContext, ToolError};
use tool_restate::{CallRequest, RestateClient, RestateTools};
use tool_runtime::{CallOutcome, Runtime};

use crate::server::Restate;

/// Tools whose every start is a line in the file `STARTS` (the tool and its
/// idempotency key): `charge` (not retry-safe), `sync` (retry-safe) and
/// `ledger` (a background task, not retry-safe), which hang on their first
/// start until killed and finish on any later one.
fn tools(ingress: &str, starts: PathBuf) -> RestateTools {
    RestateTools::new(ingress, move || {
        let tool = |id: &'static str, retry_safe: bool, background: bool| {
            let starts = starts.clone();
            let mut builder = Tool::builder(id)
                .description("Records its start, hangs the first time")
                .retry_safe(retry_safe);
            if background {
                builder = builder.background(BackgroundConfig::new());
            }
            builder
                .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
                    let starts = starts.clone();
                    async move {
                        let before = started(&starts, id);
                        let line = format!("{id} {}\n", ctx.idempotency_key());
                        let mut all = std::fs::read_to_string(&starts).unwrap_or_default();
                        all.push_str(&line);
                        std::fs::write(&starts, all).expect("record the start");
                        if before == 0 {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                        }
                        Ok::<_, ToolError>(json!({ "done": input }))
                    }
                })
                .build()
                .expect("tool")
        };
        let runtime = Runtime::builder().tools([
            tool("charge", false, false),
            tool("sync", true, false),
            tool("ledger", false, true),
        ]);
        #[cfg(feature = "postgres")]
        let runtime = runtime.tool(transfer(starts.clone()));
        runtime
    })
    .expect("tools")
}

/// `transfer` (retry-safe): takes 5 from the account of the table
/// `SERVE_TABLE` once per call (`effects::Once` with the call's idempotency
/// key), records its start, and hangs after its effect the first time.
#[cfg(feature = "postgres")]
fn transfer(starts: PathBuf) -> Tool {
    Tool::builder("transfer")
        .description("Moves money once")
        .retry_safe(true)
        .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
            let starts = starts.clone();
            async move {
                let before = started(&starts, "transfer");
                let mut all = std::fs::read_to_string(&starts).unwrap_or_default();
                all.push_str(&format!("transfer {}\n", ctx.idempotency_key()));
                std::fs::write(&starts, all).expect("record the start");
                let mut client = crate::effects::connect().await.expect("database");
                let table = std::env::var("SERVE_TABLE").expect("SERVE_TABLE");
                let key = ctx.idempotency_key().to_string();
                let result = crate::effects::take_five(&mut client, &table, &key).await;
                if before == 0 {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                Ok::<_, ToolError>(result)
            }
        })
        .build()
        .expect("transfer")
}

/// How many starts of `id` the file records.
fn started(starts: &Path, id: &str) -> usize {
    std::fs::read_to_string(starts)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.split(' ').next() == Some(id))
        .count()
}

/// The idempotency keys the starts of `id` saw.
fn keys(starts: &Path, id: &str) -> Vec<String> {
    std::fs::read_to_string(starts)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix(id)?.strip_prefix(' ').map(str::to_owned))
        .collect()
}

/// The service process: serves the tools on `SERVE_ON` until killed.
#[tokio::test]
#[ignore = "the service process of kill::*, started by them"]
async fn serve_tools_until_killed() {
    let (Ok(port), Ok(ingress), Ok(starts)) = (
        std::env::var("SERVE_ON"),
        std::env::var("SERVE_INGRESS"),
        std::env::var("SERVE_STARTS"),
    ) else {
        return;
    };
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}"))
        .await
        .expect("bind");
    tools(&ingress, PathBuf::from(starts)).serve(listener).await;
}

/// A service process on `port`.
fn service(port: u16, ingress: &str, starts: &Path, table: &str) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .env("SERVE_TABLE", table)
        .args([
            "--exact",
            "kill::serve_tools_until_killed",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SERVE_ON", port.to_string())
        .env("SERVE_INGRESS", ingress)
        .env("SERVE_STARTS", starts)
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("service process")
}

/// Waits for `check`, at most 60 s.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "waited 60 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Calls `tool`, kills the service while it runs, starts another: the
/// call's outcome and how often the tool started.
async fn killed_mid_tool(tool: &str, table: &str) -> Option<(CallOutcome, Vec<String>)> {
    let server = Restate::start().await?;
    let dir = tempfile::tempdir().expect("dir");
    let starts = dir.path().join("starts");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let mut first = service(port, &server.ingress, &starts, table);
    let uri = format!("http://127.0.0.1:{port}");
    let started_at = Instant::now();
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            started_at.elapsed() < Duration::from_secs(60),
            "the service process did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.register(&uri).await;

    let client = RestateClient::new(&server.ingress);
    let request = CallRequest::new(tool, json!({ "n": 1 }));
    // A background task's outcome is waited for.
    let calling = tokio::spawn(async move {
        match client.call("k1", request).await? {
            CallOutcome::BackgroundStarted { .. } => client.wait("k1").await,
            outcome => Ok(outcome),
        }
    });
    until("the tool's first start", || started(&starts, tool) == 1).await;
    first.kill().await.expect("SIGKILL");
    let _second = service(port, &server.ingress, &starts, table);
    let outcome = tokio::time::timeout(Duration::from_secs(120), calling)
        .await
        .expect("the call ends once the service is back")
        .expect("task")
        .expect("call");
    Some((outcome, keys(&starts, tool)))
}

/// Kills the service while `tool` (not retry-safe) runs: it started once
/// and the call settled as interrupted, for the model to read.
async fn interrupted_not_run_twice(tool: &str) {
    let Some((outcome, starts)) = killed_mid_tool(tool, "").await else {
        return;
    };
    assert_eq!(starts.len(), 1, "started once");
    match outcome {
        CallOutcome::Failed { error } => assert!(
            error.message().contains("interrupted"),
            "the model reads that it was interrupted: {error:?}"
        ),
        other => panic!("expected an interrupted call, got {other:?}"),
    }
}

#[tokio::test]
async fn a_tool_that_is_not_retry_safe_is_settled_interrupted_not_run_twice() {
    interrupted_not_run_twice("charge").await;
}

#[tokio::test]
async fn a_background_task_that_is_not_retry_safe_is_settled_interrupted_not_run_twice() {
    interrupted_not_run_twice("ledger").await;
}

#[tokio::test]
async fn a_retry_safe_tool_runs_again_after_the_kill() {
    let Some((outcome, starts)) = killed_mid_tool("sync", "").await else {
        return;
    };
    assert_eq!(starts.len(), 2, "ran again");
    assert_eq!(starts[0], starts[1], "with the same idempotency key");
    assert_eq!(outcome.output(), Some(&json!({ "done": { "n": 1 } })));
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn an_effect_in_postgresql_keyed_by_the_idempotency_key_happens_once_across_the_kill() {
    let Some(client) = crate::effects::connect().await else {
        return;
    };
    let table = crate::effects::account(&client).await;
    let Some((outcome, starts)) = killed_mid_tool("transfer", &table).await else {
        return;
    };
    assert_eq!(starts.len(), 2, "ran again after the kill");
    assert_eq!(
        outcome.output(),
        Some(&json!({ "taken": 5 })),
        "the first execution's result"
    );
    assert_eq!(
        crate::effects::balance(&client, &table).await,
        95,
        "taken once"
    );
}
