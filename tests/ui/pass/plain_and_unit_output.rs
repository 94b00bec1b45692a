// Return types: a plain `O`, `()`, no return type, `Result<(), E>` with a
// user error type, and a one-argument `Result` alias.
use tool_core::{tool, Tool, ToolError};

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Total {
    sum: i64,
}

/// Sums numbers
#[tool]
async fn sum(numbers: Vec<i64>) -> Total {
    Total { sum: numbers.iter().sum() }
}

/// Logs a line
#[tool]
async fn log_line(line: String) -> () {
    let _ = line;
}

/// Forgets everything
#[tool]
async fn forget() {}

#[derive(Debug)]
pub struct StoreError;

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("store unavailable")
    }
}

impl std::error::Error for StoreError {}

/// Saves a note
#[tool]
async fn save(note: String) -> Result<(), StoreError> {
    let _ = note;
    Err(StoreError)
}

/// Reads a file
#[tool]
fn read_file(path: String) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

fn main() {
    let tool = Tool::from(SumTool);
    assert_eq!(tool.definition().output_schema.as_ref().unwrap()["properties"]["sum"]["type"], "integer");
    for tool in [Tool::from(LogLineTool), Tool::from(ForgetTool), Tool::from(SaveTool)] {
        assert!(tool.definition().output_schema.is_none());
    }
    let tool = Tool::from(ReadFileTool);
    assert_eq!(tool.definition().output_schema.as_ref().unwrap()["type"], "string");
    let _: Result<(), ToolError> = Err(ToolError::new("unused"));
}
