//! How a tool's lone parameter becomes its input, through the public API:
//! a parameter whose type's JSON Schema is an object with named properties
//! (a struct, a newtype of one) is the whole input; any other (enums of
//! every tagging, `Vec`, newtypes of non-objects, maps, aliases of those) is
//! one required property named after the parameter. Either way the input
//! schema has an object root, calls deserialize, invalid calls name the
//! path, and every provider accepts the definition.

use std::collections::HashMap;

use integration_tests::block_on;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::provider::Provider;
use tool_core::{CallContext, ErrorKind, Outcome, RequestContext, Tool, tool};

fn run(tool: &Tool, input: Value) -> Outcome {
    block_on(tool.execute(input, CallContext::new("call-1")))
}

fn output(tool: &Tool, input: Value) -> Value {
    let outcome = run(tool, input);
    outcome
        .output()
        .cloned()
        .unwrap_or_else(|| panic!("expected an output, got {outcome:?}"))
}

fn input_error(tool: &Tool, input: Value) -> String {
    let outcome = run(tool, input);
    let error = outcome
        .error()
        .unwrap_or_else(|| panic!("expected a failure, got {outcome:?}"));
    assert_eq!(error.kind(), ErrorKind::InputValidation, "{error:?}");
    error.message().to_owned()
}

/// The input schema is `{"type": "object", "properties": {property: ...},
/// "required": [property]}`, the property described by the parameter's docs.
fn assert_wrapped(tool: &Tool, property: &str, description: &str) {
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["required"], json!([property]), "{schema}");
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.len(), 1, "{schema}");
    assert_eq!(properties[property]["description"], description, "{schema}");
}

/// Every provider export succeeds and keeps the object root, and so does
/// every strict one, of a copy of the tool with `strict` set.
fn assert_exports(tool: &Tool) {
    for provider in Provider::ALL {
        let export = tool
            .export(provider)
            .unwrap_or_else(|error| panic!("{provider}: {error}"));
        assert_eq!(
            parameters(export.definition())["type"],
            "object",
            "{provider}"
        );
    }
    let strict = strict_copy(tool);
    for provider in Provider::ALL.into_iter().filter(Provider::supports_strict) {
        let export = strict
            .export(provider)
            .unwrap_or_else(|error| panic!("strict {provider}: {error}"));
        assert!(export.is_strict(), "{provider}");
        assert_eq!(
            parameters(export.definition())["type"],
            "object",
            "{provider}"
        );
    }
}

/// The tool's definition with `strict` set, as `#[tool(strict)]` declares it.
fn strict_copy(tool: &Tool) -> Tool {
    let definition = tool.definition();
    Tool::builder(definition.id.clone())
        .description(definition.description.clone())
        .input_schema(definition.input_schema.clone())
        .strict(true)
        .execute(|input, _ctx| async move { Ok::<_, tool_core::ToolError>(input) })
        .build()
        .unwrap()
}

fn parameters(definition: &Value) -> &Value {
    definition
        .get("parameters")
        .or_else(|| definition["function"].get("parameters"))
        .or_else(|| definition.get("input_schema"))
        .unwrap_or_else(|| panic!("no parameters in {definition}"))
}

/// The schema of the input's one property, after its `$ref`.
fn property_schema<'a>(tool: &'a Tool, property: &str) -> &'a Value {
    let schema = &tool.definition().input_schema;
    let property = &schema["properties"][property];
    match property.get("$ref").and_then(Value::as_str) {
        Some(reference) => &schema["$defs"][reference.trim_start_matches("#/$defs/")],
        None => property,
    }
}

// --- an internally tagged enum: the issue's `locate` ---------------------------

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// A city by name
    City { name: String },
    /// A point
    Coords { lat: f64, lon: f64 },
}

fn describe(target: &Target) -> String {
    match target {
        Target::City { name } => format!("city {name}"),
        Target::Coords { lat, lon } => format!("point {lat},{lon}"),
    }
}

/// Locate a target
#[tool]
pub async fn locate(
    /// What to locate
    target: Target,
) -> String {
    describe(&target)
}

