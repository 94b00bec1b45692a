//! Rust counterparts of every example on the reference's createTool page,
//! each exercised through the public API.

use std::sync::{Arc, Mutex};

use integration_tests::block_on;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::hooks::{InputAvailable, InputDelta, InputStart, OutputAvailable};
use tool_core::transform::{
    CallValues, Phase, Projection, Target, ToolTransform, TransformContext,
};
use tool_core::{
    AbortSignal, CallContext, ContentPart, ModelOutput, Outcome, Tool, ToolError, tool,
};

// --- Usage example: the reverse tool -------------------------------------

#[derive(Deserialize, schemars::JsonSchema)]
struct ReverseInput {
    input: String,
}

#[derive(Serialize, schemars::JsonSchema)]
struct ReverseOutput {
    output: String,
}

/// Reverse the input string
#[tool(id = "test-tool")]
async fn reverse(ReverseInput { input }: ReverseInput) -> ReverseOutput {
    ReverseOutput {
        output: input.chars().rev().collect(),
    }
}

#[test]
fn reverse_tool_reverses_and_declares_both_schemas() {
    let tool = Tool::from(ReverseTool);
    let def = tool.definition();
    assert_eq!(def.id, "test-tool");
    assert_eq!(def.description, "Reverse the input string");
    assert_eq!(def.input_schema["required"], json!(["input"]));
    assert_eq!(
        def.output_schema.as_ref().unwrap()["required"],
        json!(["output"])
    );
    let outcome = block_on(tool.execute(r#"{"input": "abc"}"#, CallContext::new("c1")));
    assert_eq!(outcome.output(), Some(&json!({ "output": "cba" })));
}

// --- MCP annotations with _meta ------------------------------------------

#[derive(Deserialize, schemars::JsonSchema)]
struct GetWeatherInput {
    /// City name or coordinates
    location: String,
}

fn weather_meta() -> Value {
    json!({ "version": "1.0.0", "author": "team@example.com" })
}

/// Get current weather for a location
#[tool(
    id = "get-weather",
    mcp(title = "Weather Lookup", read_only, destructive = false, idempotent, open_world, meta = weather_meta)
)]
async fn get_weather(input: GetWeatherInput) -> Value {
    json!({ "location": input.location, "temperature": 21 })
}

#[test]
fn mcp_annotations_and_meta_are_declared() {
    let tool = Tool::from(GetWeatherTool);
    let mcp = tool.definition().mcp.as_ref().expect("mcp options");
    let annotations = serde_json::to_value(&mcp.annotations).unwrap();
    assert_eq!(
        annotations,
        json!({
            "title": "Weather Lookup",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": true
        })
    );
    assert_eq!(Value::Object(mcp.meta.clone().unwrap()), weather_meta());
    assert_eq!(
        tool.definition().input_schema["properties"]["location"]["description"],
        "City name or coordinates"
    );
}

// --- strict ----------------------------------------------------------------

/// Look up an order by id
#[tool(strict)]
async fn lookup_order(order_id: String) -> String {
    format!("order {order_id}: shipped")
}

