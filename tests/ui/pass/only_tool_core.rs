// Generated code needs nothing but tool-core: no serde_json, and serde and
// schemars appear only in the user's own derives.
use tool_core::{tool, Tool, ToolError};

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Page {
    title: String,
}

/// Fetch a page title
#[tool(strict, input_examples = examples, mcp(open_world), background(timeout_ms = 5000))]
pub async fn fetch_title(
    /// The page address
    url: String,
    /// Follow redirects
    follow: Option<bool>,
) -> Result<Page, ToolError> {
    let _ = follow;
    Ok(Page { title: url })
}

fn examples() -> Vec<FetchTitleToolInput> {
    vec![FetchTitleToolInput { url: "https://example.com".into(), follow: None }]
}

fn main() {
    let tool = Tool::from(FetchTitleTool);
    assert_eq!(tool.definition().input_examples.len(), 1);
    assert_eq!(tool.definition().background.as_ref().unwrap().timeout_ms, Some(5000));
}
