// A tool without parameters takes an empty object.
use tool_core::{tool, Tool};

/// The current time
#[tool]
async fn now() -> String {
    "12:00".to_owned()
}

fn main() {
    let tool = Tool::from(NowTool);
    let definition = tool.definition();
    assert_eq!(definition.input_schema["type"], "object");
    assert_eq!(definition.output_schema.as_ref().unwrap()["type"], "string");
}
