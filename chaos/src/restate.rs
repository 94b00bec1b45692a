//! The chaos test of issue 37: tool calls served on Restate (crate
//! `tool-restate`) while the service process is killed over and over, the
//! Restate server is killed and restarted, and deciders race on the same
//! calls.
//!
//! # What runs
//!
//! `chaos restate` is the driver. It starts a Restate server (the
//! `RESTATE_SERVER` binary) with a data directory of its own, and a
//! **service** process (`chaos restate-service`: this executable again,
//! serving `RestateTools` on one port, registered with the server). Four
//! tools, each recording every start and every end of a run as a line of
//! one log file (appended in one write, so lines of several processes never
//! mix), sleeping 150–700 ms in between, and answering
//! `{"execution": id}`:
//!
//! - (a) `pay`: approval required, not retry-safe;
//! - (b) `sync`: runs at once, retry-safe;
//! - (c) `ledger`: a background task, not retry-safe;
//! - (d) `transfer` (with `--url`, a PostgreSQL database): runs at once,
//!   retry-safe, and writes its **effect** (a `chaos_restate_effects` row
//!   naming the execution, no unique key) through `effects::Once` keyed by
//!   the call's idempotency key.
//!
//! The driver's **callers** make `--calls` calls over `--seconds`, through
//! `RestateClient`: `call`, then `wait` for a background task; a request
//! that fails (the server is down, the connection dropped) is made again
//! with the same call id. Three **deciders** list the waiting calls
//! (`RestateClient::waiting`) and approve each, racing, as principals of
//! their own. Meanwhile the driver injects faults one at a time, every
//! 1–2.5 s: `SIGKILL` of the service process (started again on the same
//! port after 0.1–0.6 s), and, one time in five, `SIGKILL` of the Restate
//! server, started again on its data.
//!
//! # What it checks
//!
//! After the faults, the driver lets the callers and deciders finish, then
//! reads each call's outcome (`wait`: answered from the call's object, never
//! run again), its audit entries (the server's SQL introspection), the log
//! and the effects, and checks:
//!
//! 1. **none lost**: every call made is settled;
//! 2. **none decided twice**: a call of (a) has exactly one `decided` audit
//!    entry; at most one decider's answer is the decision (`Ok`), every
//!    answer a decider got (its decision's outcome, or the
//!    `AlreadyDecided` outcome) is the recorded outcome;
//! 3. **never run twice**: (a) and (c) ran at most once per call; one whose
//!    run never ended (its process was killed) settled as interrupted;
//! 4. **run again only after a kill**: (b) and (d) ran again only when a
//!    fault came between a run's start and the next one's, and every run of
//!    a call saw the same idempotency key;
//! 5. a completed call's outcome names a run of that call that ended
//!    ((d): whose effect is the call's);
//! 6. **no double effects**: a completed (d) call has exactly one effect
//!    row, naming the run its outcome names; no other call has any;
//! 7. every final answer a caller got equals the recorded outcome.
//!
//! It prints one JSON line and a summary, and exits 1 on any violation.
//!
//! ```text
//! # RESTATE_SERVER: a restate-server binary (.ci/run installs one)
//! cargo run -p chaos --release -- restate --calls 400 --seconds 300 --seed 1 --url "$DATABASE_URL"
//! # The short form CI runs
//! cargo run -p chaos -- restate --calls 60 --seconds 20 --url "$DATABASE_URL"
//! ```

#[path = "../../tool-restate/tests/it/server.rs"]
#[allow(dead_code)]
mod server;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio_postgres::NoTls;
use tool_core::{BackgroundConfig, Tool, ToolContext, ToolError};
use tool_restate::effects::Once;
use tool_restate::{
    CallRequest, DecideRequest, RestateClient, RestateError, RestateTools, WireDecision,
};
use tool_runtime::store::{AuditEntry, AuditKind};
use tool_runtime::{CallOutcome, Decider, Principal, Runtime};

use crate::common::{Args, Rng, hash};

/// (a) approval required, not retry-safe.
const PAY: &str = "pay";
/// (b) runs at once, retry-safe.
const SYNC: &str = "sync";
/// (c) a background task, not retry-safe.
const LEDGER: &str = "ledger";
/// (d) runs at once, retry-safe, an effect in PostgreSQL once.
const TRANSFER: &str = "transfer";
/// The effects' table.
const EFFECTS: &str = "chaos_restate_effects";
/// Deciders racing on each waiting call.
const DECIDERS: usize = 3;

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(0))
}

