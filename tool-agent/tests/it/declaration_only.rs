//! A declaration-only tool (no execute function: it runs in the
//! application's UI) in an agent run: the run pauses on its call like an
//! approval, and the application's response, validated against the output
//! schema, is the result the model reads. On the memory and SQLite stores.
//! And typed decisions: a suspended call resumed with the tool's resume type.

use serde_json::json;
use tool_agent::{
    Agent, AgentChunk, AgentError, FinishReason, Message, ModelFinish, ScriptedModel, ScriptedStep,
    Thread,
};
use tool_core::{ModelOutput, Tool, ToolContext, ToolError, tool};
use tool_runtime::store::{IntoStore, MemoryStore, SqliteStore};
use tool_runtime::{PendingKind, Runtime, RuntimeError};

fn pick_color() -> Tool {
    Tool::builder("pick-color")
        .description("Ask the user to pick a color")
        .output_schema(json!({
            "type": "object",
            "properties": { "color": { "type": "string" } },
            "required": ["color"]
        }))
        .to_model_output(|output| {
            ModelOutput::text(format!(
                "The user picked {}",
                output["color"].as_str().unwrap_or("?")
            ))
        })
        .build()
        .unwrap()
}

async fn the_run_waits_for_the_applications_response(store: impl IntoStore, label: &str) {
    let runtime = Runtime::builder()
        .tool(pick_color())
        .store(store)
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c-pick", "pick-color", json!({ "prompt": "Favorite?" }))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("Teal it is"),
    ]);
    let agent = Agent::builder("painter", model.clone(), runtime.clone())
        .build()
        .unwrap();

    let paused = agent
        .generate(Thread::new(label), vec![Message::user("pick a color")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended, "{label}");
    let awaiting: Vec<_> = paused
        .chunks
        .iter()
        .filter(|chunk| matches!(chunk, AgentChunk::ToolCallAwaitingOutput { .. }))
        .collect();
    let [
        AgentChunk::ToolCallAwaitingOutput {
            call_id,
            tool_name,
            args,
            output_schema,
        },
    ] = awaiting.as_slice()
    else {
        panic!("{label}: one call awaits its output: {:?}", paused.chunks)
    };
    assert_eq!(
        (call_id.as_str(), tool_name.as_str()),
        ("c-pick", "pick-color")
    );
    assert_eq!(args, &json!({ "prompt": "Favorite?" }));
    assert_eq!(
        output_schema.as_ref().unwrap()["required"],
        json!(["color"])
    );
    assert!(
        !paused.chunks.iter().any(|chunk| matches!(
            chunk,
            AgentChunk::ToolResult { .. } | AgentChunk::ToolError { .. }
        )),
        "{label}: no result yet"
    );
    let pending = runtime.inbox().waiting().await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.kind, PendingKind::Output);
    // The model was offered the tool, and was asked once.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .tools
            .iter()
            .any(|tool| tool.to_string().contains("pick-color"))
    );

    let run_id = paused.run_id.as_str();
    // Only a response (or a decline) takes it.
    assert!(matches!(
        agent.approve_tool_call(run_id, "c-pick").await,
        Err(AgentError::NotWaiting {
            expected: "approval",
            ..
        })
    ));
    assert!(matches!(
        agent.reply(run_id, "teal!").await,
        Err(AgentError::OutputPending { .. })
    ));

    // An output that does not fit: the stream says why, the run still waits.
    let refused = agent
        .respond_tool_call(run_id, "c-pick", json!({ "colour": "teal" }))
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(refused.finish_reason, FinishReason::Suspended, "{label}");
    assert!(
        refused.chunks.iter().any(|chunk| matches!(
            chunk,
            AgentChunk::ToolError { call_id, error, .. }
                if call_id == "c-pick" && error.to_string().contains("color")
        )),
        "{label}: {:?}",
        refused.chunks
    );
    assert_eq!(
        model.requests().len(),
        1,
        "{label}: the model is not asked yet"
    );

    let answered = agent
        .respond_tool_call(run_id, "c-pick", json!({ "color": "teal" }))
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(answered.finish_reason, FinishReason::Stop, "{label}");
    assert_eq!(answered.text, "Teal it is");
    let results: Vec<_> = answered
        .chunks
        .iter()
        .filter_map(|chunk| match chunk {
            AgentChunk::ToolResult {
                call_id, result, ..
            } => Some((call_id.as_str(), result)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [("c-pick", &json!({ "color": "teal" }))],
        "{label}"
    );
    // The model read the response as the tool's result, through to_model_output.
    let second = &model.requests()[1];
    let Some(Message::ToolResult {
        call_id,
        result,
        model_output,
        is_error,
        ..
    }) = second.messages.last()
    else {
        panic!("{label}: {:?}", second.messages)
    };
    assert_eq!(call_id, "c-pick");
    assert_eq!(result, &json!({ "color": "teal" }));
    assert_eq!(
        model_output,
        &Some(ModelOutput::text("The user picked teal"))
    );
    assert!(!is_error);
    assert!(matches!(
        agent
            .respond_tool_call(run_id, "c-pick", json!({ "color": "red" }))
            .await,
        Err(AgentError::NotWaiting { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declaration_only_tools_call_waits_for_the_applications_response() {
    the_run_waits_for_the_applications_response(MemoryStore::new(), "memory").await;
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("tool-agent-declaration-only-")
        .tempdir()
        .unwrap();
    let sqlite = SqliteStore::open(tmp.path().join("store.sqlite")).unwrap();
    the_run_waits_for_the_applications_response(sqlite, "sqlite").await;
}

/// What to ask.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Question {
    text: String,
}

/// The answer.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Answer {
    seats: u32,
}

/// Book a table, asking how many seats
#[tool]
async fn book(ctx: ToolContext<Question, Answer>) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Question {
            text: "How many seats?".into(),
        }),
        Some(answer) => Ok(format!("booked {}", answer.seats)),
    }
}

#[tokio::test]
async fn a_typed_resume_takes_the_tools_resume_type_and_names_its_tool() {
    let runtime = Runtime::builder()
        .tool(BookTool)
        .tool(pick_color())
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c-book", "book", json!({}))
            .tool_call("c-pick", "pick-color", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("Booked"),
    ]);
    let agent = Agent::builder("host", model, runtime).build().unwrap();
    let paused = agent
        .generate(Thread::new("typed"), vec![Message::user("a table")])
        .await
        .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::Suspended);
    let run_id = paused.run_id.as_str();
    // A call waiting for its output takes no resume data.
    let refused = agent
        .resume_as::<BookTool>(run_id, "c-pick", Answer { seats: 2 })
        .await;
    assert!(
        matches!(&refused, Err(AgentError::NotWaiting { .. })),
        "c-pick waits for its output, not resume data"
    );
    let booked = agent
        .resume_as::<BookTool>(run_id, "c-book", Answer { seats: 2 })
        .await
        .unwrap()
        .output()
        .await;
    assert!(booked.chunks.iter().any(|chunk| matches!(
        chunk,
        AgentChunk::ToolResult { call_id, result, .. } if call_id == "c-book" && result == &json!("booked 2")
    )));
    let done = agent
        .respond_tool_call(run_id, "c-pick", json!({ "color": "red" }))
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.text, "Booked");
}

