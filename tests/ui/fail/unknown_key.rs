// A misspelled key: the error suggests the intended one and lists the valid keys (and no "missing description" on top).
use tool_core::tool;

#[tool(descripton = "Get the weather")]
async fn weather(city: String) -> String {
    city
}

fn main() {}
