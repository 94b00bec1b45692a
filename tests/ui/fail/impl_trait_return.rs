// `impl Trait` return: the output schema needs a concrete type.
use tool_core::tool;

/// Get the weather
#[tool]
async fn weather(city: String) -> impl serde::Serialize {
    city
}

fn main() {}
