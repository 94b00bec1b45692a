// output_validation takes "strict" or "warn".
use tool_core::tool;

/// Get the weather
#[tool(output_validation = "lenient")]
async fn weather(city: String) -> String {
    city
}

fn main() {}
