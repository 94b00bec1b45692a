// `mcp(task_required)` serves a tool only as an MCP task, which only a
// background tool's call can be.
use tool_core::tool;

/// Builds an archive
#[tool(mcp(task_required))]
async fn archive() -> String {
    "archived".into()
}

fn main() {}