/// Two suspended calls of two typed tools: a typed resume names its tool.
#[tokio::test]
async fn a_typed_resume_on_another_tools_suspended_call_is_refused() {
    /// Ask a question
    #[tool]
    async fn ask(ctx: ToolContext<Question, String>) -> Result<String, ToolError> {
        match ctx.resume_data() {
            None => ctx.suspend(Question {
                text: "Why?".into(),
            }),
            Some(why) => Ok(why.clone()),
        }
    }
    let runtime = Runtime::builder()
        .tool(BookTool)
        .tool(AskTool)
        .build()
        .unwrap();
    let model = ScriptedModel::new([ScriptedStep::new()
        .tool_call("c-ask", "ask", json!({}))
        .finish(ModelFinish::ToolCalls)]);
    let agent = Agent::builder("host", model, runtime).build().unwrap();
    let paused = agent
        .generate(Thread::new("typed-2"), vec![Message::user("ask")])
        .await
        .unwrap();
    let refused = agent
        .resume_as::<BookTool>(&paused.run_id, "c-ask", Answer { seats: 2 })
        .await;
    assert!(
        matches!(
            &refused,
            Err(AgentError::Runtime(RuntimeError::TypeMismatch { reason, .. })) if reason.contains("\"ask\"")
        ),
        "{refused:?}"
    );
}
