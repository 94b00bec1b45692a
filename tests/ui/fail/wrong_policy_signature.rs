// A require_approval policy whose parameter is not the tool's input: for a
// tool with one parameter, neither its type nor the generated input struct;
// for several, not the generated input struct.
use tool_core::{tool, RequestContext};

fn policy(count: &u32, _: &RequestContext) -> bool {
    *count > 10
}

/// Get the weather
#[tool(require_approval = policy)]
async fn weather(city: String) -> String {
    city
}

/// Get the weather for some days
#[tool(require_approval = policy)]
async fn forecast(city: String, days: u32) -> String {
    format!("{city} {days}")
}

fn main() {}
