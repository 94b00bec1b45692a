// A `#[tool]`'s output hook gets the output as the function returns it:
// here a `u32`, and the async hook asks for a `String`.
use tool_core::hooks::OutputAvailable;
use tool_core::{tool, ToolError};

async fn on_output(args: OutputAvailable<String>) {
    let _ = args.output;
}

/// Count the words
#[tool(on_output = on_output)]
async fn count_words(text: String) -> Result<u32, ToolError> {
    Ok(text.split_whitespace().count() as u32)
}

fn main() {}
