// An `impl Trait` parameter: the input schema needs a concrete type.
use tool_core::tool;

/// Get the weather
#[tool]
async fn weather(city: impl Into<String>, days: u8) -> String {
    let _ = days;
    city.into()
}

fn main() {}
