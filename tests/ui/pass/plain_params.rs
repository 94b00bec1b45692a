// Several plain parameters become a generated input struct: `///` docs are
// property descriptions, `Option<T>` is optional, `r#type` is `type`.
use tool_core::{tool, Tool, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub enum Unit {
    Celsius,
    Fahrenheit,
}

/// Search the catalogue
#[tool]
pub async fn search(
    /// What to look for
    query: String,
    /// How many results (default 10)
    limit: Option<u32>,
    /// Temperature unit
    unit: Unit,
    /// Kind of item
    r#type: Option<String>,
    mut tags: Vec<String>,
) -> Result<Vec<String>, ToolError> {
    tags.push(query);
    let _ = (limit, unit, r#type);
    Ok(tags)
}

fn main() {
    let tool = Tool::from(SearchTool);
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["type"], "object");
    // The generated struct's rustdoc is not shown to the model.
    assert!(schema.get("description").is_none(), "{schema}");
    assert_eq!(schema["properties"]["query"]["description"], "What to look for");
    assert_eq!(schema["properties"]["limit"]["description"], "How many results (default 10)");
    assert!(schema["properties"]["type"].is_object(), "{schema}");
    assert!(schema["properties"]["unit"].is_object(), "{schema}");
    let required = schema["required"].as_array().unwrap();
    assert!(required.contains(&"query".into()));
    assert!(required.contains(&"unit".into()));
    assert!(required.contains(&"tags".into()));
    assert!(!required.contains(&"limit".into()));
    assert!(!required.contains(&"type".into()));
    // The generated input struct is public, beside the tool.
    let input = SearchToolInput {
        query: "q".into(),
        limit: None,
        unit: Unit::Celsius,
        r#type: None,
        tags: Vec::new(),
    };
    let _ = input.query;
    let _future = search("lamp".into(), Some(3), Unit::Fahrenheit, None, vec![]);
}
