//! The agent loop through its public API, with the scripted model
//! (`ScriptedModel`): approval pauses continued by another runtime on the
//! same store file (a restart), declines the model reads and the tool never
//! ran, auto-resume from the user's reply, parallel calls where one waits,
//! decisions naming calls that do not wait, and model failures; and the
//! scripted model itself (text, tool calls and the results the next step
//! reads, cut-off calls, failures, running past its script).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_agent::{
    Agent, AgentChunk, AgentError, FinishReason, Message, ModelFinish, ModelRequest, ScriptedModel,
    ScriptedStep, Thread, ToolCallRequest,
};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::Runtime;

/// `step` with a tool call, its arguments streamed in two pieces.
fn call(step: ScriptedStep, call_id: &str, tool: &str, args: Value) -> ScriptedStep {
    let text = args.to_string();
    let (head, tail) = text.split_at(text.len() / 2);
    step.tool_call_deltas(call_id, tool, [head, tail])
}

/// A step that makes these calls (each streamed in two pieces) and waits
/// for their results.
fn calls(list: &[(&str, &str, Value)]) -> ScriptedStep {
    list.iter()
        .fold(ScriptedStep::new(), |step, (call_id, tool, args)| {
            call(step, call_id, tool, args.clone())
        })
        .finish(ModelFinish::ToolCalls)
}

/// The tool results a request holds, as `id=content` (`!` after a
/// failure's), in order.
fn read(request: &ModelRequest) -> String {
    let read: Vec<String> = tool_results(request)
        .iter()
        .map(|(id, content, error)| format!("{id}={content}{}", if *error { "!" } else { "" }))
        .collect();
    read.join(" ")
}

fn tool_results(request: &ModelRequest) -> Vec<(String, Value, bool)> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult {
                call_id,
                result,
                is_error,
                ..
            } => Some((call_id.clone(), result.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

type Runs = Arc<Mutex<Vec<Value>>>;

/// `transfer` needs approval and logs each run; `lookup` does not.
fn tools(runs: &Runs) -> Vec<Tool> {
    let seen = Arc::clone(runs);
    let transfer = Tool::builder("transfer")
        .description("Sends money")
        .require_approval(true)
        .input_schema(json!({ "type": "object", "properties": { "amount": { "type": "integer" } }, "required": ["amount"] }))
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            seen.lock().unwrap().push(input.clone());
            async move { Ok::<_, ToolError>(json!({ "sent": input["amount"] })) }
        })
        .build()
        .unwrap();
    let lookup = Tool::builder("lookup")
        .description("Looks up a balance")
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                Ok::<_, ToolError>(json!({ "balance": 100 }))
            },
        )
        .build()
        .unwrap();
    vec![transfer, lookup]
}

/// Calls `transfer` (and `lookup` beside it, when `parallel`), then, once
/// it read the results, answers "done"; `runs` times over.
fn banker(parallel: bool, runs: usize) -> ScriptedModel {
    let mut first = vec![("c-transfer", "transfer", json!({ "amount": 10 }))];
    if parallel {
        first.push(("c-lookup", "lookup", json!({})));
    }
    ScriptedModel::new((0..runs).flat_map(|_| [calls(&first), ScriptedStep::answer("done")]))
}

/// A new directory, removed with what it holds when the guard drops, also
/// when the test fails: keep the guard until the test's end.
fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tool-runtime-agent-")
        .tempdir()
        .unwrap()
}

