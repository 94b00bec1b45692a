// `#[tool]` recognizes the context by its name, `ToolContext`: under an alias
// it is taken as an input parameter. The error says so and what to write.
use tool_core::{ToolContext, tool};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Answer {
    approved: bool,
}

type Ctx = ToolContext<Question, Answer>;

/// Delete a file after a human confirms
#[tool]
async fn delete_file(path: String, ctx: Ctx) -> String {
    let _ = ctx;
    path
}

fn main() {}
