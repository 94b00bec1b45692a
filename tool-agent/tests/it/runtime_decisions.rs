//! A runtime decision on an agent's call (`runtime.approve("{run_id}/{call_id}")`,
//! as an approval inbox makes it through the runtime's public API alone,
//! from another runtime on the same store) runs the call with the agent's
//! `AgentContext`, stored with the call; `Agent::continue_run` then takes
//! the recorded outcome into the run and the model reads it. Racing the
//! agent's own `approve_tool_call`, the call runs once and its result
//! enters the run once.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_agent::{
    Agent, AgentChunk, AgentError, FinishReason, Message, ModelFinish, ScriptedModel, ScriptedStep,
    Thread,
};
use tool_core::{AgentContext, Tool, ToolContext, ToolError};
use tool_runtime::{Runtime, RuntimeBuilder};

/// The agent context of each execution of the tool.
type Seen = Arc<Mutex<Vec<Option<AgentContext>>>>;

/// A tool that needs approval and records the agent it ran for.
fn pay(seen: &Seen) -> Tool {
    let seen = Arc::clone(seen);
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
            seen.lock().unwrap().push(ctx.agent().cloned());
            async move { Ok::<_, ToolError>(json!({ "paid": input["to"] })) }
        })
        .build()
        .unwrap()
}

/// A new directory and the path of the store file `store.sqlite` in it: the
/// directory is removed with what it holds when its guard drops, also when
/// the test fails, so keep the guard until the test's end.
fn store_file(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("tool-agent-runtime-decisions-{name}-"))
        .tempdir()
        .unwrap();
    let path = dir.path().join("store.sqlite");
    (dir, path)
}

/// An agent whose model asks to pay and then answers "paid", on a runtime
/// over the file `path`; and an inbox, a runtime of its own on the file.
fn agent_and_inbox(path: &PathBuf, seen: &Seen) -> (Agent, ScriptedModel, Runtime) {
    agent_answering(path, seen, Runtime::builder(), "paid")
}

/// [`agent_and_inbox`], the agent's runtime from `builder` and its model's
/// last answer `answer`.
fn agent_answering(
    path: &PathBuf,
    seen: &Seen,
    builder: RuntimeBuilder,
    answer: &str,
) -> (Agent, ScriptedModel, Runtime) {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "pay", json!({ "to": "ada" }))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer(answer),
    ]);
    let runtime = builder.tool(pay(seen)).sqlite_store(path).build().unwrap();
    let agent = Agent::builder("payer", model.clone(), runtime)
        .build()
        .unwrap();
    let inbox = Runtime::builder()
        .tool(pay(seen))
        .sqlite_store(path)
        .build()
        .unwrap();
    (agent, model, inbox)
}

