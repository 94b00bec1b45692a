//! What a running tool sends to the agent's stream, and background tools in
//! the agent: a tool's custom chunks (`ctx.writer()`) and progress between
//! its call and its result; a background task's start, progress and result,
//! which enters the conversation before the next model step; a run that
//! stops waiting and is continued on another instance, after a worker
//! there settled the task, and after the process that started it was
//! killed with SIGKILL. On the memory and SQLite stores, and PostgreSQL
//! when `DATABASE_URL` is set.

use crate::common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tool_agent::{
    Agent, AgentChunk, AgentError, FinishReason, Message, ModelFinish, ScriptedModel, ScriptedStep,
    Thread,
};
use tool_core::{BackgroundConfig, Progress, Tool, ToolContext, ToolError};
use tool_runtime::Runtime;
use tool_runtime::store::{
    AuditLog, CallStore, MemoryStore, Outbox, RuleStore, RunStore, SqliteStore,
};

/// A new directory, removed with what it holds when the guard drops, also
/// when the test fails: keep the guard until the test's end.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tool-agent-{name}-"))
        .tempdir()
        .unwrap()
}

/// The chunks of the call `call_id`, each named by its kind (and what it
/// carries, for progress and custom chunks).
fn of_call(chunks: &[AgentChunk], id: &str) -> Vec<String> {
    chunks
        .iter()
        .filter_map(|chunk| match chunk {
            AgentChunk::ToolCall { call_id, .. } if call_id == id => Some("call".to_owned()),
            AgentChunk::BackgroundTaskStarted { call_id, .. } if call_id == id => {
                Some("started".to_owned())
            }
            AgentChunk::ToolProgress {
                call_id, progress, ..
            } if call_id == id => Some(format!("progress {}", progress.value)),
            AgentChunk::Custom { call_id, data, .. } if call_id == id => {
                Some(format!("custom {data}"))
            }
            AgentChunk::ToolResult {
                call_id, result, ..
            } if call_id == id => Some(format!("result {result}")),
            AgentChunk::ToolError { call_id, .. } if call_id == id => Some("error".to_owned()),
            AgentChunk::StepFinish { step, .. } => Some(format!("step {step}")),
            _ => None,
        })
        .collect()
}

/// The messages the model read that give it a background task's result.
fn task_results(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User { text } if text.starts_with("Background task ") => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_custom_chunks_and_progress_come_between_its_call_and_its_result() {
    let import = Tool::builder("import")
        .description("Imports rows")
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            ctx.progress(1.0, Some(2.0), Some("reading"));
            ctx.writer().write(&json!({ "row": 1 }))?;
            ctx.writer().write(&json!({ "row": 2 }))?;
            ctx.progress(2.0, Some(2.0), None);
            Ok::<_, ToolError>(json!("imported"))
        })
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "import", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("Imported two rows."),
    ]);
    let runtime = Runtime::builder().tool(import).build().unwrap();
    let agent = Agent::builder("importer", model.clone(), runtime)
        .build()
        .unwrap();
    let out = agent
        .generate(Thread::new("t1"), vec![Message::user("import")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Stop);
    assert_eq!(
        of_call(&out.chunks, "c1"),
        [
            "call",
            "progress 1",
            r#"custom {"row":1}"#,
            r#"custom {"row":2}"#,
            "progress 2",
            r#"result "imported""#,
            "step 1",
            "step 2",
        ]
    );
    let progress = out.chunks.iter().find_map(|c| match c {
        AgentChunk::ToolProgress { progress, .. } => Some(progress.clone()),
        _ => None,
    });
    assert_eq!(
        progress,
        Some(Progress {
            value: 1.0,
            total: Some(2.0),
            message: Some("reading".into()),
        })
    );
    // Custom chunks are the application's: the model never reads them.
    let seen = serde_json::to_string(&model.requests()[1].messages).unwrap();
    assert!(!seen.contains("row"), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_calls_custom_chunks_come_in_the_decisions_stream() {
    let send = Tool::builder("send")
        .description("Sends a letter")
        .require_approval(true)
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            ctx.writer().write(&json!({ "stamp": "applied" }))?;
            Ok::<_, ToolError>(json!("sent"))
        })
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "send", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("Sent."),
    ]);
    let runtime = Runtime::builder().tool(send).build().unwrap();
    let agent = Agent::builder("clerk", model, runtime).build().unwrap();
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("send it")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    let done = agent
        .approve_tool_call(&paused.run_id, "c1")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.finish_reason, FinishReason::Stop);
    assert_eq!(
        of_call(&done.chunks, "c1"),
        [
            r#"custom {"stamp":"applied"}"#,
            r#"result "sent""#,
            "step 2"
        ]
    );
}

