// A require_approval policy whose parameter is not the tool's input type.
use tool_core::{tool, RequestContext};

fn policy(city: &String, _: &RequestContext) -> bool {
    city.is_empty()
}

/// Get the weather
#[tool(require_approval = policy)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