/// A run of a fresh agent (on a store file of its own, `name`) paused for
/// the approval of its call `c1`: the guard of the file's directory, the
/// agent, its model, the inbox, what the tool saw, and the run's id.
async fn paused_run(
    name: &str,
) -> (
    tempfile::TempDir,
    Agent,
    ScriptedModel,
    Runtime,
    Seen,
    String,
) {
    let (tmp, path) = store_file(name);
    let seen = Seen::default();
    let (agent, model, inbox) = agent_and_inbox(&path, &seen);
    let paused = agent
        .generate(Thread::new("thread-1"), vec![Message::user("pay ada")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    (tmp, agent, model, inbox, seen, paused.run_id)
}

/// The results the run's conversation holds, by call id.
async fn results_in_run(agent: &Agent, run_id: &str) -> Vec<(String, Value)> {
    agent
        .transcript(run_id)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|message| match message {
            Message::ToolResult {
                call_id, result, ..
            } => Some((call_id, result)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_approval_of_an_agents_call_runs_as_the_agent_and_continue_run_lets_the_model_read_it()
 {
    let (_tmp, path) = store_file("approve-then-continue");
    let seen = Seen::default();
    let (agent, model, inbox) = agent_and_inbox(&path, &seen);
    let paused = agent
        .generate(
            Thread::new("thread-1").with_resource("user-1"),
            vec![Message::user("pay ada")],
        )
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    let run_id = paused.run_id.clone();
    let stored_id = format!("{run_id}/c1");

    // The inbox sees the call with the agent it was made by, and approves it.
    let expected = AgentContext::new("payer", run_id.as_str())
        .with_thread("thread-1")
        .with_resource("user-1");
    let pending = inbox.inbox().waiting().await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.head.call_id, stored_id);
    assert_eq!(pending[0].call.head.agent.as_ref(), Some(&expected));
    let outcome = inbox.approve(&stored_id).await.unwrap();
    assert_eq!(outcome.output(), Some(&json!({ "paid": "ada" })));
    assert_eq!(
        *seen.lock().unwrap(),
        [Some(expected)],
        "it ran once, as the agent's call"
    );
    assert_eq!(model.requests().len(), 1, "the run has not gone on yet");

    // The agent learns of it: the model reads the result and answers.
    let done = agent.continue_run(&run_id).await.unwrap().output().await;
    assert_eq!(
        (done.text.as_str(), done.finish_reason),
        ("paid", FinishReason::Stop),
        "{:?}",
        done.chunks
    );
    assert!(
        done.chunks.iter().any(
            |chunk| matches!(chunk, AgentChunk::ToolResult { call_id, .. } if call_id == "c1")
        )
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].messages.iter().any(|message| matches!(
            message,
            Message::ToolResult { call_id, result, is_error: false, .. }
                if call_id == "c1" && *result == json!({ "paid": "ada" })
        )),
        "the model read the result: {:?}",
        requests[1].messages
    );
    assert_eq!(
        results_in_run(&agent, &run_id).await,
        [("c1".to_owned(), json!({ "paid": "ada" }))]
    );
    // Nothing is left to continue.
    assert!(matches!(
        agent.continue_run(&run_id).await,
        Err(AgentError::NoBackgroundTasks { .. })
    ));
    assert_eq!(seen.lock().unwrap().len(), 1, "never ran again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_approval_racing_a_runtime_approval_runs_the_call_once_and_records_it_once() {
    for round in 0..6 {
        let (_tmp, agent, model, inbox, seen, run_id) = paused_run(&format!("race-{round}")).await;
        let stored_id = format!("{run_id}/c1");
        let (by_agent, by_inbox) = tokio::join!(
            async {
                agent
                    .approve_tool_call(&run_id, "c1")
                    .await
                    .unwrap()
                    .output()
                    .await
            },
            inbox.approve(&stored_id),
        );
        // Whoever won the store's decision, the other got its outcome.
        assert_eq!(
            by_inbox.unwrap().output(),
            Some(&json!({ "paid": "ada" })),
            "round {round}"
        );
        assert_eq!(seen.lock().unwrap().len(), 1, "round {round}: ran once");
        if by_agent.finish_reason == FinishReason::Stop {
            assert_eq!(by_agent.text, "paid", "round {round}");
            // A continuation after both finds nothing more to take.
            assert!(agent.continue_run(&run_id).await.is_err(), "round {round}");
        } else {
            // The inbox's approval was running when the agent's came: the
            // agent's stream says so and names the way on.
            assert_eq!(by_agent.finish_reason, FinishReason::Error, "round {round}");
            let said = by_agent.chunks.iter().any(|chunk| {
                matches!(chunk, AgentChunk::Error { message }
                    if message.contains("is running") && message.contains("Agent::continue_run"))
            });
            assert!(said, "round {round}: {:?}", by_agent.chunks);
            let done = agent.continue_run(&run_id).await.unwrap().output().await;
            assert_eq!(
                (done.text.as_str(), done.finish_reason),
                ("paid", FinishReason::Stop),
                "round {round}"
            );
        }
        assert_eq!(seen.lock().unwrap().len(), 1, "round {round}: ran once");
        assert_eq!(
            results_in_run(&agent, &run_id).await,
            [("c1".to_owned(), json!({ "paid": "ada" }))],
            "round {round}: the result entered the run once"
        );
        assert_eq!(model.requests().len(), 2, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_racing_the_agents_own_approval_records_the_result_once() {
    for round in 0..6 {
        let (_tmp, agent, model, inbox, seen, run_id) =
            paused_run(&format!("continue-race-{round}")).await;
        inbox.approve(&format!("{run_id}/c1")).await.unwrap();
        // Both take the recorded outcome into the run: the run's save lets one.
        let (approved, continued) = tokio::join!(
            agent.approve_tool_call(&run_id, "c1"),
            agent.continue_run(&run_id),
        );
        // One may be refused at once (the other recorded the result first).
        let mut finished = Vec::new();
        for started in [approved, continued].into_iter().flatten() {
            finished.push(started.output().await);
        }
        let stopped = finished
            .iter()
            .filter(|output| output.finish_reason == FinishReason::Stop)
            .count();
        assert_eq!(stopped, 1, "round {round}: one goes on");
        assert_eq!(seen.lock().unwrap().len(), 1, "round {round}: ran once");
        assert_eq!(model.requests().len(), 2, "round {round}");
        assert_eq!(
            results_in_run(&agent, &run_id).await,
            [("c1".to_owned(), json!({ "paid": "ada" }))],
            "round {round}: the result entered the run once"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_that_expires_releases_the_agents_run_with_the_model_reading_why() {
    let (_tmp, path) = store_file("expired");
    let seen = Seen::default();
    // Approvals of the agent's runtime expire at once: the call is stored
    // already overdue.
    let expiring = Runtime::builder().approval_ttl(std::time::Duration::ZERO);
    let (agent, _model, inbox) = agent_answering(&path, &seen, expiring, "nobody approved in time");
    let paused = agent
        .generate(Thread::new("thread-1"), vec![Message::user("pay ada")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    let run_id = paused.run_id;

    // Another instance notices first (its listing declines what is overdue).
    assert!(inbox.inbox().waiting().await.unwrap().is_empty());
    let done = agent.continue_run(&run_id).await.unwrap().output().await;
    assert_eq!(
        (done.text.as_str(), done.finish_reason),
        ("nobody approved in time", FinishReason::Stop),
        "{:?}",
        done.chunks
    );
    let results = results_in_run(&agent, &run_id).await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].0 == "c1" && results[0].1.to_string().contains("expired"),
        "the model reads that the approval expired: {results:?}"
    );
    assert!(seen.lock().unwrap().is_empty(), "the call never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_carries_the_conversation_and_what_the_model_said_before_it() {
    let (_tmp, path) = store_file("context");
    let seen = Seen::default();
    let model = ScriptedModel::new([ScriptedStep::new()
        .text("Ada's invoice is due; ")
        .text("I'll pay her.")
        .tool_call("c1", "pay", json!({ "to": "ada" }))
        .tool_call("c2", "pay", json!({ "to": "bo" }))
        .finish(ModelFinish::ToolCalls)]);
    let runtime = Runtime::builder()
        .tool(pay(&seen))
        .sqlite_store(&path)
        .build()
        .unwrap();
    let agent = Agent::builder("payer", model, runtime.clone())
        .build()
        .unwrap();
    let paused = agent
        .generate(Thread::new("thread-1"), vec![Message::user("pay ada")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    // Each call waiting for a person holds the conversation before it and
    // the model's words beside it, as the inbox shows them.
    let waiting = runtime.inbox().waiting().await.unwrap();
    assert_eq!(waiting.len(), 2);
    for stored in waiting {
        let messages: Vec<Message> = stored
            .call
            .head
            .messages
            .iter()
            .map(|m| serde_json::from_value(m.clone()).unwrap())
            .collect();
        assert_eq!(
            messages,
            [
                Message::user("pay ada"),
                Message::Assistant {
                    text: "Ada's invoice is due; I'll pay her.".into(),
                    tool_calls: vec![],
                },
            ],
            "{}",
            stored.call.head.call_id
        );
    }
}
