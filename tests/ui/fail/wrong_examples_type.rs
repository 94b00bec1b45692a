// input_examples of a tool with one parameter are values of its type (or of
// the generated input struct): examples of another type are reported on the
// path.
use tool_core::tool;

fn examples() -> Vec<u32> {
    vec![3]
}

/// Get the weather
#[tool(input_examples = examples)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
