// The request_context type lacks JsonSchema.
use tool_core::tool;

pub struct Tenant {
    pub id: String,
}

/// Get the weather
#[tool(request_context = Tenant)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
