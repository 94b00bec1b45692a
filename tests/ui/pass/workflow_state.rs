// `state = Type` declares the workflow state; the tool reads it typed, or as
// JSON, and sets a new one. A context without a declared state still reads
// the workflow's ids and its state as JSON.
use tool_core::{tool, Tool, ToolContext, ToolError};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Counter {
    count: u32,
}

/// Counts a workflow's visits
#[tool(state = Counter, request_context = Counter)]
async fn visit(ctx: ToolContext) -> Result<u32, ToolError> {
    let Some(workflow) = ctx.workflow::<Counter>() else {
        return Ok(0);
    };
    let raw = ctx.workflow::<serde_json::Value>().map(|w| w.state().clone());
    let count = workflow.state().count + 1;
    workflow.set_state(Counter { count });
    let _ = raw;
    Ok(count)
}

/// Names the workflow run
#[tool]
async fn run_name(ctx: ToolContext) -> String {
    ctx.workflow::<serde_json::Value>()
        .map(|w| format!("{}/{}", w.workflow_id(), w.run_id()))
        .unwrap_or_default()
}

fn main() {
    let tool = Tool::from(VisitTool);
    assert!(tool.definition().state_schema.as_ref().unwrap()["properties"]["count"].is_object());
    assert!(tool.definition().request_context_schema.is_some());
    assert!(Tool::from(RunNameTool).definition().state_schema.is_none());
}
