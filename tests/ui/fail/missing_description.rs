// No doc comment and no `description = "..."`: the model would not know what the tool does.
use tool_core::tool;

#[tool]
async fn weather(city: String) -> String {
    city
}

fn main() {}
