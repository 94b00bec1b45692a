// `set_state` in a tool that declares no workflow state.
use tool_core::{ToolContext, tool};

/// Resets the workflow
#[tool]
async fn reset(ctx: ToolContext) {
    if let Some(workflow) = ctx.workflow::<serde_json::Value>() {
        workflow.set_state(serde_json::json!({}));
    }
}

fn main() {}