/// Appends `line` to the log in one write.
fn log_line(log: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("the chaos log");
    file.write_all(format!("{line}\n").as_bytes())
        .expect("write the chaos log");
}

// ---------------------------------------------------------------- service

/// `chaos restate-service --port P --ingress URL --log FILE [--url PG]`:
/// serves the tools until killed.
pub fn service_command(args: &Args) -> Result<ExitCode, String> {
    let port = args.num("port", 0)?;
    let ingress = args.need("ingress")?.to_owned();
    let log = PathBuf::from(args.need("log")?);
    let url = args.get("url").map(str::to_owned);
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", u16::try_from(port).unwrap_or(0)))
                .await
                .map_err(|e| format!("bind {port}: {e}"))?;
        let tools = RestateTools::new(ingress, move || configure(&log, url.as_deref()))
            .map_err(|e| e.to_string())?;
        tools.serve(listener).await;
        Ok(ExitCode::SUCCESS)
    })
}

/// The tools, logging to `log`; `transfer` with a database.
fn configure(log: &Path, url: Option<&str>) -> tool_runtime::RuntimeBuilder {
    let tool = |id: &'static str| {
        let log = log.to_path_buf();
        let builder = Tool::builder(id).description("A chaos tool");
        let builder = match id {
            PAY => builder.require_approval(true),
            SYNC => builder.retry_safe(true),
            LEDGER => builder.background(BackgroundConfig::new().timeout_ms(30_000)),
            _ => builder.retry_safe(true),
        };
        let url = url.map(str::to_owned);
        builder
            .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
                let log = log.clone();
                let url = url.clone();
                async move { run(&log, id, &ctx, url.as_deref()).await }
            })
            .build()
            .expect("a chaos tool")
    };
    let mut builder = Runtime::builder().tools([tool(PAY), tool(SYNC), tool(LEDGER)]);
    if url.is_some() {
        builder = builder.tool(tool(TRANSFER));
    }
    builder
}

/// One run of a tool: logged at its start and end, a sleep between, and
/// (d) its effect once per idempotency key.
async fn run(
    log: &Path,
    tool: &str,
    ctx: &ToolContext<Value, Value>,
    url: Option<&str>,
) -> Result<Value, ToolError> {
    let execution = Rng::new(now_ms() ^ u64::from(std::process::id()) ^ hash(ctx.call_id())).next();
    let key = ctx.idempotency_key().to_string();
    log_line(
        log,
        &format!(
            "start {} {tool} {execution} {} {} {key}",
            ctx.call_id(),
            std::process::id(),
            now_ms()
        ),
    );
    let sleep = 150 + execution % 550;
    let output = match (tool, url) {
        (TRANSFER, Some(url)) => {
            tokio::time::sleep(Duration::from_millis(sleep / 2)).await;
            let effect = effect(url, ctx.call_id(), &key, execution)
                .await
                .map_err(|e| ToolError::new(format!("the effect failed: {e}")))?;
            tokio::time::sleep(Duration::from_millis(sleep / 2)).await;
            effect
        }
        _ => {
            tokio::time::sleep(Duration::from_millis(sleep)).await;
            json!({ "execution": execution.to_string() })
        }
    };
    log_line(
        log,
        &format!("end {} {execution} {}", ctx.call_id(), now_ms()),
    );
    Ok(output)
}

