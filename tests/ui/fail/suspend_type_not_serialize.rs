// The suspend payload type (from the ToolContext generics) is not Serialize.
use tool_core::{tool, ToolContext};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    text: String,
}

/// Delete a file after confirmation
#[tool]
async fn delete_file(path: String, ctx: ToolContext<Question>) -> String {
    let _ = ctx;
    path
}

fn main() {}