#[test]
fn strict_flag_is_on_the_definition() {
    let tool = Tool::from(LookupOrderTool);
    assert!(tool.definition().strict);
    assert!(!Tool::from(ReverseTool).definition().strict);
    let outcome = block_on(tool.execute(r#"{"order_id": "A1"}"#, CallContext::new("c1")));
    assert_eq!(outcome.output(), Some(&json!("order A1: shipped")));
}

// --- toModelOutput: text, json, content with image-url ---------------------

#[derive(Serialize, schemars::JsonSchema)]
struct Chart {
    title: String,
    url: String,
    points: Vec<u32>,
}

fn chart_as_text(chart: &Chart) -> ModelOutput {
    ModelOutput::text(format!("{} ({} points)", chart.title, chart.points.len()))
}

fn chart_as_json(chart: &Chart) -> ModelOutput {
    ModelOutput::json(json!({ "title": chart.title, "max": chart.points.iter().max() }))
}

fn chart_as_content(chart: &Chart) -> ModelOutput {
    ModelOutput::Content(vec![
        ContentPart::text(format!("Chart: {}", chart.title)),
        ContentPart::image_url(chart.url.clone()),
    ])
}

fn sample_chart(title: String) -> Chart {
    Chart {
        title,
        url: "https://example.com/chart.png".into(),
        points: vec![3, 9, 4],
    }
}

/// Draw a chart as text for the model
#[tool(to_model_output = chart_as_text)]
async fn chart_text(title: String) -> Chart {
    sample_chart(title)
}

/// Draw a chart as JSON for the model
#[tool(to_model_output = chart_as_json)]
async fn chart_json(title: String) -> Chart {
    sample_chart(title)
}

/// Draw a chart as an image for the model
#[tool(to_model_output = chart_as_content)]
async fn chart_image(title: String) -> Chart {
    sample_chart(title)
}

#[test]
fn to_model_output_maps_text_json_and_content_while_output_stays_raw() {
    let input = r#"{"title": "Sales"}"#;
    let cases: [(Tool, Value); 3] = [
        (
            ChartTextTool.into(),
            json!({ "type": "text", "value": "Sales (3 points)" }),
        ),
        (
            ChartJsonTool.into(),
            json!({ "type": "json", "value": { "title": "Sales", "max": 9 } }),
        ),
        (
            ChartImageTool.into(),
            json!({ "type": "content", "value": [
                { "type": "text", "text": "Chart: Sales" },
                { "type": "image-url", "url": "https://example.com/chart.png" }
            ] }),
        ),
    ];
    for (tool, expected) in cases {
        let outcome = block_on(tool.execute(input, CallContext::new("c1")));
        let Outcome::Completed {
            output,
            model_output,
            ..
        } = &outcome
        else {
            panic!("{} did not complete: {outcome:?}", tool.id());
        };
        assert_eq!(
            output["points"],
            json!([3, 9, 4]),
            "raw output of {}",
            tool.id()
        );
        assert!(model_output.is_some());
        assert_eq!(
            outcome.to_model_value(),
            expected,
            "model output of {}",
            tool.id()
        );
    }
}

// --- transform: display and transcript on input, output, error -------------

fn redacting_transform() -> ToolTransform {
    ToolTransform::new()
        .display(Phase::Input, |ctx| {
            Some(json!({ "searching": ctx.payload["query"] }))
        })
        .display(Phase::Output, |ctx| {
            Some(json!({ "hits": ctx.payload["hits"].as_array().map_or(0, Vec::len) }))
        })
        .display(Phase::Error, |_| Some(json!({ "message": "Search failed" })))
        .transcript(Phase::Output, |ctx| {
            Some(json!({ "summary": format!("{} hits", ctx.payload["hits"].as_array().map_or(0, Vec::len)) }))
        })
}

/// Search the knowledge base
#[tool(transform = redacting_transform)]
async fn search(query: String) -> Result<Value, ToolError> {
    if query.is_empty() {
        return Err(ToolError::new("empty query"));
    }
    Ok(json!({ "hits": ["doc-1", "doc-2"], "query": query }))
}

#[test]
fn transforms_project_display_and_transcript_while_execute_sees_raw_values() {
    let tool = Tool::from(SearchTool);
    let transform = tool.transform();
    let project = |target, phase, payload: &Value| {
        let known = CallValues::default();
        block_on(transform.project(&TransformContext::new(
            target,
            phase,
            tool.id(),
            "c1",
            payload,
            known,
        )))
    };
    let input = json!({ "query": "rust" });
    assert_eq!(
        project(Target::Display, Phase::Input, &input),
        Projection::Projected(json!({ "searching": "rust" }))
    );
    // The tool itself ran on the raw input.
    let outcome = block_on(tool.execute(input.clone(), CallContext::new("c1")));
    let output = outcome.output().expect("completed").clone();
    assert_eq!(output["query"], "rust");
    assert_eq!(
        project(Target::Display, Phase::Output, &output),
        Projection::Projected(json!({ "hits": 2 }))
    );
    assert_eq!(
        project(Target::Transcript, Phase::Output, &output),
        Projection::Projected(json!({ "summary": "2 hits" }))
    );
    let failed = block_on(tool.execute(json!({ "query": "" }), CallContext::new("c2")));
    let error = failed.error().expect("failed").to_json();
    assert_eq!(
        error["message"], "empty query",
        "the model sees the raw error"
    );
    assert_eq!(
        project(Target::Display, Phase::Error, &error),
        Projection::Projected(json!({ "message": "Search failed" }))
    );
    // Configured target, no transformer for the phase: placeholder; deltas suppressed.
    assert_eq!(
        project(Target::Transcript, Phase::Input, &input),
        Projection::Projected(json!({ "message": "Tool input-available payload unavailable" }))
    );
    assert_eq!(
        project(Target::Display, Phase::InputDelta, &json!("{\"qu")),
        Projection::Suppressed
    );
}

// --- all four lifecycle hooks ---------------------------------------------

type Log = Mutex<Vec<String>>;
static HOOK_LOG: Log = Mutex::new(Vec::new());

fn record(entry: String) {
    HOOK_LOG.lock().unwrap().push(entry);
}

fn on_start(args: InputStart) {
    record(format!("start {}", args.call_id));
}

fn on_delta(args: InputDelta) {
    record(format!("delta {}", args.input_text_delta));
}

// The input and output hooks of a `#[tool]` see its types: the input as
// the function takes it, the output as it returns it.
fn on_available(args: InputAvailable<String>) {
    record(format!("available {:?}", args.input));
}

fn on_output(args: OutputAvailable<String>) -> Result<(), String> {
    record(format!("output {} {:?}", args.tool_id, args.output));
    Err("a failing hook is only logged".into())
}

/// Greet someone
#[tool(
    on_input_start = on_start,
    on_input_delta = on_delta,
    on_input_available = on_available,
    on_output = on_output
)]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

