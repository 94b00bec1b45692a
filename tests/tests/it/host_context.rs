//! What the host running a tool tells it, through the public API: the agent
//! (`ctx.agent()`) and the workflow step with its typed state
//! (`ctx.workflow::<State>()`, `set_state`), directly and through the
//! runtime.

use integration_tests::block_on;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{
    AgentContext, CallContext, ErrorKind, Outcome, Tool, ToolContext, ToolError, WorkflowContext,
    tool,
};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Counter {
    /// At most 10.
    #[schemars(range(max = 10))]
    count: u32,
}

/// Counts a workflow's visits
#[tool(workflow_state = Counter)]
async fn visit(by: u32, ctx: ToolContext) -> Result<Value, ToolError> {
    let Some(workflow) = ctx.workflow::<Counter>() else {
        return Ok(json!("not in a workflow"));
    };
    let count = workflow.state().count + by;
    workflow.set_state(Counter { count });
    Ok(json!({
        "workflow": workflow.workflow_id(),
        "run": workflow.run_id(),
        "was": workflow.state().count,
        "raw": workflow.state_value(),
    }))
}

fn in_workflow(state: Value) -> CallContext {
    CallContext::new("c1").with_workflow(WorkflowContext::new("visits", "run-1", state))
}

fn failure(outcome: &Outcome) -> (ErrorKind, String) {
    let error = outcome
        .error()
        .unwrap_or_else(|| panic!("expected a failure, got {outcome:?}"));
    (error.kind(), error.message().to_owned())
}