fn agent_on(model: ScriptedModel, runtime: Runtime) -> Agent {
    Agent::builder("banker", model, runtime)
        .instructions("You move money")
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_pause_is_continued_by_another_runtime_on_the_same_store_after_a_restart() {
    let runs = Runs::default();
    let tmp = temp_dir();
    let path = tmp.path().join("approval.sqlite");
    let model = banker(false, 1);
    let first = Runtime::builder()
        .tools(tools(&runs))
        .sqlite_store(&path)
        .build()
        .unwrap();
    let paused = agent_on(model.clone(), first)
        .generate(Thread::new("t1"), vec![Message::user("send 10")])
        .await
        .unwrap();
    assert_eq!(
        paused.finish_reason,
        FinishReason::Suspended,
        "{:?}",
        paused.chunks
    );
    let approval = paused
        .chunks
        .iter()
        .find_map(|chunk| match chunk {
            AgentChunk::ToolCallApproval {
                call_id,
                args,
                resume_schema,
                ..
            } => Some((call_id.clone(), args.clone(), resume_schema.clone())),
            _ => None,
        })
        .expect("a tool-call-approval chunk");
    assert_eq!(approval.0, "c-transfer");
    assert_eq!(approval.1, json!({ "amount": 10 }));
    assert_eq!(approval.2["required"], json!(["approved"]));
    assert!(
        runs.lock().unwrap().is_empty(),
        "nothing ran before the approval"
    );

    // A new runtime on the same file: the process restarted.
    let second = Runtime::builder()
        .tools(tools(&runs))
        .sqlite_store(&path)
        .build()
        .unwrap();
    let agent = agent_on(model.clone(), second);
    let done = agent
        .approve_tool_call(&paused.run_id, "c-transfer")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.finish_reason, FinishReason::Stop, "{:?}", done.chunks);
    assert_eq!(done.text, "done");
    // The model read the transfer's result.
    assert_eq!(read(&model.requests()[1]), r#"c-transfer={"sent":10}"#);
    assert!(done.chunks.iter().any(|c| matches!(
        c,
        AgentChunk::ToolResult { call_id, result, .. } if call_id == "c-transfer" && *result == json!({ "sent": 10 })
    )));
    assert_eq!(*runs.lock().unwrap(), [json!({ "amount": 10 })]);

    // Asked again: the call no longer waits.
    let again = agent.approve_tool_call(&paused.run_id, "c-transfer").await;
    assert!(
        matches!(&again, Err(AgentError::NotWaiting { call_id, .. }) if call_id == "c-transfer"),
        "{again:?}"
    );
    assert_eq!(runs.lock().unwrap().len(), 1, "ran once");
    // The model saw the system instructions and the exported tools each step.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|r| r.instructions == "You move money" && r.tools.len() == 2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_call_never_runs_and_the_model_reads_the_reason() {
    let runs = Runs::default();
    let model = banker(false, 2);
    let runtime = Runtime::builder().tools(tools(&runs)).build().unwrap();
    let agent = agent_on(model.clone(), runtime);
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("send 10")])
        .await
        .unwrap();
    let done = agent
        .decline_tool_call(&paused.run_id, "c-transfer", None)
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.finish_reason, FinishReason::Stop);
    assert_eq!(done.text, "done");
    assert_eq!(
        read(&model.requests()[1]),
        r#"c-transfer="Tool call was not approved by the user"!"#
    );
    assert!(
        runs.lock().unwrap().is_empty(),
        "a declined call never runs"
    );

    let paused = agent
        .generate(Thread::new("t2"), vec![Message::user("send 10")])
        .await
        .unwrap();
    let done = agent
        .decline_tool_call(&paused.run_id, "c-transfer", Some("too much".into()))
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.text, "done");
    assert_eq!(read(&model.requests()[3]), r#"c-transfer="too much"!"#);
    assert!(
        done.chunks
            .iter()
            .any(|c| matches!(c, AgentChunk::ToolError { call_id, .. } if call_id == "c-transfer"))
    );
    assert!(runs.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_where_one_waits_run_the_other_and_continue_with_both_results() {
    let runs = Runs::default();
    let runtime = Runtime::builder().tools(tools(&runs)).build().unwrap();
    let model = banker(true, 1);
    let agent = agent_on(model.clone(), runtime);
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("send 10")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    assert!(paused.chunks.iter().any(|c| matches!(
        c,
        AgentChunk::ToolResult { call_id, .. } if call_id == "c-lookup"
    )));
    let done = agent
        .approve_tool_call(&paused.run_id, "c-transfer")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.text, "done");
    // Both results, in the order of the calls.
    assert_eq!(
        read(&model.requests()[1]),
        r#"c-transfer={"sent":10} c-lookup={"balance":100}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_name_a_waiting_call_of_the_run_or_fail_clearly() {
    let runs = Runs::default();
    let runtime = Runtime::builder().tools(tools(&runs)).build().unwrap();
    let agent = agent_on(banker(true, 1), runtime);
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("send 10")])
        .await
        .unwrap();
    let wrong_call = agent.approve_tool_call(&paused.run_id, "c-lookup").await;
    let error = wrong_call.expect_err("c-lookup does not wait");
    assert_eq!(
        error.to_string(),
        format!(
            "call \"c-lookup\" is not waiting for approval in run \"{}\"; waiting: c-transfer (approval)",
            paused.run_id
        )
    );
    let wrong_kind = agent
        .resume(&paused.run_id, "c-transfer", json!({}))
        .await
        .expect_err("an approval is not resumed");
    assert!(matches!(
        wrong_kind,
        AgentError::NotWaiting {
            expected: "resume data",
            ..
        }
    ));
    let unknown = agent
        .approve_tool_call("run-nope", "c-transfer")
        .await
        .expect_err("no such run");
    assert!(matches!(unknown, AgentError::UnknownRun { .. }));
    // A reply does not get past an approval.
    let reply = agent.reply(&paused.run_id, "yes, do it").await;
    assert!(
        matches!(reply, Err(AgentError::ApprovalPending { .. })),
        "{reply:?}"
    );
    assert!(runs.lock().unwrap().is_empty());
}

