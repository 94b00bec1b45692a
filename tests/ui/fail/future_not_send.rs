// The tool's future is not Send: an `Rc` is held across an `.await`.
use std::rc::Rc;
use tool_core::tool;

async fn fetch() {}

/// Get the weather
#[tool]
async fn weather(city: String) -> String {
    let shared = Rc::new(city);
    fetch().await;
    shared.to_string()
}

fn main() {}
