// On a #[tool] error the macro still emits the tool type (a stand-in that
// converts into `Tool`), so uses of `WeatherTool` elsewhere report nothing:
// the only errors are the macro's own.
use tool_core::{Tool, tool};

/// Get the weather
#[tool(id = "weather tool", stirct)]
pub async fn weather(city: String) -> String {
    city
}

fn register(tools: &mut Vec<Tool>, tool: impl Into<Tool>) {
    tools.push(tool.into());
}

fn main() {
    let mut tools = vec![Tool::from(WeatherTool)];
    let value = WeatherTool;
    let copy = value;
    register(&mut tools, value);
    register(&mut tools, copy.clone());
    let tool: Tool = WeatherTool::default().into();
    tools.push(tool);
    println!("{value:?} {}", tools.len());
}
