// Without `id`, the function name is the id; a non-ASCII name is not a valid one.
use tool_core::tool;

/// Get the weather
#[tool]
async fn météo(city: String) -> String {
    city
}

fn main() {}
