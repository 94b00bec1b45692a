// `impl Trait` inside Result: the output schema needs a concrete type.
use tool_core::{tool, ToolError};

/// Get the weather
#[tool]
async fn weather(city: String) -> Result<impl serde::Serialize, ToolError> {
    Ok(city)
}

fn main() {}
