//! The children the driver starts: a front that creates calls, workers,
//! deciders, dispatchers; each a runtime on the shared store, writing
//! notifications, with tools that record their executions, and a
//! transactional tool (f) whose effect commits with its call's outcome. A
//! dispatcher's sink records each delivery.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{BackgroundConfig, RequestContext, Tool, ToolContext, ToolError};
use tool_runtime::store::{
    Notification, PostgresStore, PostgresTransaction, RecordedOutcome, SqliteTransaction,
};
use tool_runtime::{
    CallOutcome, Dispatcher, NotificationSink, PendingKind, RetryPolicy, Runtime, RuntimeError,
    SinkError, SinkLimits, ToolCall,
};

use crate::common::{
    APPROVE, APPROVE_SAFE, Args, Rng, SUSPEND, Store, TASK_ONCE, TASK_RETRY, TRANSACTIONAL, hash,
    now_us,
};
use crate::db::{
    AnswerRec, ChaosDb, CreatedRec, DeliveryRec, ExecStart, LITE_EFFECT_INSERT, PG_EFFECT_INSERT,
    Recorder,
};

/// What a tool body needs: where to record, and who it is.
struct Ctx {
    db: ChaosDb,
    recorder: Recorder,
    instance: String,
    pid: i32,
    seed: u64,
    executions: AtomicU64,
    deliveries: AtomicU64,
}

/// Records `dropped_at` when an execution's future is dropped before its end.
struct Running {
    ctx: Arc<Ctx>,
    exec: ExecStart,
    done: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done {
            self.ctx.recorder.dropped(self.exec.clone(), now_us());
        }
    }
}

/// Where tool (f) writes its effect: its call's transaction in the store.
enum EffectTx {
    /// PostgreSQL: a statement in the open transaction, now.
    Pg(PostgresTransaction),
    /// SQLite: an insert deferred to the commit with the outcome.
    Lite(SqliteTransaction),
}

impl EffectTx {
    /// The handle the runtime gave the call.
    fn of(tctx: &ToolContext<Value, Value>) -> Result<EffectTx, ToolError> {
        if let Some(tx) = tctx.extension::<PostgresTransaction>() {
            return Ok(EffectTx::Pg(tx.clone()));
        }
        if let Some(tx) = tctx.extension::<SqliteTransaction>() {
            return Ok(EffectTx::Lite(tx.clone()));
        }
        Err(ToolError::new("a transactional call without a transaction"))
    }

