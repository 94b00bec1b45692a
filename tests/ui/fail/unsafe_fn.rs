// An `unsafe fn` cannot be a tool.
use tool_core::tool;

/// Get the weather
#[tool]
async unsafe fn weather(city: String) -> String {
    city
}

fn main() {}
