// The error type does not convert into ToolError (it is not a std::error::Error).
use tool_core::tool;

#[derive(Debug)]
pub struct LookupFailed;

/// Get the weather
#[tool]
async fn weather(city: String) -> Result<String, LookupFailed> {
    let _ = city;
    Err(LookupFailed)
}

fn main() {}