#[test]
fn a_tagged_enum_is_one_property_named_after_the_parameter() {
    let tool = Tool::from(LocateTool);
    assert_wrapped(&tool, "target", "What to locate");
    let variants = &property_schema(&tool, "target")["oneOf"];
    assert_eq!(variants.as_array().map(Vec::len), Some(2), "{variants}");

    let located = output(
        &tool,
        json!({ "target": { "kind": "coords", "lat": 1.5, "lon": 2.0 } }),
    );
    assert_eq!(located, "point 1.5,2");
    let located = output(
        &tool,
        json!({ "target": { "kind": "city", "name": "Oslo" } }),
    );
    assert_eq!(located, "city Oslo");

    let message = input_error(&tool, json!({ "target": { "kind": "coords", "lon": 2.0 } }));
    assert!(message.contains("\n- target.lat: Required"), "{message}");
    let message = input_error(&tool, json!({ "kind": "city", "name": "Oslo" }));
    assert!(message.contains("\n- target: Required"), "{message}");

    assert_exports(&tool);
}

// --- an alias of the enum: the decision reads the schema, not the name ----------

type Place = Target;

/// Locate a place
#[tool]
pub async fn locate_place(
    /// The place
    place: Place,
) -> String {
    describe(&place)
}

#[test]
fn an_alias_of_an_enum_is_a_property_too() {
    let tool = Tool::from(LocatePlaceTool);
    assert_wrapped(&tool, "place", "The place");
    let located = output(
        &tool,
        json!({ "place": { "kind": "city", "name": "Rome" } }),
    );
    assert_eq!(located, "city Rome");
    let message = input_error(&tool, json!({ "place": { "kind": "coords", "lat": 1 } }));
    assert!(message.contains("\n- place.lon: Required"), "{message}");
    assert_exports(&tool);
}

// --- an adjacently tagged enum ---------------------------------------------------

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "shape", content = "size", rename_all = "snake_case")]
pub enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

/// Area of a shape
#[tool]
pub async fn area(
    /// The shape to measure
    shape: Shape,
) -> f64 {
    match shape {
        Shape::Circle { radius } => 3.0 * radius * radius,
        Shape::Square { side } => side * side,
    }
}

#[test]
fn an_adjacently_tagged_enum_is_a_property() {
    let tool = Tool::from(AreaTool);
    assert_wrapped(&tool, "shape", "The shape to measure");
    let area = output(
        &tool,
        json!({ "shape": { "shape": "square", "size": { "side": 3.0 } } }),
    );
    assert_eq!(area, json!(9.0));
    let message = input_error(&tool, json!({ "shape": { "shape": "square", "size": {} } }));
    assert!(
        message.contains("\n- shape.size.side: Required"),
        "{message}"
    );
    assert_exports(&tool);
}

// --- an untagged enum --------------------------------------------------------------

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Amount {
    Exact(u32),
    Range { min: u32, max: u32 },
}

/// Reserve seats
#[tool]
pub async fn reserve(
    /// How many seats
    amount: Amount,
) -> u32 {
    match amount {
        Amount::Exact(n) => n,
        Amount::Range { min, max } => max.max(min),
    }
}

#[test]
fn an_untagged_enum_is_a_property() {
    let tool = Tool::from(ReserveTool);
    assert_wrapped(&tool, "amount", "How many seats");
    assert_eq!(output(&tool, json!({ "amount": 4 })), json!(4));
    assert_eq!(
        output(&tool, json!({ "amount": { "min": 2, "max": 5 } })),
        json!(5)
    );
    let message = input_error(&tool, json!({ "amount": "four" }));
    assert!(message.contains("\n- amount:"), "{message}");
    assert_exports(&tool);
}

// --- a unit-variant enum -----------------------------------------------------------

#[derive(Deserialize, Serialize, schemars::JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Celsius,
    Fahrenheit,
}

fn unit_examples() -> Vec<Unit> {
    vec![Unit::Fahrenheit]
}

fn fahrenheit_needs_approval(unit: &Unit, _: &RequestContext) -> bool {
    matches!(unit, Unit::Fahrenheit)
}

/// Set the display unit
#[tool(input_examples = unit_examples, require_approval = fahrenheit_needs_approval)]
pub async fn set_unit(
    /// The unit to show temperatures in
    unit: Unit,
) -> &'static str {
    match unit {
        Unit::Celsius => "C",
        Unit::Fahrenheit => "F",
    }
}

