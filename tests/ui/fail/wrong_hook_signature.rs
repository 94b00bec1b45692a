// A hook path whose function has the wrong signature.
use tool_core::tool;

fn on_output(output: &str) {
    let _ = output;
}

/// Get the weather
#[tool(on_output = on_output)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