/// `report`: a background tool that waits for `release`, then reports
/// progress, writes a custom chunk and returns 12 pages.
fn report(release: &tokio::sync::watch::Receiver<bool>) -> Tool {
    let release = release.clone();
    Tool::builder("report")
        .description("Builds a report in the background")
        .background(BackgroundConfig::new())
        .execute(move |_input: Value, ctx: ToolContext<Value, Value>| {
            let mut release = release.clone();
            async move {
                let _ = release.wait_for(|go| *go).await;
                ctx.progress(1.0, Some(1.0), Some("printed"));
                ctx.writer().write(&json!({ "page": 12 }))?;
                Ok::<_, ToolError>(json!({ "pages": 12 }))
            }
        })
        .build()
        .unwrap()
}

/// Calls `report`, says it started it, then reports its result.
fn reporter_script() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "report", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("Started the report. "),
        ScriptedStep::answer("The report has 12 pages."),
    ])
}

const RESULT: &str = r#"Background task run-"#;

async fn a_task_settling_within_the_wait_enters_the_conversation<
    S: CallStore + RunStore + AuditLog + RuleStore + Outbox,
>(
    store: S,
) {
    let (release, released) = tokio::sync::watch::channel(false);
    let runtime = Runtime::builder()
        .tool(report(&released))
        .store(store)
        .build()
        .unwrap();
    let model = reporter_script();
    let agent = Agent::builder("reporter", model.clone(), runtime)
        .background_wait(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut stream = agent.stream(Thread::new("t1"), vec![Message::user("report?")]);
    let mut chunks = Vec::new();
    // The run goes on while the task runs: the model's second answer comes
    // before the task may finish.
    while let Some(chunk) = stream.next().await {
        let second_step_done = matches!(chunk, AgentChunk::StepFinish { step: 2, .. });
        chunks.push(chunk);
        if second_step_done {
            release.send(true).unwrap();
        }
        if matches!(chunks.last(), Some(AgentChunk::Finish { .. })) {
            break;
        }
    }
    assert_eq!(
        chunks.last(),
        Some(&AgentChunk::Finish {
            run_id: stream.run_id().to_owned(),
            reason: FinishReason::Stop
        })
    );
    assert_eq!(
        of_call(&chunks, "c1"),
        [
            "call",
            "started",
            "step 1",
            "step 2",
            "progress 1",
            r#"custom {"page":12}"#,
            r#"result {"pages":12}"#,
            "step 3",
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(task_results(&requests[1].messages).is_empty());
    let results = task_results(&requests[2].messages);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].starts_with(RESULT), "{results:?}");
    assert!(
        results[0].ends_with(r#"of tool report (call c1) completed. Result: {"pages":12}"#),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_tasks_result_enters_the_conversation_before_the_next_step() {
    a_task_settling_within_the_wait_enters_the_conversation(MemoryStore::new()).await;
    let tmp = temp_dir("background-wait");
    let dir = tmp.path().to_path_buf();
    let sqlite = SqliteStore::open(dir.join("runs.sqlite")).unwrap();
    a_task_settling_within_the_wait_enters_the_conversation(sqlite).await;
}

/// Two instances of `report` on one store: a front one that leaves tasks
/// to workers, and a back one that runs them.
fn front_and_back<S: CallStore + RunStore + AuditLog + RuleStore + Outbox>(
    store: S,
    released: &tokio::sync::watch::Receiver<bool>,
) -> (Runtime, Runtime) {
    let store = Arc::new(store);
    let front = Runtime::builder()
        .tool(report(released))
        .store(Arc::clone(&store))
        .leave_tasks_to_workers(true)
        .build()
        .unwrap();
    let back = Runtime::builder()
        .tool(report(released))
        .store(store)
        .build()
        .unwrap();
    (front, back)
}

/// A front instance that leaves tasks to workers ends its stream past the
/// wait; a worker on a back instance settles the task; the back instance
/// continues the run, once.
async fn another_instance_continues_the_run<
    S: CallStore + RunStore + AuditLog + RuleStore + Outbox,
>(
    store: S,
) {
    let (_release, released) = tokio::sync::watch::channel(true);
    let (front, back) = front_and_back(store, &released);
    let model = reporter_script();
    let agent = |runtime: &Runtime, wait| {
        Agent::builder("reporter", model.clone(), runtime.clone())
            .background_wait(wait)
            .build()
            .unwrap()
    };
    let (front_agent, back_agent) = (
        agent(&front, Duration::from_millis(100)),
        agent(&back, Duration::ZERO),
    );
    let first = front_agent
        .generate(Thread::new("t1"), vec![Message::user("report?")])
        .await
        .unwrap();
    assert_eq!(first.finish_reason, FinishReason::BackgroundTasks);
    assert_eq!(first.text, "Started the report. ");
    let awaited = back_agent.background_tasks(&first.run_id).await.unwrap();
    assert_eq!(
        (
            awaited.len(),
            awaited[0].call_id.as_str(),
            awaited[0].settled
        ),
        (1, "c1", false)
    );

    // Continued before the task ran: nothing to read, the stream ends as before.
    let early = back_agent
        .continue_run(&first.run_id)
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(early.finish_reason, FinishReason::BackgroundTasks);
    assert_eq!(model.requests().len(), 2, "the model was not asked");

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(back.worker().run_until(async move {
        let _ = stopped.await;
    }));
    let settled = back.wait(&awaited[0].task_id).await.unwrap();
    assert_eq!(settled.output(), Some(&json!({ "pages": 12 })));
    stop.send(()).unwrap();
    worker.await.unwrap();

    let done = back_agent
        .continue_run(&first.run_id)
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(
        (done.text.as_str(), &done.finish_reason),
        ("The report has 12 pages.", &FinishReason::Stop)
    );
    assert_eq!(
        of_call(&done.chunks, "c1"),
        [r#"result {"pages":12}"#, "step 1"]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(task_results(&requests[2].messages).len(), 1);
    // Its result was taken: nothing is awaited any more.
    let again = back_agent.continue_run(&first.run_id).await;
    assert!(
        matches!(
            again,
            Err(AgentError::NoBackgroundTasks { .. } | AgentError::UnknownRun { .. })
        ),
        "{again:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_wait_the_stream_ends_and_another_instance_continues_the_run() {
    another_instance_continues_the_run(MemoryStore::new()).await;
    let tmp = temp_dir("background-continue");
    let dir = tmp.path().to_path_buf();
    let sqlite = SqliteStore::open(dir.join("runs.sqlite")).unwrap();
    another_instance_continues_the_run(sqlite).await;
    if let Some((postgres, schema)) = common::postgres::store("background_continue").await {
        another_instance_continues_the_run(postgres).await;
        schema.drop().await;
    }
}

/// A run on thread t1 ends past its wait; a worker on another instance
/// settles its task; a stream on thread t2 takes nothing of it, and the
/// next stream on t1, on that other instance, takes its result, once.
async fn the_next_stream_on_the_thread_takes_the_result<
    S: CallStore + RunStore + AuditLog + RuleStore + Outbox,
>(
    store: S,
) {
    let (_release, released) = tokio::sync::watch::channel(true);
    let (front, back) = front_and_back(store, &released);
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "report", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("Started the report."),
        ScriptedStep::answer("Hello."),
        ScriptedStep::answer("It has 12 pages."),
    ]);
    let agent = |runtime: &Runtime| {
        Agent::builder("reporter", model.clone(), runtime.clone())
            .background_wait(Duration::from_millis(50))
            .build()
            .unwrap()
    };
    let (front_agent, back_agent) = (agent(&front), agent(&back));
    let first = front_agent
        .generate(Thread::new("t1"), vec![Message::user("report?")])
        .await
        .unwrap();
    assert_eq!(first.finish_reason, FinishReason::BackgroundTasks);
    let task_id = back_agent.background_tasks(&first.run_id).await.unwrap()[0]
        .task_id
        .clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(back.worker().run_until(async move {
        let _ = stopped.await;
    }));
    back.wait(&task_id).await.unwrap();
    stop.send(()).unwrap();
    worker.await.unwrap();

    let other = back_agent
        .generate(Thread::new("t2"), vec![Message::user("hi")])
        .await
        .unwrap();
    assert_eq!(
        (other.text.as_str(), &other.finish_reason),
        ("Hello.", &FinishReason::Stop)
    );
    assert!(task_results(&model.requests()[2].messages).is_empty());

    let history = vec![
        Message::user("report?"),
        Message::Assistant {
            text: "Started the report.".into(),
            tool_calls: vec![],
        },
        Message::user("Is it done?"),
    ];
    let next = back_agent
        .generate(Thread::new("t1"), history.clone())
        .await
        .unwrap();
    assert_eq!(
        (next.text.as_str(), &next.finish_reason),
        ("It has 12 pages.", &FinishReason::Stop)
    );
    // Named by its task: the call was another run's.
    assert_eq!(
        of_call(&next.chunks, &task_id),
        [r#"result {"pages":12}"#, "step 1"]
    );
    let messages = &model.requests()[3].messages;
    assert_eq!(messages[..3], history[..]);
    let results = task_results(messages);
    assert_eq!(results.len(), 1, "{messages:?}");
    assert!(
        results[0].ends_with(r#"completed. Result: {"pages":12}"#),
        "{results:?}"
    );
    // The earlier run gave its task away.
    let left = back_agent.background_tasks(&first.run_id).await;
    assert!(
        matches!(&left, Ok(tasks) if tasks.is_empty())
            || matches!(left, Err(AgentError::UnknownRun { .. })),
        "{left:?}"
    );
    assert!(back_agent.continue_run(&first.run_id).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_stream_on_the_thread_takes_the_results_an_earlier_run_awaited() {
    the_next_stream_on_the_thread_takes_the_result(MemoryStore::new()).await;
    let tmp = temp_dir("background-thread");
    let dir = tmp.path().to_path_buf();
    let sqlite = SqliteStore::open(dir.join("runs.sqlite")).unwrap();
    the_next_stream_on_the_thread_takes_the_result(sqlite).await;
    if let Some((postgres, schema)) = common::postgres::store("background_thread").await {
        the_next_stream_on_the_thread_takes_the_result(postgres).await;
        schema.drop().await;
    }
}

/// The child process's role, and the directory of its store.
const ROLE: &str = "TOOL_AGENT_BACKGROUND_ROLE";
const DIR: &str = "TOOL_AGENT_BACKGROUND_DIR";
/// The lease of the SIGKILL test's runtimes: short, so recovery comes soon.
const CHILD_LEASE: Duration = Duration::from_millis(500);

/// The SIGKILL test's instances: `report` is a background task with one
/// retry that never ends its first attempt, over one SQLite file.
fn instance(dir: &Path) -> Runtime {
    let report = Tool::builder("report")
        .description("Builds a report in the background")
        .background(BackgroundConfig::new().max_retries(1))
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            if ctx.attempt() == 1 {
                std::future::pending::<()>().await;
            }
            Ok::<_, ToolError>(json!({ "attempt": ctx.attempt() }))
        })
        .build()
        .unwrap();
    Runtime::builder()
        .tool(report)
        .sqlite_store(dir.join("runs.sqlite"))
        .lease(CHILD_LEASE)
        .build()
        .unwrap()
}

/// Run by the SIGKILL test in a child process: starts the run, and says
/// `READY <run id>` once the run waits for its task, stored.
#[test]
#[ignore = "a child process of the SIGKILL test"]
fn child_process() {
    let (Ok(role), Ok(dir)) = (std::env::var(ROLE), std::env::var(DIR)) else {
        panic!("run by the SIGKILL test only");
    };
    assert_eq!(role, "starter");
    // Gone with the test that started it, whatever happens to it.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let runtime = instance(Path::new(&dir));
        let model = ScriptedModel::new([
            ScriptedStep::new()
                .tool_call("c1", "report", json!({}))
                .finish(ModelFinish::ToolCalls),
            ScriptedStep::answer("Started the report."),
        ]);
        let agent = Agent::builder("reporter", model, runtime.clone())
            .background_wait(Duration::from_secs(600))
            .build()
            .unwrap();
        let mut stream = agent.stream(Thread::new("t1"), vec![Message::user("report?")]);
        let run_id = stream.run_id().to_owned();
        let reader = tokio::spawn(async move { while stream.next().await.is_some() {} });
        // The run waits for its task once it is stored.
        while runtime.runs().load(&run_id).await.unwrap().is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!("READY {run_id}");
        std::io::stdout().flush().unwrap();
        reader.await.unwrap();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_process_was_killed_before_its_task_settled_is_continued_on_another() {
    let tmp = temp_dir("background-sigkill");
    let dir = tmp.path().to_path_buf();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            common::test_name(module_path!(), "child_process").as_str(),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "starter")
        .env(DIR, &dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let run_id = lines
        .map_while(Result::ok)
        // libtest starts the line with the test's name.
        .find_map(|line| line.split_once("READY ").map(|(_, id)| id.to_owned()));
    let Some(run_id) = run_id else {
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        panic!("the child exited before it was ready: {stderr}");
    };
    child.kill().unwrap(); // SIGKILL
    assert_eq!(
        child.wait().unwrap().signal(),
        Some(9),
        "killed with SIGKILL"
    );

    // Another instance: the task's lease runs out, it is recovered (run
    // again: its declared retry), and the run continued there.
    let survivor = instance(&dir);
    let model = ScriptedModel::new([ScriptedStep::answer("The report is ready.")]);
    let agent = Agent::builder("reporter", model.clone(), survivor.clone())
        .background_wait(Duration::ZERO)
        .build()
        .unwrap();
    let awaited = agent.background_tasks(&run_id).await.unwrap();
    assert_eq!(
        (
            awaited.len(),
            awaited[0].call_id.as_str(),
            awaited[0].settled
        ),
        (1, "c1", false)
    );
    // Recovered once its lease ran out (a liveness bound: 30 s).
    let mut recovered = Vec::new();
    for _ in 0..300 {
        recovered = survivor.recover().await.unwrap();
        if !recovered.is_empty() {
            break;
        }
        tokio::time::sleep(CHILD_LEASE / 5).await;
    }
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert!(recovered[0].rerun);

    let done = agent.continue_run(&run_id).await.unwrap().output().await;
    assert_eq!(
        (done.text.as_str(), &done.finish_reason),
        ("The report is ready.", &FinishReason::Stop)
    );
    assert_eq!(
        of_call(&done.chunks, "c1"),
        [r#"result {"attempt":2}"#, "step 1"]
    );
    // The model read the whole conversation, the task's result once.
    let messages = &model.requests()[0].messages;
    let results = task_results(messages);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].ends_with(r#"(call c1) completed. Result: {"attempt":2}"#),
        "{results:?}"
    );
    assert!(
        messages.contains(&Message::Assistant {
            text: "Started the report.".into(),
            tool_calls: vec![],
        }),
        "{messages:?}"
    );
    assert!(agent.continue_run(&run_id).await.is_err(), "taken once");
}
