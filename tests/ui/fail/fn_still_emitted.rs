// On a #[tool] error the function is still emitted: its callers report nothing more.
use tool_core::tool;

/// Get the weather
#[tool(id = "weather tool")]
async fn weather(city: String) -> String {
    city
}

async fn forecast() -> String {
    weather("Paris".to_owned()).await
}

fn main() {
    let _ = forecast();
}
