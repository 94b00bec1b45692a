// `input` takes `whole` or `params`, and `whole` needs exactly one parameter
// besides the context.
use tool_core::tool;

/// Get the weather
#[tool(input = foo)]
async fn weather(city: String) -> String {
    city
}

/// Get the forecast
#[tool(input = "params")]
async fn forecast(city: String) -> String {
    city
}

/// Add two numbers
#[tool(input = whole)]
async fn add(a: f64, b: f64) -> f64 {
    a + b
}

fn main() {}
