// `ToolContext<S, R>` gives the suspend and resume types; the attribute may
// repeat them, and the context may come before the input.
use tool_core::{tool, Tool, ToolContext, ToolError};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Answer {
    approved: bool,
}

/// Deletes a file after a human confirms.
#[tool]
async fn delete_file(path: String, ctx: ToolContext<Question, Answer>) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Question { text: format!("Delete {path}?") }),
        Some(Answer { approved: true }) => Ok(format!("deleted {path}")),
        Some(Answer { approved: false }) => Ok("kept".into()),
    }
}

/// Moves a file after a human confirms.
#[tool(suspend = Question, resume = Answer)]
async fn move_file(ctx: ToolContext<Question, Answer>, from: String, to: String) -> Result<String, ToolError> {
    if ctx.resume_data().is_none() {
        return ctx.suspend(Question { text: format!("Move {from} to {to}?") });
    }
    Ok(format!("moved {from} to {to}"))
}

/// Reports who is calling; a context without suspension.
#[tool]
async fn whoami(ctx: ToolContext) -> String {
    ctx.call_id().to_owned()
}

fn main() {
    for tool in [Tool::from(DeleteFileTool), Tool::from(MoveFileTool)] {
        let definition = tool.definition();
        assert!(definition.suspend_schema.as_ref().unwrap()["properties"]["text"].is_object());
        assert!(definition.resume_schema.as_ref().unwrap()["properties"]["approved"].is_object());
        assert!(!definition.input_schema["properties"].as_object().unwrap().contains_key("ctx"));
    }
    let tool = Tool::from(WhoamiTool);
    assert!(tool.definition().suspend_schema.is_none());
    assert!(tool.definition().resume_schema.is_none());
}