/// (d)'s effect: a row naming the execution, once per idempotency key; the
/// result recorded with it.
async fn effect(url: &str, call_id: &str, key: &str, execution: u64) -> Result<Value, String> {
    let (mut client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    match Once::<Value>::begin(&mut client, key)
        .await
        .map_err(|e| e.to_string())?
    {
        Once::Done(result) => Ok(result),
        Once::Fresh(effect) => {
            let execution = execution.to_string();
            effect
                .transaction()
                .execute(
                    &format!("INSERT INTO {EFFECTS} (call_id, execution) VALUES ($1, $2)"),
                    &[&call_id, &execution],
                )
                .await
                .map_err(|e| e.to_string())?;
            effect
                .commit(json!({ "execution": execution }))
                .await
                .map_err(|e| e.to_string())
        }
    }
}

// ----------------------------------------------------------------- driver

/// What the driver is told.
struct Config {
    calls: u64,
    seconds: u64,
    seed: u64,
    url: Option<String>,
}

/// `chaos restate --calls N --seconds S --seed X [--url PG]`.
pub fn command(args: &Args) -> Result<ExitCode, String> {
    let config = Config {
        calls: args.num("calls", 60)?,
        seconds: args.num("seconds", 20)?,
        seed: args.num("seed", 37)?,
        url: args
            .get("url")
            .map(str::to_owned)
            .or_else(|| std::env::var("DATABASE_URL").ok()),
    };
    if std::env::var_os("RESTATE_SERVER").is_none() {
        return Err("set RESTATE_SERVER to a restate-server binary (.ci/run installs one)".into());
    }
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let passed = runtime.block_on(drive(config))?;
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A call the callers make.
struct Planned {
    call_id: String,
    tool: &'static str,
    at: Duration,
}

/// What the run saw, for the checks.
#[derive(Default)]
struct Seen {
    /// Final answers callers got, by call.
    answers: BTreeMap<String, Vec<CallOutcome>>,
    /// Decisions that took effect (`Ok`), by call: the decider and outcome.
    decided: BTreeMap<String, Vec<(String, CallOutcome)>>,
    /// `AlreadyDecided` outcomes deciders got, by call.
    already: BTreeMap<String, Vec<CallOutcome>>,
    /// Fault times (ms since the epoch, the fault's end: after the kill).
    faults: Vec<(u64, &'static str)>,
}

async fn drive(config: Config) -> Result<bool, String> {
    let started = Instant::now();
    let Some(mut restate) = server::Restate::start().await else {
        return Err("no Restate server".into());
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let log = dir.path().join("runs.log");
    let tag = format!("{}-{}", std::process::id(), now_ms());
    if let Some(url) = &config.url {
        let (client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .map_err(|e| format!("PostgreSQL: {e}"))?;
        tokio::spawn(connection);
        client
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS {EFFECTS} (call_id text NOT NULL, execution text NOT NULL)"
            ))
            .await
            .map_err(|e| e.to_string())?;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let ingress = restate.ingress.clone();
    let service = |log: &Path| spawn_service(port, &ingress, log, config.url.as_deref());
    let mut child = service(&log)?;
    listening(port).await?;
    restate.register(&format!("http://127.0.0.1:{port}")).await;

    // The calls: a tool by turn, at times spread over the run.
    let mut rng = Rng::new(config.seed);
    let tools: &[&'static str] = match config.url {
        Some(_) => &[PAY, SYNC, LEDGER, TRANSFER],
        None => &[PAY, SYNC, LEDGER],
    };
    let span = config.seconds.max(1) * 1000;
    let planned: Vec<Planned> = (0..config.calls)
        .map(|i| Planned {
            call_id: format!("{tag}-c{i}"),
            tool: tools[usize::try_from(i).unwrap_or(0) % tools.len()],
            at: Duration::from_millis(rng.range(0, span * 8 / 10)),
        })
        .collect();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let client = RestateClient::new(&restate.ingress).admin(&restate.admin);
    let callers: Vec<_> = planned
        .iter()
        .map(|call| {
            let (client, seen) = (client.clone(), Arc::clone(&seen));
            let (call_id, tool, at) = (call.call_id.clone(), call.tool, call.at);
            tokio::spawn(async move {
                tokio::time::sleep(at).await;
                if let Some(answer) = make(&client, &call_id, tool).await {
                    seen.lock()
                        .expect("seen")
                        .answers
                        .entry(call_id)
                        .or_default()
                        .push(answer);
                }
            })
        })
        .collect();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let deciders: Vec<_> = (0..DECIDERS)
        .map(|n| {
            let (client, seen, stopped) = (client.clone(), Arc::clone(&seen), stopped.clone());
            let tag = tag.clone();
            tokio::spawn(decide_until(
                client,
                seen,
                stopped,
                format!("decider-{n}"),
                tag,
            ))
        })
        .collect();

    // The faults.
    let until = Instant::now() + Duration::from_millis(span);
    let mut kills = 0;
    let mut restarts = 0;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(rng.range(1000, 2500))).await;
        if rng.chance(20) {
            // Stamped before the kill that begins the restart: runs taken
            // again start as soon as the server is back.
            seen.lock()
                .expect("seen")
                .faults
                .push((now_ms(), "restate"));
            restate.restart().await;
            restarts += 1;
        } else {
            child
                .kill()
                .await
                .map_err(|e| format!("SIGKILL the service: {e}"))?;
            seen.lock()
                .expect("seen")
                .faults
                .push((now_ms(), "service"));
            kills += 1;
            tokio::time::sleep(Duration::from_millis(rng.range(100, 600))).await;
            child = service(&log)?;
            listening(port).await?;
        }
    }

    // Let everything finish: the callers, then the deciders once nothing waits.
    for caller in callers {
        tokio::time::timeout(Duration::from_secs(180), caller)
            .await
            .map_err(|_| "a caller did not finish within 180 s of the faults' end")?
            .map_err(|e| e.to_string())?;
    }
    let settle_by = Instant::now() + Duration::from_secs(120);
    while Instant::now() < settle_by {
        match client.waiting(None, 1).await {
            Ok(waiting) if waiting.is_empty() => break,
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let _ = stop.send(true);
    for decider in deciders {
        decider.await.map_err(|e| e.to_string())?;
    }

    // Every caller and decider has ended.
    let seen = std::mem::take(&mut *seen.lock().expect("seen"));
    let report = check(
        &restate,
        &client,
        &planned,
        &seen,
        &log,
        config.url.as_deref(),
        &tag,
    )
    .await?;
    drop(child);
    let summary = json!({
        "calls": planned.len(),
        "service_kills": kills,
        "restate_restarts": restarts,
        "runs": report.runs,
        "reruns_after_a_fault": report.reruns,
        "interrupted": report.interrupted,
        "decisions": seen.decided.values().map(Vec::len).sum::<usize>(),
        "already_decided_answers": seen.already.values().map(Vec::len).sum::<usize>(),
        "effects": report.effects,
        "violations": report.violations.len(),
        "seconds": started.elapsed().as_secs(),
    });
    println!("{summary}");
    for violation in report.violations.iter().take(30) {
        println!("violation: {violation}");
    }
    println!(
        "chaos restate: {} calls, {kills} service kills, {restarts} server restarts: {}",
        planned.len(),
        match report.violations.len() {
            0 => "0 lost, 0 decided twice, 0 run twice, 0 double effects".to_owned(),
            n => format!("{n} violations"),
        }
    );
    Ok(report.violations.is_empty())
}

fn spawn_service(port: u16, ingress: &str, log: &Path, url: Option<&str>) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut command = Command::new(exe);
    command
        .args([
            "restate-service",
            "--port",
            &port.to_string(),
            "--ingress",
            ingress,
        ])
        .arg("--log")
        .arg(log)
        .stdout(Stdio::null())
        .kill_on_drop(true);
    if let Some(url) = url {
        command.args(["--url", url]);
    }
    command
        .spawn()
        .map_err(|e| format!("the service process: {e}"))
}

/// Waits until the service listens on `port`.
async fn listening(port: u16) -> Result<(), String> {
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if started.elapsed() > Duration::from_secs(60) {
            return Err("the service process did not listen within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Makes the call (again after a failed request), and waits for a
/// background task: the final answer, or `None` for a call that waits for
/// a decision (the deciders take it from there).
async fn make(client: &RestateClient, call_id: &str, tool: &str) -> Option<CallOutcome> {
    let request = CallRequest::new(tool, json!({ "call": call_id }));
    let mut started = false;
    loop {
        let answer = match started {
            false => client.call(call_id, request.clone()).await,
            true => client.wait(call_id).await,
        };
        match answer {
            Ok(CallOutcome::BackgroundStarted { .. }) => started = true,
            Ok(CallOutcome::ApprovalRequired { .. }) => return None,
            Ok(outcome) => return Some(outcome),
            // Made already and waiting for a decision.
            Err(RestateError::Refused { status: 409, .. }) if tool == PAY => return None,
            // A queued task: wait for it.
            Err(RestateError::Refused { status: 409, .. }) => started = true,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// A decider: approves every waiting call of this run it sees, as
/// `name`, until stopped.
async fn decide_until(
    client: RestateClient,
    seen: Arc<Mutex<Seen>>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
    name: String,
    tag: String,
) {
    while !*stopped.borrow() {
        if let Ok(waiting) = client.waiting(None, 100).await {
            for stored in waiting {
                let call_id = stored.call.head.call_id.clone();
                if !call_id.starts_with(&tag) {
                    continue;
                }
                let decider = Decider::new(Principal::new(name.as_str()), stored.digest());
                let request = DecideRequest::new(WireDecision::Approve).by(decider);
                match client.decide(&call_id, request).await {
                    Ok(outcome) => seen
                        .lock()
                        .expect("seen")
                        .decided
                        .entry(call_id)
                        .or_default()
                        .push((name.clone(), outcome)),
                    Err(RestateError::AlreadyDecided { outcome, .. }) => seen
                        .lock()
                        .expect("seen")
                        .already
                        .entry(call_id)
                        .or_default()
                        .push(*outcome),
                    // A stale version, the server down: the next round.
                    Err(_) => {}
                }
            }
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), stopped.changed()).await;
    }
}

// ------------------------------------------------------------------ check

/// One run of a tool, from the log.
#[derive(Debug)]
struct Run {
    execution: String,
    started_ms: u64,
    key: String,
    ended: bool,
}

/// What the checks found.
struct Report {
    violations: Vec<String>,
    runs: usize,
    reruns: usize,
    interrupted: usize,
    effects: usize,
}

/// The runs of each call, in order of start.
fn runs(log: &Path) -> Result<BTreeMap<String, Vec<Run>>, String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut runs: BTreeMap<String, Vec<Run>> = BTreeMap::new();
    let mut ended = BTreeSet::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields.as_slice() {
            ["start", call, _tool, execution, _pid, at, key] => {
                runs.entry((*call).to_owned()).or_default().push(Run {
                    execution: (*execution).to_owned(),
                    started_ms: at.parse().map_err(|e| format!("{line:?}: {e}"))?,
                    key: (*key).to_owned(),
                    ended: false,
                });
            }
            ["end", _call, execution, _at] => {
                ended.insert((*execution).to_owned());
            }
            _ => return Err(format!("a log line that does not read: {line:?}")),
        }
    }
    for run in runs.values_mut().flatten() {
        run.ended = ended.contains(&run.execution);
    }
    for list in runs.values_mut() {
        list.sort_by_key(|run| run.started_ms);
    }
    Ok(runs)
}

async fn check(
    restate: &server::Restate,
    client: &RestateClient,
    planned: &[Planned],
    seen: &Seen,
    log: &Path,
    url: Option<&str>,
    tag: &str,
) -> Result<Report, String> {
    let runs = runs(log)?;
    let effects = match url {
        Some(url) => effects(url, tag).await?,
        None => BTreeMap::new(),
    };
    let mut report = Report {
        violations: Vec::new(),
        runs: runs.values().map(Vec::len).sum(),
        reruns: 0,
        interrupted: 0,
        effects: effects.values().map(Vec::len).sum(),
    };
    let violations = &mut report.violations;
    for call_id in effects.keys() {
        if !planned.iter().any(|call| &call.call_id == call_id) {
            violations.push(format!("{call_id}: an effect of a call never made"));
        }
    }
    for call in planned {
        let id = call.call_id.as_str();
        let call_runs = runs.get(id).map(Vec::as_slice).unwrap_or_default();
        // 1. none lost.
        let outcome = match client.wait(id).await {
            Ok(outcome) => outcome,
            Err(error) => {
                violations.push(format!("{id} ({}): not settled: {error}", call.tool));
                continue;
            }
        };
        let output_execution = outcome
            .output()
            .and_then(|output| output["execution"].as_str())
            .map(str::to_owned);
        let interrupted = matches!(&outcome, CallOutcome::Failed { error } if error.message().contains("interrupted"));
        report.interrupted += usize::from(interrupted);
        // 7. every final answer is the recorded outcome.
        for answer in seen.answers.get(id).into_iter().flatten() {
            if answer != &outcome {
                violations.push(format!(
                    "{id}: a caller was answered {answer:?}, recorded {outcome:?}"
                ));
            }
        }
        // 2. decided once.
        if call.tool == PAY {
            let decided = seen.decided.get(id).map_or(0, Vec::len);
            if decided > 1 {
                violations.push(format!(
                    "{id}: {decided} deciders were told their decision took effect"
                ));
            }
            for answer in seen
                .decided
                .get(id)
                .into_iter()
                .flatten()
                .map(|(_, outcome)| outcome)
                .chain(seen.already.get(id).into_iter().flatten())
            {
                if answer != &outcome {
                    violations.push(format!(
                        "{id}: a decider was answered {answer:?}, recorded {outcome:?}"
                    ));
                }
            }
            // One decision audited for a call that waited for one; none
            // for a call whose first step was interrupted (it never waited).
            let audit = audit(restate, id).await?;
            let count = |kind| audit.iter().filter(|entry| entry.kind == kind).count();
            let (waited, decisions) = (count(AuditKind::Requested), count(AuditKind::Decided));
            if decisions != waited.min(1) || waited > 1 {
                violations.push(format!(
                    "{id}: waited {waited} times, {decisions} decisions audited; outcome {outcome:?}"
                ));
            }
        }
        match call.tool {
            // 3. never run twice.
            PAY | LEDGER => {
                if call_runs.len() > 1 {
                    violations.push(format!(
                        "{id} ({}): ran {} times",
                        call.tool,
                        call_runs.len()
                    ));
                }
                if call_runs.iter().any(|run| !run.ended) && !interrupted {
                    violations.push(format!(
                        "{id}: its run never ended, yet it settled {outcome:?}"
                    ));
                }
            }
            // 4. run again only after a fault, with one key.
            _ => {
                for pair in call_runs.windows(2) {
                    let fault = seen
                        .faults
                        .iter()
                        .any(|(at, _)| *at >= pair[0].started_ms && *at <= pair[1].started_ms);
                    if !fault {
                        violations.push(format!(
                            "{id}: ran again at {} with no fault since {}",
                            pair[1].started_ms, pair[0].started_ms
                        ));
                    }
                    if pair[0].key != pair[1].key {
                        violations.push(format!("{id}: its runs saw two idempotency keys"));
                    }
                }
                report.reruns += call_runs.len().saturating_sub(1);
            }
        }
        // 5. a completed call names a run of its own that ended.
        if let Some(execution) = &output_execution {
            let run = call_runs.iter().find(|run| &run.execution == execution);
            match (run, call.tool) {
                (None, _) => violations.push(format!("{id}: its outcome names no run of it")),
                (Some(_), TRANSFER) => {}
                (Some(run), _) if !run.ended => {
                    violations.push(format!("{id}: its outcome names a run that never ended"))
                }
                _ => {}
            }
        } else if !interrupted {
            violations.push(format!(
                "{id}: settled neither completed nor interrupted: {outcome:?}"
            ));
        }
        // 6. effects once.
        let call_effects = effects.get(id).map(Vec::as_slice).unwrap_or_default();
        match (&output_execution, call.tool) {
            (Some(execution), TRANSFER) if call_effects != [execution.clone()] => {
                violations.push(format!(
                    "{id}: effects {call_effects:?}, its outcome names {execution}"
                ));
            }
            (Some(_), TRANSFER) => {}
            _ if !call_effects.is_empty() => {
                violations.push(format!(
                    "{id}: effects {call_effects:?} of a call that did not complete one"
                ));
            }
            _ => {}
        }
    }
    Ok(report)
}

/// The audit entries of call `id`, from the server's SQL introspection.
async fn audit(restate: &server::Restate, id: &str) -> Result<Vec<AuditEntry>, String> {
    let rows = restate
        .query(&format!(
            "SELECT value_utf8 FROM state WHERE service_name = 'ToolCalls' AND service_key = '{id}' AND key = 'audit'"
        ))
        .await?;
    match rows.first().and_then(|row| row["value_utf8"].as_str()) {
        Some(text) => serde_json::from_str(text).map_err(|e| format!("{id}'s audit: {e}")),
        None => Ok(Vec::new()),
    }
}

/// The effects of this run's calls (their ids start with `tag`), by call.
async fn effects(url: &str, tag: &str) -> Result<BTreeMap<String, Vec<String>>, String> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let prefix = format!("{tag}-%");
    let rows = client
        .query(
            &format!("SELECT call_id, execution FROM {EFFECTS} WHERE call_id LIKE $1"),
            &[&prefix],
        )
        .await
        .map_err(|e| e.to_string())?;
    let mut effects: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in rows {
        effects.entry(row.get(0)).or_default().push(row.get(1));
    }
    Ok(effects)
}