    /// Writes the effect of execution `exec` of `call_id`: one row of
    /// `chaos_effects`, committed with the call's outcome or not at all.
    async fn write(self, call_id: &str, exec: &str) -> Result<(), String> {
        match self {
            EffectTx::Pg(tx) => tx
                .execute(PG_EFFECT_INSERT, &[&call_id, &exec])
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            EffectTx::Lite(tx) => {
                let (call_id, exec) = (call_id.to_owned(), exec.to_owned());
                tx.defer(move |tx| tx.execute(LITE_EFFECT_INSERT, (call_id, exec)).map(drop))
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// One execution of a tool body: a row at its start (stamped by the
/// database), a random sleep of 50–800 ms, the row's end, and an output
/// naming the row. A database that is down is asked again; the future may
/// be dropped at any await, which the drop guard records. With `effect`
/// (tool (f)), the effect is written in the call's transaction at a random
/// point of the sleep; when that fails (PostgreSQL down), the execution
/// ends and the call fails, its transaction rolled back.
async fn execution(
    ctx: Arc<Ctx>,
    call_id: String,
    tool: &'static str,
    attempt: u32,
    effect: Option<EffectTx>,
) -> Result<Value, ToolError> {
    let n = ctx.executions.fetch_add(1, Ordering::Relaxed);
    let exec = ExecStart {
        id: format!("{}-{}-{n}", ctx.instance, ctx.pid),
        call_id,
        tool: tool.to_owned(),
        instance: ctx.instance.clone(),
        pid: ctx.pid,
        attempt: i32::try_from(attempt).unwrap_or(i32::MAX),
    };
    let mut running = Running {
        ctx: Arc::clone(&ctx),
        exec: exec.clone(),
        done: false,
    };
    while let Err(error) = ctx.db.exec_start(&exec).await {
        eprintln!(
            "chaos: recording the start of {} failed, trying again: {error}",
            exec.id
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut rng = Rng::new(ctx.seed ^ hash(&exec.id));
    let sleep = rng.range(50, 800);
    let mut failed = None;
    if let Some(effect) = effect {
        let before = rng.range(0, sleep);
        tokio::time::sleep(Duration::from_millis(before)).await;
        failed = effect.write(&exec.call_id, &exec.id).await.err();
        tokio::time::sleep(Duration::from_millis(sleep - before)).await;
    } else {
        tokio::time::sleep(Duration::from_millis(sleep)).await;
    }
    while let Err(error) = ctx.db.exec_end(&exec.id).await {
        eprintln!(
            "chaos: recording the end of {} failed, trying again: {error}",
            exec.id
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    running.done = true;
    match failed {
        None => Ok(json!({ "execution": exec.id })),
        Some(error) => Err(ToolError::new(format!(
            "execution {}: writing the effect failed: {error}",
            exec.id
        ))),
    }
}

fn tools(ctx: &Arc<Ctx>) -> Vec<Tool> {
    let body = |tool: &'static str| {
        let ctx = Arc::clone(ctx);
        move |_input: Value, tctx: ToolContext<Value, Value>| {
            let ctx = Arc::clone(&ctx);
            async move { execution(ctx, tctx.call_id().to_owned(), tool, tctx.attempt(), None).await }
        }
    };
    let transactional = {
        let ctx = Arc::clone(ctx);
        move |_input: Value, tctx: ToolContext<Value, Value>| {
            let ctx = Arc::clone(&ctx);
            async move {
                let effect = EffectTx::of(&tctx)?;
                let call_id = tctx.call_id().to_owned();
                execution(ctx, call_id, TRANSACTIONAL, tctx.attempt(), Some(effect)).await
            }
        }
    };
    let suspending = {
        let ctx = Arc::clone(ctx);
        move |_input: Value, tctx: ToolContext<Value, Value>| {
            let ctx = Arc::clone(&ctx);
            async move {
                let resumed = tctx.resume_data().is_some();
                let output = execution(
                    ctx,
                    tctx.call_id().to_owned(),
                    SUSPEND,
                    tctx.attempt(),
                    None,
                )
                .await?;
                if resumed {
                    Ok(output)
                } else {
                    tctx.suspend::<Value, ToolError>(output)
                }
            }
        }
    };
    let built = [
        Tool::builder(APPROVE)
            .description("approval required, not retry-safe")
            .require_approval(true)
            .execute(body(APPROVE))
            .build(),
        Tool::builder(APPROVE_SAFE)
            .description("approval required, retry-safe")
            .require_approval(true)
            .retry_safe(true)
            .execute(body(APPROVE_SAFE))
            .build(),
        Tool::builder(TASK_RETRY)
            .description("a background task with retries")
            .background(BackgroundConfig::new().max_retries(2))
            .execute(body(TASK_RETRY))
            .build(),
        Tool::builder(TASK_ONCE)
            .description("a background task without retries")
            .background(BackgroundConfig::new())
            .execute(body(TASK_ONCE))
            .build(),
        Tool::builder(SUSPEND)
            .description("suspends, then completes when resumed")
            .resume_schema(json!({ "type": "boolean" }))
            .execute(suspending)
            .build(),
        Tool::builder(TRANSACTIONAL)
            .description("transactional: its effect commits with its outcome")
            .transactional(true)
            .approval_policy(|input: &Value, _: &RequestContext| {
                input["approval"].as_bool().unwrap_or(false)
            })
            .execute(transactional)
            .build(),
    ];
    built
        .into_iter()
        .map(|tool| tool.expect("the chaos tools build"))
        .collect()
}

/// What every child is told.
struct Common {
    store: Store,
    run: String,
    instance: String,
    lease: Duration,
    seed: u64,
}

/// A runtime with the chaos tools on the shared store, connecting again
/// while the database is down.
async fn runtime(common: &Common, ctx: &Arc<Ctx>, leave_tasks: bool) -> Runtime {
    let builder = || {
        Runtime::builder()
            .tools(tools(ctx))
            .instance_id(common.instance.clone())
            .lease(common.lease)
            .leave_tasks_to_workers(leave_tasks)
            .notifications(true)
    };
    loop {
        let built = match &common.store {
            Store::Postgres { url } => match PostgresStore::connect(url).await {
                Ok(store) => builder().store(store).build(),
                Err(error) => Err(error.into()),
            },
            Store::Sqlite { path, .. } => builder().sqlite_store(path).build(),
        };
        match built {
            Ok(runtime) => return runtime,
            Err(error) => {
                eprintln!("chaos: opening the store failed, trying again: {error}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// Notifications a dispatcher has in delivery at once, and its sink too: a
/// claimed notification never waits for a turn, which its sink's time limit
/// would count.
const DELIVERIES_AT_ONCE: usize = 8;

/// The dispatchers' one sink: a delivery takes a random 20–300 ms and
/// records itself in `chaos_deliveries` at a random point of it (as tool
/// (f) writes its effect), so that a kill often lands while a notification
/// is claimed and not yet recorded, or recorded and not yet settled (then
/// delivered again, under its id). A delivery the database does not take
/// (it is down) is tried again.
struct RecordingSink {
    ctx: Arc<Ctx>,
}

impl NotificationSink for RecordingSink {
    fn name(&self) -> &str {
        "chaos"
    }

    async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
        let ctx = &self.ctx;
        let n = ctx.deliveries.fetch_add(1, Ordering::Relaxed);
        let delivery = DeliveryRec {
            id: format!("{}-{}-d{n}", ctx.instance, ctx.pid),
            notification_id: notification.id.clone(),
            kind: notification.kind.as_str().to_owned(),
            call_id: notification.call_id.clone(),
            instance: ctx.instance.clone(),
            pid: ctx.pid,
        };
        let mut rng = Rng::new(ctx.seed ^ hash(&delivery.id));
        let pause = rng.range(20, 300);
        let before = rng.range(0, pause);
        tokio::time::sleep(Duration::from_millis(before)).await;
        ctx.db
            .delivered(&delivery)
            .await
            .map_err(SinkError::retry)?;
        tokio::time::sleep(Duration::from_millis(pause - before)).await;
        Ok(())
    }
}

/// The dispatcher of `runtime` with the recording sink: claims under the
/// run's lease, looks often, and tries a failed delivery again soon and
/// for as long as a run lasts, so that an outage makes no notification
/// dead.
fn dispatcher(common: &Common, runtime: &Runtime, ctx: &Arc<Ctx>) -> Result<Dispatcher, String> {
    let limits = SinkLimits::default()
        .concurrency(DELIVERIES_AT_ONCE)
        .timeout(common.lease / 2);
    let sink = RecordingSink {
        ctx: Arc::clone(ctx),
    };
    runtime
        .dispatcher()
        .sink_with(sink, limits)
        .concurrency(DELIVERIES_AT_ONCE)
        .lease(common.lease)
        .poll_every(Duration::from_millis(100))
        .retry(
            RetryPolicy::default()
                .max_attempts(1000)
                .backoff_between(Duration::from_millis(50), Duration::from_secs(1)),
        )
        .build()
        .map_err(|e| e.to_string())
}

/// Runs a child role (`worker`, `decider`, `dispatcher`, `front`) until it
/// is killed.
pub fn child(role: &str, args: &Args) -> Result<ExitCode, String> {
    let common = Common {
        store: Store::from_args(args)?,
        run: args.need("run")?.to_owned(),
        instance: args.need("instance")?.to_owned(),
        lease: Duration::from_millis(args.num("lease-ms", 2000)?),
        seed: args.num("seed", 1)?,
    };
    tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::WARN)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("{e}"))?;
    let role = role.to_owned();
    let until_ms = args.num("until-ms", 0)?;
    let interval_ms = args.num("interval-ms", 100)?;
    let leave = args.num("leave", 0)? == 1;
    let index = args.num("index", 0)?;
    tokio.block_on(async move {
        let db = ChaosDb::open(&common.store)?;
        let recorder = Recorder::spawn(db.clone());
        let ctx = Arc::new(Ctx {
            db,
            recorder: recorder.clone(),
            instance: common.instance.clone(),
            pid: i32::try_from(std::process::id()).unwrap_or(i32::MAX),
            seed: common.seed,
            executions: AtomicU64::new(0),
            deliveries: AtomicU64::new(0),
        });
        match role.as_str() {
            "worker" => {
                let runtime = runtime(&common, &ctx, false).await;
                eprintln!("chaos: worker {} up (pid {})", common.instance, ctx.pid);
                runtime.worker().poll_every(common.lease / 2).run().await;
            }
            "decider" => {
                let runtime = runtime(&common, &ctx, false).await;
                eprintln!("chaos: decider {} up (pid {})", common.instance, ctx.pid);
                decider(&common, runtime, recorder, index).await;
            }
            "dispatcher" => {
                let runtime = runtime(&common, &ctx, false).await;
                eprintln!("chaos: dispatcher {} up (pid {})", common.instance, ctx.pid);
                dispatcher(&common, &runtime, &ctx)?.run().await;
            }
            _ => {
                let runtime = runtime(&common, &ctx, leave).await;
                eprintln!("chaos: front {} up (pid {})", common.instance, ctx.pid);
                front(&common, runtime, recorder, until_ms, interval_ms).await;
            }
        }
        Ok::<_, String>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The answer to record for `result`: the outcome as the store would
/// record it, or the error and its kind.
fn answer(
    call_id: &str,
    instance: &str,
    verb: &str,
    asked_us: i64,
    result: &Result<CallOutcome, RuntimeError>,
) -> AnswerRec {
    let (ok, error, error_kind) = match result {
        Ok(outcome) => match RecordedOutcome::from_outcome(outcome) {
            Some(recorded) => (
                Some(serde_json::to_string(&recorded).expect("an outcome serializes")),
                None,
                None,
            ),
            None => (
                None,
                Some(format!("not a final outcome: {outcome:?}")),
                Some("not_final".to_owned()),
            ),
        },
        Err(e) => (None, Some(e.to_string()), Some(error_kind_of(e).to_owned())),
    };
    AnswerRec {
        call_id: call_id.to_owned(),
        instance: instance.to_owned(),
        verb: verb.to_owned(),
        ok,
        error,
        error_kind,
        asked_us,
        answered_us: now_us(),
    }
}

/// What `Runtime::call` answered for a call of tool (f) that ran here (or
/// was waited for): how the front says it (`completed`, `failed`: stored;
/// `not_recorded`: stored, its outcome not recorded by this execution;
/// `not_stored`), and the answer to check against the store (check 6): an
/// outcome equal to the recorded one, or an error of an allowed kind.
fn call_answer(
    call_id: &str,
    instance: &str,
    asked_us: i64,
    outcome: &CallOutcome,
) -> (&'static str, AnswerRec) {
    let message = outcome.error().map(|e| e.message().to_owned());
    let error = |kind: &str| AnswerRec {
        call_id: call_id.to_owned(),
        instance: instance.to_owned(),
        verb: "call".to_owned(),
        ok: None,
        error: message.clone(),
        error_kind: Some(kind.to_owned()),
        asked_us,
        answered_us: now_us(),
    };
    match message.as_deref() {
        Some(m) if m.contains("is not recorded") => ("not_recorded", error("not_recorded")),
        Some(m) if m.contains("could not be stored") => ("not_stored", error("store")),
        Some(_) => (
            "failed",
            answer(call_id, instance, "call", asked_us, &Ok(outcome.clone())),
        ),
        None => (
            "completed",
            answer(call_id, instance, "call", asked_us, &Ok(outcome.clone())),
        ),
    }
}

fn error_kind_of(error: &RuntimeError) -> &'static str {
    match error {
        RuntimeError::Running { .. } => "running",
        RuntimeError::NotRecorded { .. } => "not_recorded",
        RuntimeError::Store(_) => "store",
        RuntimeError::UnknownCall { .. } => "unknown_call",
        RuntimeError::NotAwaitingApproval { .. } => "not_awaiting_approval",
        RuntimeError::NotSuspended { .. } => "not_suspended",
        RuntimeError::UnknownTask { .. } => "unknown_task",
        RuntimeError::MissingTool { .. } => "missing_tool",
        _ => "other",
    }
}

/// Whether an error means "ask again later".
fn ask_again(error: &RuntimeError) -> bool {
    matches!(
        error,
        RuntimeError::Running { .. } | RuntimeError::NotRecorded { .. } | RuntimeError::Store(_)
    )
}

/// Creates calls until `until_ms` (epoch milliseconds), one every
/// `interval_ms` on average, and waits for the background ones.
async fn front(
    common: &Common,
    runtime: Runtime,
    recorder: Recorder,
    until_ms: u64,
    interval_ms: u64,
) {
    let mut rng = Rng::new(common.seed ^ hash(&common.instance));
    let mut n = 0u64;
    let until_us = i64::try_from(until_ms).unwrap_or(i64::MAX) * 1000;
    while now_us() < until_us {
        let tool = match rng.range(0, 99) {
            0..=19 => APPROVE,
            20..=34 => APPROVE_SAFE,
            35..=49 => TASK_RETRY,
            50..=62 => TASK_ONCE,
            63..=77 => SUSPEND,
            _ => TRANSACTIONAL,
        };
        // Tool (f): two calls in five wait for approval (run by a decider,
        // or recovered by a worker); the others run here at once.
        let approval = tool == TRANSACTIONAL && rng.chance(40);
        let call_id = format!("{}-{}-{n}", common.run, common.instance);
        n += 1;
        recorder.created(CreatedRec {
            call_id: call_id.clone(),
            tool: tool.to_owned(),
            instance: common.instance.clone(),
            answer: None,
        });
        let (runtime, recorder, instance) =
            (runtime.clone(), recorder.clone(), common.instance.clone());
        tokio::spawn(async move {
            let asked = now_us();
            let input = json!({ "n": n, "approval": approval });
            let outcome = runtime
                .call(ToolCall::new(call_id.clone(), tool, input))
                .await;
            let said = match &outcome {
                CallOutcome::ApprovalRequired { .. } => "approval_required".to_owned(),
                CallOutcome::BackgroundStarted { .. } => "background_started".to_owned(),
                CallOutcome::Suspended { .. } => "suspended".to_owned(),
                final_outcome if tool == TRANSACTIONAL => {
                    let (said, rec) = call_answer(&call_id, &instance, asked, final_outcome);
                    recorder.answer(rec);
                    said.to_owned()
                }
                other => format!("other: {other:?}"),
            };
            recorder.created(CreatedRec {
                call_id: call_id.clone(),
                tool: tool.to_owned(),
                instance: instance.clone(),
                answer: Some(said),
            });
            if let CallOutcome::BackgroundStarted { task_id } = outcome {
                let asked = now_us();
                let result = runtime.wait(&task_id).await;
                recorder.answer(answer(&call_id, &instance, "wait", asked, &result));
            }
        });
        let pause = rng.range(interval_ms / 2, interval_ms + interval_ms / 2);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
    eprintln!("chaos: front {} created {n} calls", common.instance);
    std::future::pending::<()>().await;
}

/// A decider's view of one call.
#[derive(Default)]
struct Asking {
    in_flight: bool,
    done: bool,
    tries: u32,
    last_us: i64,
    verb: &'static str,
}

/// Lists the pending calls and decides them, racing the other decider;
/// asks again after `Running`, `NotRecorded` or a store error, and once
/// more after some answers, recording every answer.
async fn decider(common: &Common, runtime: Runtime, recorder: Recorder, index: u64) {
    let state: Arc<Mutex<HashMap<String, Asking>>> = Arc::default();
    let mut rng = Rng::new(common.seed ^ hash(&common.instance));
    loop {
        let mut ask = Vec::new();
        match runtime.inbox().waiting().await {
            Ok(pending) => {
                let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                for call in pending.into_iter().map(|stored| stored.call) {
                    if !call.head.call_id.starts_with(&common.run) {
                        continue;
                    }
                    let entry = state.entry(call.head.call_id.clone()).or_default();
                    if entry.in_flight || entry.done {
                        continue;
                    }
                    entry.verb = match call.kind {
                        PendingKind::Suspended => "resume",
                        _ if index == 0 && hash(&call.head.call_id).is_multiple_of(10) => "decline",
                        _ => "approve",
                    };
                    entry.in_flight = true;
                    entry.last_us = now_us();
                    ask.push((call.head.call_id, entry.verb));
                }
            }
            Err(error) => eprintln!("chaos: listing pending calls failed: {error}"),
        }
        {
            // Ask again: calls whose last answer said "later".
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            let now = now_us();
            for (call_id, entry) in state.iter_mut() {
                let wait = i64::try_from(common.lease.as_micros() / 2).unwrap_or(1_000_000);
                if !entry.in_flight && !entry.done && now - entry.last_us > wait {
                    entry.in_flight = true;
                    entry.last_us = now;
                    ask.push((call_id.clone(), entry.verb));
                }
            }
        }
        for (call_id, verb) in ask {
            let (runtime, recorder, state) =
                (runtime.clone(), recorder.clone(), Arc::clone(&state));
            let instance = common.instance.clone();
            let again = rng.chance(20);
            tokio::spawn(async move {
                let asked = now_us();
                let result = match verb {
                    "resume" => runtime.resume(&call_id, json!(true)).await,
                    "decline" => runtime.decline(&call_id, Some("chaos")).await,
                    _ => runtime.approve(&call_id).await,
                };
                recorder.answer(answer(&call_id, &instance, verb, asked, &result));
                let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                let entry = state.entry(call_id).or_default();
                entry.in_flight = false;
                entry.tries += 1;
                entry.last_us = now_us();
                entry.done = match &result {
                    // Once in five, ask a settled call again: it must answer
                    // the same recorded outcome.
                    Ok(_) => !(again && entry.tries == 1),
                    Err(error) => !ask_again(error) || entry.tries > 60,
                };
            });
        }
        tokio::time::sleep(Duration::from_millis(rng.range(100, 300))).await;
    }
}
