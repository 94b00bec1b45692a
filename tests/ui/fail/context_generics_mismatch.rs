// The attribute's `suspend = Type` disagrees with the ToolContext's generics.
use tool_core::{tool, ToolContext};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    text: String,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Prompt {
    text: String,
}

/// Delete a file after confirmation
#[tool(suspend = Question)]
async fn delete_file(path: String, ctx: ToolContext<Prompt>) -> String {
    let _ = ctx;
    path
}

fn main() {}
