//! `#[tool]` in a crate whose only tool-core dependency is named
//! `renamed_tools`, with `#[tool(crate = ...)]` pointing at it, and with no
//! `serde_json` dependency: this crate compiling is the check; the tests
//! below make sure the tools it declares are the expected ones.

use renamed_tools as tools;
use tools::{Tool, ToolContext, ToolError};

/// The input of [`weather`].
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Location {
    /// City name
    pub city: String,
}

/// A question put to a human, and the answer.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Confirm {
    /// The question, or the answer's comment.
    pub text: String,
}

/// Get the weather
#[renamed_tools::tool(crate = renamed_tools)]
pub async fn weather(Location { city }: Location) -> Result<String, ToolError> {
    Ok(city)
}

/// Book a table
#[tools::tool(
    crate = tools,
    id = "book-table",
    strict,
    input_examples = examples,
    require_approval = needs_approval,
    request_context = Confirm,
    to_model_output = as_text,
    background(timeout_ms = 1000),
    mcp(title = "Book", read_only = false),
    on_output = on_output,
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
        return ctx.suspend(Confirm {
            text: format!("Book {place} for {people:?}?"),
        });
    }
    Ok(place)
}

/// Adds two numbers: plain parameters need no derive at all.
#[tools::tool(crate = crate::tools)]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn examples() -> Vec<BookToolInput> {
    vec![BookToolInput {
        place: "Chez Nous".into(),
        people: Some(2),
    }]
}

fn needs_approval(input: &BookToolInput, _: &tools::RequestContext) -> bool {
    input.people.unwrap_or(1) > 8
}

fn as_text(output: &str) -> tools::ModelOutput {
    tools::ModelOutput::text(output)
}

fn on_output(_: tools::hooks::OutputAvailable<String>) {}

/// The tools of this crate.
pub fn all() -> Vec<Tool> {
    vec![
        Tool::from(WeatherTool),
        Tool::from(BookTool),
        Tool::from(AddTool),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_declared_through_the_renamed_dependency() {
        let [weather, book, sum] = <[Tool; 3]>::try_from(all()).unwrap();
        assert_eq!(weather.id(), "weather");
        assert_eq!(
            weather.definition().input_schema["properties"]["city"]["description"],
            "City name"
        );
        let definition = book.definition();
        assert_eq!(definition.id, "book-table");
        assert!(definition.strict);
        assert_eq!(definition.input_examples.len(), 1);
        assert!(definition.request_context_schema.is_some());
        assert!(definition.suspend_schema.is_some());
        assert!(book.has_approval_policy());
        assert_eq!(sum.definition().input_schema["required"][1], "b");
        assert_eq!(add(2, 3), 5);
    }
}
