//! Schemas derived from real type shapes, and validation against them:
//! nested structs, enums (unit, internally tagged, untagged), options,
//! vectors, maps, renamed fields, doc comments and recursive types.

use std::collections::{BTreeMap, HashMap};

use integration_tests::block_on;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{CallContext, Outcome, Tool, tool};

fn run(tool: &Tool, input: Value) -> Outcome {
    block_on(tool.execute(input, CallContext::new("c1")))
}

/// Resolves a local `$ref` so tests can look through definitions.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => root
            .pointer(reference.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("dangling {reference}")),
        None => schema,
    }
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Where to look
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Place {
    /// City name
    city: String,
    /// ISO country code
    #[serde(rename = "countryCode")]
    country: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Target {
    /// A named place
    Named { place: Place },
    /// Raw coordinates
    Coordinates { lat: f64, lon: f64 },
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Limit {
    Count(u32),
    Named(String),
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Forecast {
    target: Target,
    unit: Unit,
    days: Vec<u8>,
    limit: Option<Limit>,
    labels: HashMap<String, String>,
    weights: BTreeMap<String, f64>,
}

/// Forecast the weather
#[tool]
async fn forecast(input: Forecast) -> Forecast {
    input
}

#[test]
fn nested_structs_enums_options_vectors_and_maps() {
    let tool = Tool::from(ForecastTool);
    let schema = &tool.definition().input_schema;
    let props = &schema["properties"];
    assert_eq!(
        schema["required"],
        json!(["target", "unit", "days", "labels", "weights"])
    );
    // Unit enum: string values.
    assert_eq!(
        resolve(schema, &props["unit"])["enum"],
        json!(["celsius", "fahrenheit"])
    );
    // Vec<u8>: array of bounded integers.
    assert_eq!(props["days"]["type"], "array");
    assert_eq!(props["days"]["items"]["maximum"], 255);
    // Maps: objects with typed values.
    assert_eq!(props["labels"]["additionalProperties"]["type"], "string");
    assert_eq!(props["weights"]["additionalProperties"]["type"], "number");
    // Internally tagged enum: one branch per variant with a const tag.
    let target = resolve(schema, &props["target"]);
    let branches = target["oneOf"].as_array().expect("oneOf");
    let tags: Vec<&Value> = branches
        .iter()
        .map(|b| &b["properties"]["kind"]["const"])
        .collect();
    assert_eq!(tags, [&json!("named"), &json!("coordinates")]);
    assert_eq!(branches[0]["description"], "A named place");
    // Nested struct with docs and a renamed optional field.
    let place = resolve(schema, &branches[0]["properties"]["place"]);
    assert_eq!(place["description"], "Where to look");
    assert_eq!(place["properties"]["city"]["description"], "City name");
    assert_eq!(
        place["properties"]["countryCode"]["description"],
        "ISO country code"
    );
    assert_eq!(place["required"], json!(["city"]));

    let valid = json!({
        "target": { "kind": "named", "place": { "city": "Oslo", "countryCode": "NO" } },
        "unit": "celsius",
        "days": [1, 2],
        "limit": "all",
        "labels": { "a": "b" },
        "weights": { "x": 0.5 }
    });
    assert_eq!(run(&tool, valid.clone()).output(), Some(&valid));
}

#[test]
fn validation_follows_the_nested_shapes() {
    let tool = Tool::from(ForecastTool);
    let outcome = run(
        &tool,
        json!({
            "target": { "kind": "coordinates", "lat": "north" },
            "unit": "kelvin",
            "days": [1, 300],
            "labels": { "a": 1 },
            "weights": {}
        }),
    );
    let message = outcome.error().expect("invalid").message().to_owned();
    assert!(
        message.contains(
            "- unit: Invalid enum value. Expected 'celsius' | 'fahrenheit', received 'kelvin'"
        ),
        "{message}"
    );
    assert!(
        message.contains("- days.1: Number must be less than or equal to 255"),
        "{message}"
    );
    assert!(
        message.contains("- labels.a: Expected string, received integer"),
        "{message}"
    );
    // The tag picks the variant: its problems are listed, not "matches none
    // of the allowed shapes".
    assert!(message.contains("- target.lon: Required"), "{message}");
    assert!(
        message.contains("- target.lat: Expected number, received string"),
        "{message}"
    );
}

/// A recursive comment thread
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Comment {
    text: String,
    replies: Vec<Comment>,
}

/// Count the comments of a thread
#[tool]
async fn count_comments(root: Comment) -> usize {
    fn count(comment: &Comment) -> usize {
        1 + comment.replies.iter().map(count).sum::<usize>()
    }
    count(&root)
}

#[test]
fn recursive_types_use_defs() {
    let tool = Tool::from(CountCommentsTool);
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["properties"]["replies"]["items"]["$ref"], "#");
    let thread = json!({ "text": "a", "replies": [{ "text": "b", "replies": [{ "text": "c", "replies": [] }] }] });
    assert_eq!(run(&tool, thread).output(), Some(&json!(3)));
    let bad = json!({ "text": "a", "replies": [{ "text": "b", "replies": [{ "replies": [] }] }] });
    let message = run(&tool, bad)
        .error()
        .expect("invalid")
        .message()
        .to_owned();
    assert!(
        message.contains("- replies.0.replies.0.text: Required"),
        "{message}"
    );
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Tree {
    root: Node,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Node {
    name: String,
    children: Vec<Node>,
}

/// Depth of a tree
#[tool]
async fn depth(tree: Tree) -> usize {
    fn depth(node: &Node) -> usize {
        1 + node.children.iter().map(depth).max().unwrap_or(0)
    }
    depth(&tree.root)
}

#[test]
fn recursive_definitions_live_in_defs() {
    let tool = Tool::from(DepthTool);
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["properties"]["root"]["$ref"], "#/$defs/Node");
    assert_eq!(
        schema["$defs"]["Node"]["properties"]["children"]["items"]["$ref"],
        "#/$defs/Node"
    );
    let tree = json!({ "root": { "name": "a", "children": [{ "name": "b", "children": [] }] } });
    assert_eq!(run(&tool, tree).output(), Some(&json!(2)));
}

/// `levels` levels of `{"type": "object", "properties": {"a": ...}}`, built
/// without recursion (`json!` would serialize the inner value recursively).
fn nested_schema(levels: usize) -> serde_json::Value {
    (1..levels).fold(json!({ "type": "string" }), |inner, _| {
        let properties = serde_json::Map::from_iter([("a".to_owned(), inner)]);
        Value::Object(serde_json::Map::from_iter([
            ("type".to_owned(), json!("object")),
            ("properties".to_owned(), Value::Object(properties)),
        ]))
    })
}

/// The hardening issue: an input schema nested 3000 levels overflowed the
/// stack in `Tool::builder` (a recursive clone). It is refused, naming where,
/// on a test thread's small stack, and so is any schema of the tool.
#[test]
fn a_schema_nested_3000_levels_is_refused_without_overflowing_the_stack() {
    let refused = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let build = |configure: fn(
                tool_core::ToolBuilder,
                serde_json::Value,
            ) -> tool_core::ToolBuilder| {
                configure(
                    tool_core::Tool::builder("deep").description("Deep"),
                    nested_schema(3000),
                )
                .execute(|input, _ctx| async move { Ok::<_, tool_core::ToolError>(input) })
                .build()
                .unwrap_err()
            };
            [
                build(|b, s| b.input_schema(s)),
                build(|b, s| b.output_schema(s)),
                build(|b, s| b.resume_schema(s)),
            ]
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    for (error, which) in refused.iter().zip(["input", "output", "resume"]) {
        let tool_core::BuildError::SchemaTooDeep {
            which: w,
            path,
            limit,
            ..
        } = error
        else {
            panic!("{error:?}")
        };
        assert_eq!((*w, *limit), (which, tool_core::MAX_SCHEMA_DEPTH));
        assert!(path.starts_with("/properties/a/properties/a"), "{path}");
        assert!(
            error.to_string().contains("deeper than 100 levels"),
            "{error}"
        );
    }
    // As deep as the limit allows: built.
    let ok = tool_core::Tool::builder("ok")
        .description("Deep enough")
        .input_schema(nested_schema(tool_core::MAX_SCHEMA_DEPTH / 2))
        .execute(|input, _ctx| async move { Ok::<_, tool_core::ToolError>(input) })
        .build();
    assert!(ok.is_ok(), "{ok:?}");
}
