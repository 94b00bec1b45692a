//! What `RestateTools::new` refuses: what a step could not keep.

use serde_json::Value;
use tool_core::{Tool, ToolContext, ToolError};
use tool_restate::{RestateError, RestateTools};
use tool_runtime::Runtime;

fn tool(id: &str) -> tool_core::ToolBuilder {
    Tool::builder(id).description("A tool")
}

fn build(builder: tool_core::ToolBuilder) -> Tool {
    builder
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(input)
        })
        .build()
        .expect("tool")
}

#[test]
fn a_runtime_writing_notifications_is_refused() {
    let error = RestateTools::new("http://127.0.0.1:8080", || {
        Runtime::builder()
            .tool(build(tool("fine")))
            .notifications(true)
    })
    .unwrap_err();
    assert!(matches!(error, RestateError::Notifications), "{error}");
}

#[test]
fn a_runtime_that_does_not_build_is_refused_with_the_runtime_error() {
    let error = RestateTools::new("http://127.0.0.1:8080", || {
        Runtime::builder()
            .tool(build(tool("twice")))
            .tool(build(tool("twice")))
    })
    .unwrap_err();
    assert!(matches!(error, RestateError::Build(_)), "{error}");
}
