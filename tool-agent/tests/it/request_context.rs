//! What the calls an agent makes carry: the run's request context (kept by
//! the run, so an approval on another runtime sharing the store runs with
//! it too), validated against a tool's `request_context` schema like any
//! call's; the agent's extensions; and a per-call hook.

use serde_json::{Value, json};
use tool_agent::{
    Agent, FinishReason, Message, ModelFinish, ModelRequest, ScriptedModel, ScriptedStep, Thread,
};
use tool_core::{RequestContext, Tool, ToolContext, ToolError};
use tool_runtime::Runtime;

#[derive(Debug)]
struct Tenant(&'static str);

/// Names who asks (from the request context, which it requires) and for
/// which tenant (an extension), after approval.
fn whoami() -> Tool {
    Tool::builder("whoami")
        .description("Says who asks")
        .require_approval(true)
        .request_context_schema(json!({
            "type": "object",
            "properties": { "userId": { "type": "string" } },
            "required": ["userId"]
        }))
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(json!({
                "user": ctx.request_context().values()["userId"],
                "tenant": ctx.extension::<Tenant>().map(|t| t.0),
            }))
        })
        .build()
        .unwrap()
}

fn model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "whoami", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("done"),
    ])
}

fn agent(model: &ScriptedModel, runtime: Runtime) -> Agent {
    Agent::builder("helper", model.clone(), runtime)
        .extension(Tenant("acme"))
        .build()
        .unwrap()
}

/// The one tool result the model read in `request`.
fn tool_result(request: &ModelRequest) -> (Value, bool) {
    request
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResult {
                result, is_error, ..
            } => Some((result.clone(), *is_error)),
            _ => None,
        })
        .expect("a tool result")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_request_context_reaches_its_calls_after_an_approval_on_another_runtime() {
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("tool-agent-rc-")
        .tempdir()
        .unwrap();
    let path = tmp.path().join("store.sqlite");
    let on_store = || {
        Runtime::builder()
            .tool(whoami())
            .sqlite_store(&path)
            .build()
            .unwrap()
    };
    let model = model();
    let paused = agent(&model, on_store())
        .stream_with(
            Thread::new("t1"),
            vec![Message::user("who am I?")],
            RequestContext::new().with("userId", "u-7"),
        )
        .output()
        .await;
    assert_eq!(
        paused.finish_reason,
        FinishReason::Suspended,
        "{:?}",
        paused.chunks
    );
    // Approved through another runtime (a restart) on the same store.
    let done = agent(&model, on_store())
        .approve_tool_call(&paused.run_id, "c1")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(done.text, "done", "{:?}", done.chunks);
    assert_eq!(
        tool_result(&model.requests()[1]),
        (json!({ "user": "u-7", "tenant": "acme" }), false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_the_request_context_its_tool_declares_fails_for_the_model() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "lookup", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("sorry"),
    ]);
    let lookup = Tool::builder("lookup")
        .description("Looks the user up")
        .request_context_schema(json!({
            "type": "object",
            "properties": { "userId": { "type": "string" } },
            "required": ["userId"]
        }))
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                Ok::<_, ToolError>(json!("found"))
            },
        )
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(lookup).build().unwrap();
    let agent = Agent::builder("helper", model.clone(), runtime)
        // A per-call hook sets what the run did not: here, nothing for
        // `lookup`, so its call fails validation.
        .on_call(|head| {
            if head.tool_id == "lookup" {
                head
            } else {
                head.with_request_context(RequestContext::new().with("userId", "hook"))
            }
        })
        .build()
        .unwrap();
    let output = agent
        .generate(Thread::new("t1"), vec![Message::user("look me up")])
        .await
        .unwrap();
    assert_eq!(output.text, "sorry");
    let (content, is_error) = tool_result(&model.requests()[1]);
    assert!(is_error, "{content}");
    assert!(content.to_string().contains("userId"), "{content}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_call_hook_gives_a_call_its_request_context() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "whoami", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("done"),
    ]);
    let runtime = Runtime::builder().tool(whoami()).build().unwrap();
    let agent = Agent::builder("helper", model.clone(), runtime)
        .on_call(|head| head.with_request_context(RequestContext::new().with("userId", "hook")))
        .build()
        .unwrap();
    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("who?")])
        .await
        .unwrap();
    agent
        .approve_tool_call(&paused.run_id, "c1")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(
        tool_result(&model.requests()[1]),
        (json!({ "user": "hook", "tenant": null }), false)
    );
}