#[test]
fn all_four_lifecycle_hooks_are_declared_and_fire_with_their_arguments() {
    let tool = Tool::from(GreetTool);
    let hooks = tool.hooks();
    assert!(hooks.has_on_input_start() && hooks.has_on_input_delta());
    assert!(hooks.has_on_input_available() && hooks.has_on_output());
    let abort = AbortSignal::new();
    let messages = vec![json!({ "role": "user", "content": "greet Ann" })];
    block_on(hooks.input_start(InputStart::new("c1", messages.clone(), abort.clone())));
    for delta in [r#"{"name":"#, r#""Ann"}"#] {
        let args = InputDelta::new(delta, "c1", messages.clone(), abort.clone());
        block_on(hooks.input_delta(args));
    }
    let input = json!({ "name": "Ann" });
    let args = InputAvailable::new(input.clone(), "c1", messages, abort.clone());
    block_on(hooks.input_available(args));
    let outcome = block_on(tool.execute(input, CallContext::new("c1")));
    let output = outcome.output().unwrap().clone();
    block_on(hooks.output(OutputAvailable::new(output, "c1", tool.id(), abort)));
    assert_eq!(
        *HOOK_LOG.lock().unwrap(),
        [
            "start c1",
            r#"delta {"name":"#,
            r#"delta "Ann"}"#,
            r#"available "Ann""#,
            r#"output greet "Hello, Ann!""#,
        ]
    );
}

#[test]
fn a_panicking_hook_never_escapes() {
    let seen = Arc::new(Mutex::new(0));
    let counter = Arc::clone(&seen);
    let hooks = tool_core::Hooks::new().on_input_start(move |_: InputStart| -> () {
        *counter.lock().unwrap() += 1;
        panic!("hook bug")
    });
    block_on(hooks.input_start(InputStart::new("c1", Vec::new(), AbortSignal::new())));
    assert_eq!(*seen.lock().unwrap(), 1);
}
