// #[tool] on a struct.
use tool_core::tool;

/// Get the weather
#[tool]
pub struct Weather {
    city: String,
}

fn main() {}