/// `book`: suspends asking for seats, then books them.
fn booking(runs: &Runs) -> Tool {
    let seen = Arc::clone(runs);
    Tool::builder("book")
        .description("Books a table")
        .input_schema(json!({ "type": "object", "properties": { "restaurant": { "type": "string" } }, "required": ["restaurant"], "additionalProperties": false }))
        .suspend_schema(json!({ "type": "object", "properties": { "question": { "type": "string" } } }))
        .resume_schema(json!({ "type": "object", "properties": { "seats": { "type": "integer", "minimum": 1 } }, "required": ["seats"] }))
        .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
            let seen = Arc::clone(&seen);
            async move {
                let Some(data) = ctx.resume_data() else {
                    return ctx.suspend(json!({ "question": "how many seats?" }));
                };
                seen.lock().unwrap().push(json!({ "input": input, "resume": data }));
                Ok::<_, ToolError>(json!({ "booked": data["seats"], "at": input["restaurant"] }))
            }
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_call_is_resumed_from_the_users_reply_with_auto_resume() {
    let runs = Runs::default();
    let runtime = Runtime::builder().tool(booking(&runs)).build().unwrap();
    let model = ScriptedModel::new([
        calls(&[("c1", "book", json!({ "restaurant": "Roma" }))]),
        // After the user's reply: resume c1 with the data it gave.
        calls(&[(
            "c2",
            "book",
            json!({ "restaurant": "Roma", "suspendedToolCallId": "c1", "resumeData": { "seats": 4 } }),
        )]),
        ScriptedStep::answer("booked"),
    ]);
    let agent = Agent::builder("host", model.clone(), runtime)
        .auto_resume_suspended_tools(true)
        .build()
        .unwrap();
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("book at Roma")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    assert!(paused.chunks.iter().any(|c| matches!(
        c,
        AgentChunk::ToolCallSuspended { call_id, payload, .. } if call_id == "c1" && payload["question"] == "how many seats?"
    )));
    // The tool's input schema offers the resume fields, resumeData typed from its resume schema.
    let exported = &model.requests()[0].tools[0];
    let properties = &exported["function"]["parameters"]["properties"];
    assert_eq!(
        properties["resumeData"]["properties"]["seats"]["type"], "integer",
        "{exported}"
    );
    assert!(properties["suspendedToolCallId"].is_object());

    let done = agent
        .reply(&paused.run_id, "4 people")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.finish_reason, FinishReason::Stop, "{:?}", done.chunks);
    assert_eq!(done.text, "booked");
    // The tool ran once, resumed, with its original input (without the fields) and the data.
    assert_eq!(
        *runs.lock().unwrap(),
        [json!({ "input": { "restaurant": "Roma" }, "resume": { "seats": 4 } })]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "no step past the script");
    assert_eq!(
        requests[0].messages.last(),
        Some(&Message::user("book at Roma"))
    );
    // The suspension is listed for the model, with its id, when it reads the reply.
    assert!(
        requests[1]
            .instructions
            .contains("\"suspendedToolCallId\":\"c1\""),
        "{}",
        requests[1].instructions
    );
    assert_eq!(
        requests[1].messages.last(),
        Some(&Message::user("4 people"))
    );
    let results = tool_results(&requests[2]);
    assert_eq!(
        results.last().unwrap().1,
        json!({ "booked": 4, "at": "Roma" })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_failure_ends_the_stream_with_an_error_chunk() {
    let runtime = Runtime::builder().build().unwrap();
    let agent = agent_on(
        ScriptedModel::new([ScriptedStep::error("provider down")]),
        runtime,
    );
    let out = agent
        .generate(Thread::new("t1"), vec![Message::user("hi")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Error);
    assert!(
        out.chunks
            .iter()
            .any(|c| matches!(c, AgentChunk::Error { message } if message == "provider down"))
    );
}

/// Calls `book` twice in one step (Roma and Milano), then answers "booked"
/// once it read the results.
fn two_bookings() -> ScriptedModel {
    ScriptedModel::new([
        calls(&[
            ("c-roma", "book", json!({ "restaurant": "Roma" })),
            ("c-milano", "book", json!({ "restaurant": "Milano" })),
        ]),
        ScriptedStep::answer("booked"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_suspended_calls_each_get_their_own_resume_data_and_bad_data_keeps_one_waiting() {
    let runs = Runs::default();
    let runtime = Runtime::builder().tool(booking(&runs)).build().unwrap();
    let model = two_bookings();
    let agent = agent_on(model.clone(), runtime);
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("book both")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);

    // Invalid data (seats below 1): the call stays suspended, and the stream says why.
    let refused = agent
        .resume(&paused.run_id, "c-milano", json!({ "seats": 0 }))
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(
        refused.finish_reason,
        FinishReason::Suspended,
        "{:?}",
        refused.chunks
    );
    assert!(
        refused
            .chunks
            .iter()
            .any(|c| matches!(c, AgentChunk::ToolError { call_id, .. } if call_id == "c-milano"))
    );

    let one = agent
        .resume(&paused.run_id, "c-milano", json!({ "seats": 2 }))
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(
        one.finish_reason,
        FinishReason::Suspended,
        "c-roma still waits"
    );
    let both = agent
        .resume(&paused.run_id, "c-roma", json!({ "seats": 4 }))
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(both.finish_reason, FinishReason::Stop, "{:?}", both.chunks);
    assert_eq!(both.text, "booked");
    assert_eq!(
        read(&model.requests()[1]),
        r#"c-roma={"booked":4,"at":"Roma"} c-milano={"booked":2,"at":"Milano"}"#
    );
    let mut ran = runs.lock().unwrap().clone();
    ran.sort_by_key(|r| r["input"]["restaurant"].as_str().unwrap().to_owned());
    assert_eq!(
        ran,
        [
            json!({ "input": { "restaurant": "Milano" }, "resume": { "seats": 2 } }),
            json!({ "input": { "restaurant": "Roma" }, "resume": { "seats": 4 } }),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_approvals_in_one_step_are_decided_each_for_its_own_call() {
    let runs = Runs::default();
    let model = ScriptedModel::new([
        calls(&[
            ("c-a", "transfer", json!({ "amount": 1 })),
            ("c-b", "transfer", json!({ "amount": 2 })),
        ]),
        ScriptedStep::answer("done"),
    ]);
    let runtime = Runtime::builder().tools(tools(&runs)).build().unwrap();
    let agent = agent_on(model.clone(), runtime);
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("two transfers")])
        .await
        .unwrap();
    let approved = agent
        .approve_tool_call(&paused.run_id, "c-a")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(
        approved.finish_reason,
        FinishReason::Suspended,
        "c-b still waits"
    );
    assert_eq!(
        *runs.lock().unwrap(),
        [json!({ "amount": 1 })],
        "only c-a ran"
    );
    let done = agent
        .decline_tool_call(&paused.run_id, "c-b", Some("no".into()))
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.text, "done");
    assert_eq!(read(&model.requests()[1]), r#"c-a={"sent":1} c-b="no"!"#);
    assert_eq!(runs.lock().unwrap().len(), 1, "the declined call never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_approvals_from_two_runtimes_run_the_call_once_and_the_run_goes_on_once() {
    let runs = Runs::default();
    let tmp = temp_dir();
    let path = tmp.path().join("concurrent.sqlite");
    let model = banker(false, 1);
    let agents: Vec<Agent> = (0..2)
        .map(|_| {
            let runtime = Runtime::builder()
                .tools(tools(&runs))
                .sqlite_store(&path)
                .build()
                .unwrap();
            agent_on(model.clone(), runtime)
        })
        .collect();
    let paused = agents[0]
        .generate(Thread::new("t1"), vec![Message::user("send 10")])
        .await
        .unwrap();
    let decisions: Vec<_> = agents
        .iter()
        .map(|agent| {
            let (agent, run_id) = (agent.clone(), paused.run_id.clone());
            tokio::spawn(async move {
                match agent.approve_tool_call(&run_id, "c-transfer").await {
                    Ok(stream) => Some(stream.output().await),
                    Err(_) => None,
                }
            })
        })
        .collect();
    let mut finished = Vec::new();
    for decision in decisions {
        if let Some(output) = decision.await.unwrap() {
            finished.push(output.finish_reason);
        }
    }
    assert_eq!(runs.lock().unwrap().len(), 1, "the tool ran once");
    let stops = finished
        .iter()
        .filter(|r| **r == FinishReason::Stop)
        .count();
    assert_eq!(stops, 1, "the run went on once: {finished:?}");
    let steps = model.requests().len();
    assert_eq!(steps, 2, "one model call before the pause, one after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_off_mid_arguments_never_runs_and_the_model_reads_why() {
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .cut_off_call("c1", "transfer", "{\"amou")
            .finish(ModelFinish::Length),
        ScriptedStep::answer("sorry"),
    ]);
    let runtime = Runtime::builder().tools(tools(&runs)).build().unwrap();
    let agent = agent_on(model.clone(), runtime);
    let out = agent
        .generate(Thread::new("t1"), vec![Message::user("send")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Stop, "{:?}", out.chunks);
    assert!(runs.lock().unwrap().is_empty());
    let (_, error, is_error) = tool_results(&model.requests()[1]).remove(0);
    assert!(
        is_error && error.as_str().unwrap().contains("cut off"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stops_after_max_steps() {
    // A model that would go on calling tools.
    let model =
        ScriptedModel::new((0..5).map(|n| calls(&[(&format!("c{n}"), "lookup", json!({}))])));
    let runtime = Runtime::builder()
        .tools(tools(&Runs::default()))
        .build()
        .unwrap();
    let agent = Agent::builder("looper", model.clone(), runtime)
        .max_steps(3)
        .build()
        .unwrap();
    let out = agent
        .generate(Thread::new("t1"), vec![Message::user("go")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::ToolCalls);
    assert_eq!(model.requests().len(), 3);
    assert_eq!(model.remaining(), 2);
    let steps = out
        .chunks
        .iter()
        .filter(|c| matches!(c, AgentChunk::StepFinish { .. }))
        .count();
    assert_eq!(steps, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_read_the_agent_run_and_thread_when_called_and_when_approved() {
    let whoami = |id: &str, approval: bool| {
        Tool::builder(id)
            .description("Says who runs it")
            .require_approval(approval)
            .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
                let agent = ctx.agent().expect("an agent runs the tool");
                Ok::<_, ToolError>(json!({
                    "agent": agent.agent_id, "run": agent.run_id,
                    "thread": agent.thread_id, "resource": agent.resource_id,
                }))
            })
            .build()
            .unwrap()
    };
    let model = ScriptedModel::new([
        calls(&[
            ("c-now", "whoami", json!({})),
            ("c-later", "whoami-approved", json!({})),
        ]),
        ScriptedStep::answer("done"),
    ]);
    let runtime = Runtime::builder()
        .tools([whoami("whoami", false), whoami("whoami-approved", true)])
        .build()
        .unwrap();
    let agent = Agent::builder("concierge", model.clone(), runtime)
        .build()
        .unwrap();
    let paused = agent
        .generate(
            Thread::new("t-7").with_resource("user-3"),
            vec![Message::user("who?")],
        )
        .await
        .unwrap();
    let done = agent
        .approve_tool_call(&paused.run_id, "c-later")
        .await
        .unwrap()
        .output()
        .await;
    let expected = json!({ "agent": "concierge", "run": paused.run_id, "thread": "t-7", "resource": "user-3" });
    assert_eq!(done.text, "done");
    let read: Vec<Value> = tool_results(&model.requests()[1])
        .into_iter()
        .map(|(_, content, _)| content)
        .collect();
    assert_eq!(read, [expected.clone(), expected]);
    // Outside an agent, no agent context.
    let plain = agent
        .runtime()
        .call(tool_runtime::ToolCall::new("c-plain", "whoami", json!({})))
        .await;
    assert!(
        plain
            .error()
            .is_some_and(|e| e.message().contains("an agent runs the tool")),
        "{plain:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_resume_fields_are_strict_compatible_and_background_tools_know_they_are_background() {
    let strict_booking = Tool::builder("book")
        .description("Books a table")
        .strict(true)
        .input_schema(json!({ "type": "object", "properties": { "restaurant": { "type": "string" } }, "required": ["restaurant"], "additionalProperties": false }))
        .resume_schema(json!({ "type": "object", "properties": { "seats": { "type": "integer" } }, "required": ["seats"], "additionalProperties": false }))
        .execute(|_input: Value, _ctx: ToolContext<Value, Value>| async move { Ok::<_, ToolError>(json!("booked")) })
        .build()
        .unwrap();
    let report = Tool::builder("report")
        .description("Builds a report in the background")
        .background(tool_core::BackgroundConfig::new())
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(json!({ "background": ctx.agent().map(|a| a.background) }))
        })
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        calls(&[("c1", "report", json!({}))]),
        ScriptedStep::answer("ok"),
        // The task's result comes back: the model reads it.
        ScriptedStep::answer("it ran in the background"),
    ]);
    let runtime = Runtime::builder()
        .tools([strict_booking, report])
        .build()
        .unwrap();
    let agent = Agent::builder("host", model.clone(), runtime)
        .auto_resume_suspended_tools(true)
        .build()
        .unwrap();
    let out = agent
        .generate(Thread::new("t1"), vec![Message::user("report")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Stop);
    let book = model.requests()[0]
        .tools
        .iter()
        .find(|t| t["function"]["name"] == "book")
        .cloned()
        .unwrap();
    // Strict mode: every field required, the optional ones nullable.
    assert_eq!(book["function"]["strict"], true, "{book}");
    let parameters = &book["function"]["parameters"];
    let required: Vec<&str> = parameters["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        required,
        ["restaurant", "suspendedToolCallId", "resumeData"],
        "{parameters}"
    );
    assert!(
        parameters["properties"]["resumeData"]
            .to_string()
            .contains("null"),
        "{parameters}"
    );
    // The background task's tool knows it runs in the background.
    let task_id = out
        .chunks
        .iter()
        .find_map(|c| match c {
            AgentChunk::BackgroundTaskStarted {
                call_id, task_id, ..
            } if call_id == "c1" => Some(task_id.as_str()),
            _ => None,
        })
        .expect("the call started a task");
    let wait = agent.runtime().wait(task_id).await.unwrap();
    assert_eq!(wait.output(), Some(&json!({ "background": true })));
    assert!(out.chunks.contains(&AgentChunk::ToolResult {
        call_id: "c1".into(),
        tool_name: "report".into(),
        result: json!({ "background": true }),
        model_output: None,
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_show_display_projections_the_transcript_keeps_transcript_ones_and_the_model_reads_raw()
 {
    use tool_core::transform::{Phase, ToolTransform};
    let secret = Tool::builder("secret")
        .description("Issues a token")
        .transform(
            ToolTransform::new()
                .display(Phase::Output, |ctx| {
                    Some(json!({ "ok": ctx.payload["ok"] }))
                })
                .transcript(Phase::Output, |ctx| {
                    Some(json!({ "token": "[redacted]", "ok": ctx.payload["ok"] }))
                }),
        )
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                Ok::<_, ToolError>(json!({ "token": "abc", "ok": true }))
            },
        )
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        calls(&[("c1", "secret", json!({}))]),
        ScriptedStep::answer("done"),
    ]);
    let runtime = Runtime::builder().tool(secret).build().unwrap();
    let agent = Agent::builder("issuer", model.clone(), runtime)
        .build()
        .unwrap();
    let out = agent
        .generate(Thread::new("t1"), vec![Message::user("token please")])
        .await
        .unwrap();
    let shown = out.chunks.iter().find_map(|c| match c {
        AgentChunk::ToolResult { result, .. } => Some(result.clone()),
        _ => None,
    });
    assert_eq!(
        shown,
        Some(json!({ "ok": true })),
        "chunks carry the display projection"
    );
    let read = tool_results(&model.requests()[1]);
    assert_eq!(
        read[0].1,
        json!({ "token": "abc", "ok": true }),
        "the model reads the raw result"
    );
    let transcript = agent.transcript(&out.run_id).await.unwrap();
    let kept = transcript.iter().find_map(|m| match m {
        Message::ToolResult { result, .. } => Some(result.clone()),
        _ => None,
    });
    assert_eq!(
        kept,
        Some(json!({ "token": "[redacted]", "ok": true })),
        "the transcript keeps the transcript projection"
    );
}

// ---------------------------------------------------------------------------
// The scripted model itself.

/// The chunks of an output that show what the model streamed: its text
/// deltas, its calls' starts, errors and the steps' ends.
fn streamed(chunks: &[AgentChunk]) -> Vec<String> {
    chunks
        .iter()
        .filter_map(|chunk| match chunk {
            AgentChunk::TextDelta { text } => Some(format!("text {text}")),
            AgentChunk::ToolCallInputStart { call_id, tool_name } => {
                Some(format!("call {call_id} {tool_name}"))
            }
            AgentChunk::ToolError { call_id, .. } => Some(format!("tool error {call_id}")),
            AgentChunk::Error { message } => Some(format!("error {message}")),
            AgentChunk::StepFinish { step, reason, .. } => Some(format!("step {step} {reason:?}")),
            _ => None,
        })
        .collect()
}

#[test]
fn a_scripted_model_is_cheap_to_clone_and_shareable_across_threads() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<ScriptedModel>();
    shareable::<ScriptedStep>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_text_steps_stream_their_deltas_one_step_per_request() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Hel")
            .text("lo")
            .finish(ModelFinish::Stop),
        ScriptedStep::answer("Again"),
    ]);
    let agent = Agent::builder(
        "greeter",
        model.clone(),
        Runtime::builder().build().unwrap(),
    )
    .instructions("Greet")
    .build()
    .unwrap();
    let first = agent
        .generate(Thread::new("t1"), vec![Message::user("hi")])
        .await
        .unwrap();
    assert_eq!(
        (first.text.as_str(), &first.finish_reason),
        ("Hello", &FinishReason::Stop)
    );
    assert_eq!(
        streamed(&first.chunks),
        ["text Hel", "text lo", "step 1 Stop"]
    );
    assert_eq!(model.remaining(), 1);
    // The next request, from another run, plays the next step.
    let second = agent
        .generate(Thread::new("t2"), vec![Message::user("hi again")])
        .await
        .unwrap();
    assert_eq!(second.text, "Again");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].instructions, "Greet");
    assert_eq!(requests[0].messages, [Message::user("hi")]);
    assert_eq!(requests[1].messages, [Message::user("hi again")]);
    assert!(requests[0].tools.is_empty());
    assert_eq!(model.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_tool_call_runs_and_the_next_step_sees_its_result_in_its_request() {
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Checking. ")
            .tool_call("c1", "lookup", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("You have 100."),
    ]);
    let runtime = Runtime::builder().tools(tools(&runs)).build().unwrap();
    let out = agent_on(model.clone(), runtime)
        .generate(Thread::new("t1"), vec![Message::user("balance?")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Stop, "{:?}", out.chunks);
    assert_eq!(out.text, "Checking. You have 100.");
    assert_eq!(
        streamed(&out.chunks),
        [
            "text Checking. ",
            "call c1 lookup",
            "step 1 ToolCalls",
            "text You have 100.",
            "step 2 Stop"
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    // Both steps were offered the tools, as the OpenAI Chat export.
    let names: Vec<&Value> = requests[0]
        .tools
        .iter()
        .map(|t| &t["function"]["name"])
        .collect();
    assert_eq!(names, [&json!("lookup"), &json!("transfer")]);
    assert_eq!(requests[1].tools, requests[0].tools);
    // The second saw the call and its result.
    assert_eq!(
        requests[1].messages,
        [
            Message::user("balance?"),
            Message::Assistant {
                text: "Checking. ".into(),
                tool_calls: vec![ToolCallRequest {
                    call_id: "c1".into(),
                    tool_name: "lookup".into(),
                    arguments: json!({}),
                }],
            },
            Message::ToolResult {
                call_id: "c1".into(),
                tool_name: "lookup".into(),
                result: json!({ "balance": 100 }),
                model_output: None,
                is_error: false,
            },
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_cut_off_call_never_runs_and_the_next_step_reads_why() {
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .cut_off_call("c1", "transfer", "{\"amount\": 1")
            .finish(ModelFinish::Length),
        ScriptedStep::answer("I was cut off."),
    ]);
    let runtime = Runtime::builder().tools(tools(&runs)).build().unwrap();
    let out = agent_on(model.clone(), runtime)
        .generate(Thread::new("t1"), vec![Message::user("send")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Stop, "{:?}", out.chunks);
    assert_eq!(
        streamed(&out.chunks),
        [
            "call c1 transfer",
            "tool error c1",
            "step 1 Length",
            "text I was cut off.",
            "step 2 Stop"
        ]
    );
    assert!(runs.lock().unwrap().is_empty(), "a cut-off call never runs");
    let (call_id, error, is_error) = tool_results(&model.requests()[1]).remove(0);
    assert_eq!(call_id, "c1");
    let error = error.as_str().unwrap().to_owned();
    assert!(
        is_error && error.contains("cut off") && error.contains("token limit"),
        "{error}"
    );
    // The cut call is in the conversation, before its result.
    assert!(
        matches!(
            &model.requests()[1].messages[1],
            Message::Assistant { tool_calls, .. } if tool_calls.len() == 1 && tool_calls[0].call_id == "c1"
        ),
        "{:?}",
        model.requests()[1].messages
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_refusal_is_its_text_and_its_finish_reason() {
    let model = ScriptedModel::new([ScriptedStep::new()
        .text("I can't help with that.")
        .finish(ModelFinish::Refusal)]);
    let out = agent_on(model, Runtime::builder().build().unwrap())
        .generate(Thread::new("t1"), vec![Message::user("hack it")])
        .await
        .unwrap();
    assert_eq!(out.text, "I can't help with that.");
    assert_eq!(out.finish_reason, FinishReason::Refusal, "{:?}", out.chunks);
    assert_eq!(
        streamed(&out.chunks),
        ["text I can't help with that.", "step 1 Refusal"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_error_step_ends_the_run_with_its_message_after_what_it_streamed() {
    let model = ScriptedModel::new([ScriptedStep::new()
        .text("Let me")
        .fail("connection reset")
        .text(" never streamed")]);
    let out = agent_on(model.clone(), Runtime::builder().build().unwrap())
        .generate(Thread::new("t1"), vec![Message::user("hi")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Error);
    assert_eq!(out.text, "Let me");
    assert!(
        out.chunks
            .iter()
            .any(|c| matches!(c, AgentChunk::Error { message } if message == "connection reset")),
        "{:?}",
        out.chunks
    );
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_the_script_is_recorded_and_fails_naming_the_step() {
    let runs = Runs::default();
    // One step: a call, and no step to read its result.
    let model = ScriptedModel::new([calls(&[("c1", "lookup", json!({}))])]);
    let runtime = Runtime::builder().tools(tools(&runs)).build().unwrap();
    let out = agent_on(model.clone(), runtime)
        .generate(Thread::new("t1"), vec![Message::user("go")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Error, "{:?}", out.chunks);
    assert!(
        out.chunks.iter().any(|c| matches!(
            c,
            AgentChunk::Error { message } if message == "scripted model has no step 2: its script has 1 step"
        )),
        "{:?}",
        out.chunks
    );
    // The request it could not answer is recorded, with the result it held.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(read(&requests[1]), r#"c1={"balance":100}"#);
    assert_eq!(model.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_that_suspends_waits_for_resume_data_and_resumes() {
    let book = Tool::builder("book")
        .description("Books a table, once approved, for the seats the user says")
        .require_approval(true)
        .resume_schema(json!({ "type": "object", "properties": { "seats": { "type": "integer" } }, "required": ["seats"] }))
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            let Some(data) = ctx.resume_data() else {
                return ctx.suspend(json!({ "question": "how many seats?" }));
            };
            Ok::<_, ToolError>(json!({ "booked": data["seats"] }))
        })
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        calls(&[("c-book", "book", json!({}))]),
        ScriptedStep::answer("booked"),
    ]);
    let runtime = Runtime::builder().tool(book).build().unwrap();
    let agent = Agent::builder("host", model.clone(), runtime)
        .build()
        .unwrap();
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("book")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    let approved = agent
        .approve_tool_call(&paused.run_id, "c-book")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(
        approved.finish_reason,
        FinishReason::Suspended,
        "{:?}",
        approved.chunks
    );
    assert!(
        approved.chunks.iter().any(|c| matches!(c,
            AgentChunk::ToolCallSuspended { call_id, payload, .. }
                if call_id == "c-book" && payload == &json!({ "question": "how many seats?" }))),
        "{:?}",
        approved.chunks
    );
    let done = agent
        .resume(&paused.run_id, "c-book", json!({ "seats": 4 }))
        .await
        .expect("the call now waits for resume data")
        .output()
        .await;
    assert_eq!(done.finish_reason, FinishReason::Stop, "{:?}", done.chunks);
    assert_eq!(done.text, "booked");
    assert_eq!(
        tool_results(&model.requests()[1]),
        [("c-book".to_owned(), json!({ "booked": 4 }), false)]
    );
}