#[test]
fn a_stateful_tool_reads_its_state_and_the_outcome_carries_the_new_one() {
    let tool = Tool::from(VisitTool);
    let schema = tool.definition().workflow_state_schema.clone().unwrap();
    assert_eq!(schema["properties"]["count"]["maximum"], 10);
    let outcome = block_on(tool.execute(json!({ "by": 2 }), in_workflow(json!({ "count": 3 }))));
    assert_eq!(
        outcome.output(),
        Some(&json!({ "workflow": "visits", "run": "run-1", "was": 3, "raw": { "count": 3 } }))
    );
    assert_eq!(outcome.state(), Some(&json!({ "count": 5 })));
    let Outcome::Completed { state, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(state, &Some(json!({ "count": 5 })));
}

#[test]
fn outside_a_workflow_there_is_no_workflow_and_no_state() {
    let outcome =
        block_on(Tool::from(VisitTool).execute(json!({ "by": 1 }), CallContext::new("c")));
    assert_eq!(outcome.output(), Some(&json!("not in a workflow")));
    assert_eq!(outcome.state(), None);
}

#[test]
fn an_invalid_host_state_fails_the_call_naming_the_workflow_state() {
    let tool = Tool::from(VisitTool);
    let outcome =
        block_on(tool.execute(json!({ "by": 1 }), in_workflow(json!({ "count": "three" }))));
    let (kind, message) = failure(&outcome);
    assert_eq!(kind, ErrorKind::WorkflowStateValidation);
    assert!(
        message.starts_with("Workflow state validation failed for visit."),
        "{message}"
    );
    assert!(
        message.contains("workflow state given to the tool"),
        "{message}"
    );
    assert!(message.contains("- count:"), "{message}");
    assert!(
        message.contains("- count: Expected integer, received string"),
        "{message}"
    );
    assert!(
        message.contains("Provided workflow state: {\n  \"count\": \"three\"\n}"),
        "{message}"
    );
    let json = outcome.to_model_value();
    assert_eq!(json["error"], true);
    assert!(
        json["validationErrors"]["fields"]["count"].is_object(),
        "{json}"
    );
    // Refused at admission: the tool never ran.
    assert!(
        tool.admit(json!({ "by": 1 }), in_workflow(json!({})))
            .is_err()
    );
}

#[test]
fn an_invalid_new_state_fails_the_call() {
    let outcome = block_on(
        Tool::from(VisitTool).execute(json!({ "by": 9 }), in_workflow(json!({ "count": 3 }))),
    );
    let (kind, message) = failure(&outcome);
    assert_eq!(kind, ErrorKind::WorkflowStateValidation);
    assert!(
        message.contains("The tool set an invalid workflow state"),
        "{message}"
    );
    assert!(message.contains("- count:"), "{message}");
    assert!(
        message.contains("New workflow state: {\n  \"count\": 12\n}"),
        "{message}"
    );
    assert_eq!(outcome.state(), None);
}

/// Sets a state, then fails
#[tool(workflow_state = Counter)]
async fn set_then_fail(ctx: ToolContext) -> Result<(), ToolError> {
    if let Some(workflow) = ctx.workflow::<Counter>() {
        workflow.set_state(Counter { count: 1 });
    }
    Err(ToolError::new("no"))
}

#[test]
fn a_failed_call_returns_no_state() {
    let outcome =
        block_on(Tool::from(SetThenFailTool).execute("{}", in_workflow(json!({ "count": 0 }))));
    assert_eq!(failure(&outcome).0, ErrorKind::Execution);
    assert_eq!(outcome.state(), None);
}

fn builder_step() -> Tool {
    Tool::builder("step")
        .description("Advance the step")
        .workflow_state_schema(json!({
            "type": "object",
            "properties": { "step": { "type": "integer", "minimum": 0 } },
            "required": ["step"]
        }))
        .execute(|input, ctx: ToolContext<Value, Value>| async move {
            let workflow = ctx
                .workflow::<Value>()
                .ok_or_else(|| ToolError::new("not in a workflow"))?;
            let by = input["by"].as_i64().unwrap_or(1);
            let step = workflow.state()["step"].as_i64().unwrap_or(0) + by;
            workflow.set_state(json!({ "step": step }));
            Ok::<_, ToolError>(json!(step))
        })
        .build()
        .unwrap()
}

#[test]
fn a_builder_tool_declares_its_state_schema() {
    let tool = builder_step();
    assert_eq!(
        tool.definition().workflow_state_schema.as_ref().unwrap()["required"],
        json!(["step"])
    );
    let outcome = block_on(tool.execute(json!({ "by": 2 }), in_workflow(json!({ "step": 1 }))));
    assert_eq!(outcome.state(), Some(&json!({ "step": 3 })));

    let refused = block_on(tool.execute(json!({}), in_workflow(json!({ "step": -1 }))));
    assert_eq!(failure(&refused).0, ErrorKind::WorkflowStateValidation);
    let invalid_new =
        block_on(tool.execute(json!({ "by": -5 }), in_workflow(json!({ "step": 1 }))));
    let (kind, message) = failure(&invalid_new);
    assert_eq!(kind, ErrorKind::WorkflowStateValidation);
    assert!(message.contains("New workflow state"), "{message}");
}

#[test]
fn a_builder_tool_declares_its_state_type() {
    let tool = Tool::builder("count")
        .description("Count")
        .workflow_state_type::<Counter>()
        .execute(|_input, ctx| async move {
            let workflow = ctx.workflow::<Counter>().unwrap();
            workflow.set_state(Counter {
                count: workflow.state().count * 2,
            });
            Ok::<_, ToolError>(json!(null))
        })
        .build()
        .unwrap();
    assert!(tool.definition().workflow_state_schema.is_some());
    let outcome = block_on(tool.execute("{}", in_workflow(json!({ "count": 4 }))));
    assert_eq!(outcome.state(), Some(&json!({ "count": 8 })));
}

#[test]
fn reading_the_state_as_an_undeclared_type_fails_as_a_panic_naming_both_types() {
    let tool = Tool::builder("confused")
        .description("Reads a state it did not declare")
        .execute(|_input, ctx| async move {
            let count = ctx.workflow::<Counter>().map_or(0, |w| w.state().count);
            Ok::<_, ToolError>(json!(count))
        })
        .build()
        .unwrap();
    let outcome = block_on(tool.execute("{}", in_workflow(json!({ "count": 1 }))));
    let (kind, message) = failure(&outcome);
    assert_eq!(kind, ErrorKind::Panic);
    assert!(
        message.contains("declares no workflow state type"),
        "{message}"
    );
    assert!(message.contains("Counter"), "{message}");
    // Outside a workflow it is just absent.
    let outcome = block_on(tool.execute("{}", CallContext::new("c")));
    assert_eq!(outcome.output(), Some(&json!(0)));
}

/// Describes the agent running it
#[tool]
async fn whoami(ctx: ToolContext) -> Value {
    match ctx.agent() {
        None => json!(null),
        Some(agent) => json!({
            "agent": agent.agent_id,
            "run": agent.run_id,
            "thread": agent.thread_id,
            "resource": agent.resource_id,
            "background": agent.background,
        }),
    }
}

fn support_agent() -> AgentContext {
    AgentContext::new("support", "run-7")
        .with_thread("thread-1")
        .with_resource("user-42")
        .with_background(true)
}

const SUPPORT: &str = r#"{"agent":"support","run":"run-7","thread":"thread-1","resource":"user-42","background":true}"#;

#[test]
fn the_agent_is_none_unless_the_host_sets_it() {
    let tool = Tool::from(WhoamiTool);
    let outcome = block_on(tool.execute("{}", CallContext::new("c1")));
    assert_eq!(outcome.output(), Some(&json!(null)));
    let ctx = CallContext::new("c2").with_agent(support_agent());
    assert_eq!(ctx.agent(), Some(&support_agent()));
    let outcome = block_on(tool.execute("{}", ctx));
    assert_eq!(outcome.output().unwrap().to_string(), SUPPORT);
    let plain = block_on(tool.execute(
        "{}",
        CallContext::new("c3").with_agent(AgentContext::new("a", "r")),
    ));
    assert_eq!(
        plain.output(),
        Some(
            &json!({ "agent": "a", "run": "r", "thread": null, "resource": null, "background": false })
        )
    );
}

#[tokio::test]
async fn the_runtime_passes_the_agent_and_the_workflow_to_the_tool() {
    let runtime = Runtime::builder()
        .tool(WhoamiTool)
        .tool(VisitTool)
        .build()
        .unwrap();
    let outcome = runtime
        .call(ToolCall::new("c1", "whoami", json!({})).with_agent(support_agent()))
        .await;
    assert_eq!(outcome.output().unwrap().to_string(), SUPPORT);
    let outcome = runtime.call(ToolCall::new("c2", "whoami", json!({}))).await;
    assert_eq!(outcome.output(), Some(&json!(null)));

    let outcome =
        runtime
            .call(
                ToolCall::new("c3", "visit", json!({ "by": 1 })).with_workflow(
                    WorkflowContext::new("visits", "run-2", json!({ "count": 1 })),
                ),
            )
            .await;
    assert_eq!(outcome.state(), Some(&json!({ "count": 2 })));
    assert!(matches!(
        outcome,
        CallOutcome::Completed { state: Some(_), .. }
    ));
    let refused =
        runtime
            .call(
                ToolCall::new("c4", "visit", json!({ "by": 1 }))
                    .with_workflow(WorkflowContext::new("visits", "run-2", json!([]))),
            )
            .await;
    assert_eq!(
        refused.error().unwrap().kind(),
        ErrorKind::WorkflowStateValidation
    );
}
