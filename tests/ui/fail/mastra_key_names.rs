// createTool's camelCase names: each error names the #[tool] spelling or says where the schema comes from.
use tool_core::tool;

/// Get the weather
#[tool(requireApproval, inputSchema = WeatherInput, toModelOutput = to_text)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
