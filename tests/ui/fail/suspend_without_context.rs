// `suspend = Type` without a ToolContext parameter to suspend with.
use tool_core::tool;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    text: String,
}

/// Delete a file after confirmation
#[tool(suspend = Question)]
async fn delete_file(path: String) -> String {
    path
}

fn main() {}