#[test]
fn a_unit_variant_enum_is_a_property_and_examples_and_policies_take_the_value() {
    let tool = Tool::from(SetUnitTool);
    assert_wrapped(&tool, "unit", "The unit to show temperatures in");
    assert_eq!(
        property_schema(&tool, "unit")["enum"],
        json!(["celsius", "fahrenheit"])
    );
    assert_eq!(output(&tool, json!({ "unit": "celsius" })), "C");
    let message = input_error(&tool, json!({ "unit": "kelvin" }));
    assert!(message.contains("\n- unit:"), "{message}");
    // Examples and the approval policy are written against the parameter's
    // type; the definition gets them in the input's shape.
    assert_eq!(
        tool.definition().input_examples,
        vec![json!({ "unit": "fahrenheit" })]
    );
    let context = RequestContext::default();
    assert!(block_on(
        tool.requires_approval(&json!({ "unit": "fahrenheit" }), &context)
    ));
    assert!(!block_on(
        tool.requires_approval(&json!({ "unit": "celsius" }), &context)
    ));
    assert_exports(&tool);
}

// --- an alias of `Vec`, a newtype of a non-object, a map -----------------------------

type Ids = Vec<u32>;

/// Count the ids
#[tool]
pub async fn count_ids(
    /// The ids
    ids: Ids,
) -> usize {
    ids.len()
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Tags(Vec<String>);

/// Join tags, taken apart in the signature
#[tool]
pub async fn join_tags(Tags(tags): Tags) -> String {
    tags.join(",")
}

type Scores = HashMap<String, u32>;

/// Sum the scores
#[tool]
pub async fn sum_scores(
    /// Scores by player
    scores: Scores,
) -> u32 {
    scores.values().sum()
}

#[test]
fn an_alias_of_vec_and_a_newtype_of_one_are_properties() {
    let tool = Tool::from(CountIdsTool);
    assert_wrapped(&tool, "ids", "The ids");
    assert_eq!(output(&tool, json!({ "ids": [1, 2, 3] })), json!(3));
    let message = input_error(&tool, json!({ "ids": [1, "two"] }));
    assert!(message.contains("\n- ids.1:"), "{message}");
    assert_exports(&tool);

    // A destructured newtype has no parameter name: the property is named
    // after the type.
    let tool = Tool::from(JoinTagsTool);
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["required"], json!(["tags"]), "{schema}");
    assert_eq!(output(&tool, json!({ "tags": ["a", "b"] })), "a,b");
    assert_exports(&tool);
}

#[test]
fn a_map_is_a_property_not_the_whole_input() {
    let tool = Tool::from(SumScoresTool);
    assert_wrapped(&tool, "scores", "Scores by player");
    assert_eq!(
        output(&tool, json!({ "scores": { "ann": 2, "bob": 3 } })),
        json!(5)
    );
    let message = input_error(&tool, json!({ "scores": { "ann": "two" } }));
    assert!(message.contains("\n- scores.ann:"), "{message}");
    for provider in Provider::ALL {
        assert!(tool.export(provider).is_ok(), "{provider}");
    }
    // An open map cannot be strict: the error names where it is.
    let error = strict_copy(&tool)
        .export(Provider::OpenAiChat)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("/properties/scores/additionalProperties"),
        "{error}"
    );
}

// --- a struct and a newtype of one stay the whole input ------------------------------

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct Point {
    /// Latitude
    lat: f64,
    /// Longitude
    lon: f64,
}

