// An explicit but blank description.
use tool_core::tool;

#[tool(description = "  ")]
async fn weather(city: String) -> String {
    city
}

fn main() {}
