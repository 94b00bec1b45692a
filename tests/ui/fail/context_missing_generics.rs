// `resume = Type` in the attribute, but the ToolContext does not carry it.
use tool_core::{tool, ToolContext};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Answer {
    approved: bool,
}

/// Delete a file after confirmation
#[tool(resume = Answer)]
async fn delete_file(path: String, ctx: ToolContext) -> String {
    let _ = ctx;
    path
}

fn main() {}