/// Distance from the origin
#[tool]
pub async fn distance(point: Point) -> f64 {
    (point.lat * point.lat + point.lon * point.lon).sqrt()
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Origin(Point);

/// Distance of an origin
#[tool]
pub async fn origin_distance(Origin(point): Origin) -> f64 {
    (point.lat * point.lat + point.lon * point.lon).sqrt()
}

#[test]
fn a_struct_and_a_newtype_of_one_are_the_whole_input() {
    let tool = Tool::from(DistanceTool);
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["required"], json!(["lat", "lon"]), "{schema}");
    assert_eq!(schema["properties"]["lat"]["description"], "Latitude");
    assert_eq!(output(&tool, json!({ "lat": 3.0, "lon": 4.0 })), json!(5.0));
    let message = input_error(&tool, json!({ "lat": 3.0 }));
    assert!(message.contains("\n- lon: Required"), "{message}");
    assert_exports(&tool);

    // A newtype's root `$ref` is inlined, its definition dropped: nothing
    // else refers to it.
    let tool = Tool::from(OriginDistanceTool);
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["required"], json!(["lat", "lon"]), "{schema}");
    assert!(schema.get("$defs").is_none(), "{schema}");
    assert_eq!(output(&tool, json!({ "lat": 3.0, "lon": 4.0 })), json!(5.0));
    let message = input_error(&tool, json!({ "lon": 3.0 }));
    assert!(message.contains("\n- lat: Required"), "{message}");
    assert_exports(&tool);
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Node {
    name: String,
    children: Vec<Node>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Tree(Node);

fn names(node: &Node) -> Vec<&str> {
    std::iter::once(node.name.as_str())
        .chain(node.children.iter().flat_map(names))
        .collect()
}

/// List a tree's names
#[tool]
pub async fn tree_names(Tree(root): Tree) -> String {
    names(&root).join(",")
}

#[test]
fn a_newtype_of_a_recursive_struct_refers_to_its_root() {
    let tool = Tool::from(TreeNamesTool);
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["type"], "object", "{schema}");
    // The root is the inlined `Node`: its recursion refers to the root, as
    // schemars writes a recursive root, and no copy stays in `$defs`.
    assert_eq!(schema["properties"]["children"]["items"]["$ref"], "#");
    assert!(schema.get("$defs").is_none(), "{schema}");
    let tree = json!({ "name": "a", "children": [{ "name": "b", "children": [] }] });
    assert_eq!(output(&tool, tree), "a,b");
    let message = input_error(&tool, json!({ "name": "a", "children": [{ "name": "b" }] }));
    assert!(
        message.contains("\n- children.0.children: Required"),
        "{message}"
    );
}

// --- the explicit override still wins --------------------------------------------------

/// Locate, with the enum as the whole input
#[tool(input = whole)]
pub async fn locate_whole(target: Target) -> String {
    describe(&target)
}

#[test]
fn input_whole_keeps_a_non_object_root_which_exports_refuse_by_path() {
    let tool = Tool::from(LocateWholeTool);
    let schema = &tool.definition().input_schema;
    assert!(schema.get("oneOf").is_some(), "{schema}");
    assert_eq!(
        output(&tool, json!({ "kind": "city", "name": "Oslo" })),
        "city Oslo"
    );
    let error = tool.export(Provider::OpenAiChat).unwrap_err().to_string();
    assert!(
        error.contains("the root must be an object schema"),
        "{error}"
    );
}

// --- a value the schema admits and the type refuses -----------------------------

/// Degrees north: any number to the schema, at most 90 to the type.
#[derive(Deserialize)]
#[serde(try_from = "f64")]
pub struct Latitude(f64);

impl TryFrom<f64> for Latitude {
    type Error = String;

    fn try_from(lat: f64) -> Result<Self, String> {
        if (-90.0..=90.0).contains(&lat) {
            Ok(Latitude(lat))
        } else {
            Err(format!("latitude {lat} is out of range"))
        }
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Waypoint {
    #[schemars(with = "f64")]
    lat: Latitude,
    lon: f64,
}

/// Count a route's waypoints north of the equator
#[tool]
pub async fn northern(
    /// The route
    waypoints: Vec<Waypoint>,
) -> usize {
    waypoints
        .iter()
        .filter(|point| point.lat.0 > 0.0 && point.lon.is_finite())
        .count()
}

#[test]
fn a_value_the_type_refuses_is_named_by_its_path() {
    let tool = Tool::from(NorthernTool);
    let route = json!({ "waypoints": [{ "lat": 1.0, "lon": 2.0 }, { "lat": -3.0, "lon": 4.0 }] });
    assert_eq!(output(&tool, route), json!(1));
    let message = input_error(
        &tool,
        json!({ "waypoints": [{ "lat": 1.0, "lon": 2.0 }, { "lat": 91.0, "lon": 2.0 }] }),
    );
    assert!(
        message.contains("\n- waypoints.1.lat: latitude 91 is out of range"),
        "{message}"
    );
}
