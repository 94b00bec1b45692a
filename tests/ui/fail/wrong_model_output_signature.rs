// A to_model_output function that takes the wrong type.
use tool_core::{tool, ModelOutput};

fn as_text(output: &u32) -> ModelOutput {
    ModelOutput::text(output.to_string())
}

/// Get the weather
#[tool(to_model_output = as_text)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
