// `crate = path` with tool-core reached through a facade module (as a crate
// re-exporting tool-core would): generated code goes through that path only.
mod facade {
    pub use tool_core::*;
}

use facade::{Tool, ToolContext, ToolError};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Confirm {
    text: String,
}

/// Book a table
#[facade::tool(
    crate = crate::facade,
    input_examples = examples,
    require_approval = needs_approval,
    request_context = Confirm,
    to_model_output = as_text,
    background,
    mcp(read_only, meta = meta),
    output_validation = "warn",
)]
pub async fn book(
    /// Restaurant
    place: String,
    /// Party size
    people: Option<u8>,
    ctx: ToolContext<Confirm, Confirm>,
) -> Result<String, ToolError> {
    if ctx.resume_data().is_none() {
        return ctx.suspend(Confirm { text: format!("Book {place} for {people:?}?") });
    }
    Ok(place)
}

fn examples() -> [BookToolInput; 1] {
    [BookToolInput { place: "Chez Nous".into(), people: Some(2) }]
}

fn needs_approval(input: &BookToolInput, _: &facade::RequestContext) -> bool {
    input.people.unwrap_or(1) > 8
}

// `&str` for a `String` output: the call goes through deref coercion.
fn as_text(output: &str) -> facade::ModelOutput {
    facade::ModelOutput::text(output)
}

fn meta() -> serde_json::Value {
    serde_json::json!({ "source": "facade" })
}

fn main() {
    let tool = Tool::from(BookTool);
    let definition = tool.definition();
    assert_eq!(definition.input_schema["properties"]["place"]["description"], "Restaurant");
    assert_eq!(definition.input_examples.len(), 1);
    assert!(tool.has_approval_policy());
}
