// `input = params` and `input = whole` override the default, which reads the
// parameter's schema: `input = params` makes the alias of `Vec<u32>` a
// property (as the default would), and `input = whole` takes a struct of the
// user's named like a standard type (`Value`) as the whole input.
use tool_core::{CallContext, Tool, tool};

type Ids = Vec<u32>;

/// Count the ids
#[tool(input = params)]
pub async fn count(
    /// The ids to count
    ids: Ids,
) -> usize {
    ids.len()
}

/// A text, under a name `#[tool]` would otherwise take for `serde_json::Value`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Value {
    /// The text
    text: String,
}

/// Echo a text
#[tool(input = whole)]
pub async fn echo(Value { text }: Value) -> String {
    text
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();

    let count = Tool::from(CountTool);
    let schema = &count.definition().input_schema;
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["properties"]["ids"]["type"], "array", "{schema}");
    assert_eq!(schema["properties"]["ids"]["description"], "The ids to count");
    assert_eq!(schema["required"], serde_json::json!(["ids"]));
    let outcome = runtime.block_on(count.execute(r#"{"ids": [1, 2, 3]}"#, CallContext::new("c1")));
    assert_eq!(outcome.output().unwrap(), &serde_json::json!(3));

    let echo = Tool::from(EchoTool);
    let schema = &echo.definition().input_schema;
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["properties"]["text"]["description"], "The text");
    let outcome = runtime.block_on(echo.execute(r#"{"text": "hi"}"#, CallContext::new("c2")));
    assert_eq!(outcome.output().unwrap(), "hi");
}
