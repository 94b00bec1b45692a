// A plain (non-async) function is a tool too.
use tool_core::{tool, Tool, ToolError};

/// Add two integers
#[tool]
fn add(a: i64, b: i64) -> Result<i64, ToolError> {
    Ok(a + b)
}

/// Upper-cases a text; a lone scalar parameter is a property, not the input.
#[tool(id = "shout")]
pub(crate) fn upper(text: String) -> String {
    text.to_uppercase()
}

fn main() {
    assert_eq!(add(2, 3).unwrap(), 5);
    assert_eq!(upper("a".into()), "A");
    let tool = Tool::from(AddTool);
    assert_eq!(tool.definition().input_schema["required"], serde_json::json!(["a", "b"]));
    let tool = Tool::from(UpperTool);
    assert_eq!(tool.definition().id, "shout");
    assert_eq!(tool.definition().input_schema["properties"]["text"]["type"], "string");
}
