//! Provider export end to end, through the public API, with `#[tool]` tools
//! the way a user declares them: definitions for OpenAI (Chat and Responses),
//! Anthropic and Gemini, strict schemas and the way back from strict
//! arguments, provider options and input examples, recorded streams, and tool
//! results in each provider's message format.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::decode::{ToolCallEvent, decode_sse};
use tool_core::provider::{
    AnthropicLimit, AnthropicLimits, ExportError, Provider, ProviderTools, SchemaRule,
};
use tool_core::strict::StrictRule;
use tool_core::{
    CallContext, ContentPart, ErrorKind, ModelOutput, Outcome, RawInput, Tool, ToolError, tool,
};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}

// --- A strict tool with optional fields, as a user writes it ---------------

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Filters {
    /// Only products in stock
    in_stock: bool,
    /// Highest price
    max_price: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Sort {
    /// By price
    Price {
        /// Highest first
        #[serde(default)]
        descending: bool,
    },
    /// By relevance
    Relevance,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchInput {
    /// What to look for
    query: String,
    /// At most this many results
    limit: Option<u32>,
    /// Page to show
    #[serde(default)]
    page: u32,
    /// Narrow the results
    filters: Option<Filters>,
    /// Labels to match
    #[serde(default)]
    tags: Vec<String>,
    /// Order of the results
    sort: Option<Sort>,
}

/// Search the product catalog
#[tool(strict)]
pub async fn search_products(input: SearchInput) -> Value {
    json!({
        "query": input.query,
        "limit": input.limit,
        "page": input.page,
        "filters": input.filters,
        "tags": input.tags,
        "sort": input.sort,
    })
}

#[test]
fn strict_openai_export_requires_every_key_and_nulls_come_back_as_absent() {
    let tools = ProviderTools::new(Provider::OpenAiChat, [SearchProductsTool]).unwrap();
    let definition = &tools.definitions()[0];
    let function = &definition["function"];
    assert_eq!(definition["type"], "function");
    assert_eq!(function["name"], "search_products");
    assert_eq!(function["description"], "Search the product catalog");
    assert_eq!(function["strict"], true);
    let parameters = &function["parameters"];
    assert_eq!(
        parameters["required"],
        json!(["query", "limit", "page", "filters", "tags", "sort"])
    );
    assert_eq!(parameters["additionalProperties"], false);
    // Optional and not nullable before: made nullable, `default` and the
    // schemars format removed; the `u32`'s bounds advertised.
    assert_eq!(
        parameters["properties"]["page"],
        json!({ "type": ["integer", "null"], "minimum": 0, "maximum": 4294967295_u32, "description": "Page to show" })
    );
    // `Option<u32>` was nullable already.
    assert_eq!(
        parameters["properties"]["limit"]["type"],
        json!(["integer", "null"])
    );
    // $defs stay, closed; the tagged enum's `oneOf` is an `anyOf`.
    assert_eq!(
        parameters["$defs"]["Filters"]["additionalProperties"],
        false
    );
    assert!(parameters["$defs"]["Sort"]["anyOf"].is_array());
    assert!(parameters["$defs"]["Sort"].get("oneOf").is_none());

    // What a model sends under strict mode: every key, `null` for "not given",
    // including inside a union branch.
    let answer = r#"{
        "query": "lamp", "limit": null, "page": null, "tags": null,
        "filters": {"in_stock": true, "max_price": null},
        "sort": {"kind": "price", "descending": null}
    }"#;
    let outcome = block_on(tools.execute("search_products", answer, CallContext::new("call_1")));
    assert_eq!(
        outcome.output(),
        Some(&json!({
            "query": "lamp",
            "limit": null,
            "page": 0,
            "filters": {"in_stock": true, "max_price": null},
            "tags": [],
            "sort": {"kind": "price", "descending": false}
        })),
        "{outcome:?}"
    );

    // The same through the export directly: the restored arguments are what
    // the Rust type expects (absent keys, not nulls).
    let tool = Tool::from(SearchProductsTool);
    let export = tool.export(Provider::OpenAiResponses).unwrap();
    let RawInput::Json(restored) = export.restore_input(answer) else {
        panic!("the answer is JSON");
    };
    assert_eq!(
        restored,
        json!({
            "query": "lamp",
            "limit": null,
            "filters": {"in_stock": true, "max_price": null},
            "sort": {"kind": "price"}
        })
    );
    let outcome = block_on(tool.execute(restored, CallContext::new("call_2")));
    assert_eq!(
        outcome.output().unwrap()["sort"],
        json!({"kind": "price", "descending": false})
    );
}

#[test]
fn strict_export_of_a_hand_built_schema_restores_optional_keys() {
    let tool = Tool::builder("lookup")
        .description("Look a word up")
        .strict(true)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "word": { "type": "string" },
                "lang": { "type": "string", "enum": ["en", "fr"] }
            },
            "required": ["word"]
        }))
        .execute(|input: Value, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
        .unwrap();
    let tools = ProviderTools::new(Provider::OpenAiResponses, [tool]).unwrap();
    let definition = &tools.definitions()[0];
    assert_eq!(definition["strict"], true);
    assert_eq!(
        definition["parameters"]["properties"]["lang"],
        json!({ "type": ["string", "null"], "enum": ["en", "fr", null] })
    );
    let outcome = block_on(tools.execute(
        "lookup",
        r#"{"word": "chat", "lang": null}"#,
        CallContext::new("c"),
    ));
    // The key is absent, exactly as the original schema has it.
    assert_eq!(outcome.output(), Some(&json!({ "word": "chat" })));
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct LabelInput {
    /// Free-form labels
    labels: std::collections::HashMap<String, String>,
}

/// Label a document
#[tool(strict)]
pub async fn label(input: LabelInput) -> usize {
    input.labels.len()
}

#[test]
fn a_schema_that_cannot_be_strict_is_an_error_naming_path_and_rule() {
    let err = ProviderTools::new(Provider::OpenAiChat, [LabelTool]).unwrap_err();
    let ExportError::Strict {
        provider,
        tool,
        source,
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!((*provider, tool.as_str()), (Provider::OpenAiChat, "label"));
    assert_eq!(source.path(), "/properties/labels/additionalProperties");
    assert_eq!(source.rule(), &StrictRule::OpenMap);
    assert_eq!(
        err.to_string(),
        "OpenAI Chat Completions: tool `label`: cannot make schema strict at \
         /properties/labels/additionalProperties: open map (additionalProperties) is not allowed in strict mode"
    );
    // Anthropic strict mode refuses it too, with its own rule.
    let err = Tool::from(LabelTool)
        .export(Provider::Anthropic)
        .unwrap_err();
    assert_eq!(err.path(), Some("/properties/labels/additionalProperties"));
    assert_eq!(
        err.schema_rule(),
        Some(&SchemaRule::OpenMap("additionalProperties".into()))
    );
    // Gemini has no strict mode: the map becomes a plain object.
    let gemini = Tool::from(LabelTool)
        .export(Provider::Gemini)
        .unwrap()
        .definition()
        .clone();
    assert_eq!(
        gemini["parameters"]["properties"]["labels"],
        json!({ "type": "object", "description": "Free-form labels" })
    );
    // Errors are cached like exports, and stay the same.
    assert_eq!(
        Tool::from(LabelTool)
            .export(Provider::OpenAiChat)
            .unwrap_err()
            .path(),
        Some("/properties/labels/additionalProperties")
    );
}

// --- One weather tool, four providers ---------------------------------------

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WeatherInput {
    /// City name or coordinates
    location: String,
    /// Temperature unit
    unit: Option<Unit>,
    /// Forecast days
    days: Option<u8>,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Celsius,
    Fahrenheit,
}

fn weather_options() -> Value {
    json!({
        "openai": { "strict": false },
        "anthropic": { "cache_control": { "type": "ephemeral" } },
        "gemini": { "behavior": "NON_BLOCKING", "description": "Weather for a place" }
    })
}

fn weather_examples() -> Vec<WeatherInput> {
    vec![WeatherInput {
        location: "Paris".into(),
        unit: Some(Unit::Celsius),
        days: None,
    }]
}

/// Get the current weather for a location
#[tool(
    id = "get_weather",
    strict,
    provider_options = weather_options,
    input_examples = weather_examples
)]
pub async fn get_weather(input: WeatherInput) -> Result<String, ToolError> {
    Ok(format!("{}: 21 degrees", input.location))
}

#[test]
fn one_definition_exports_to_each_provider_with_its_rules() {
    let tool = Tool::from(GetWeatherTool);

    // OpenAI: `openai.strict: false` turns strict mode off for both OpenAI APIs;
    // the schema goes out as derived (minus schemars' numeric formats), and the
    // examples are appended to the description.
    let chat = tool.export(Provider::OpenAiChat).unwrap();
    assert!(!chat.is_strict());
    let function = &chat.definition()["function"];
    assert_eq!(function["strict"], false);
    assert_eq!(
        function["description"],
        "Get the current weather for a location\n\nExamples:\n{\"location\":\"Paris\",\"unit\":\"celsius\",\"days\":null}"
    );
    assert_eq!(function["parameters"]["required"], json!(["location"]));
    assert_eq!(
        function["parameters"]["properties"]["days"],
        json!({ "type": ["integer", "null"], "minimum": 0, "maximum": 255, "description": "Forecast days" })
    );
    assert!(function["parameters"]["$defs"]["Unit"].is_object());
    let responses = tool.export(Provider::OpenAiResponses).unwrap().definition();
    assert_eq!(responses["type"], "function");
    assert_eq!(responses["name"], "get_weather");
    assert_eq!(responses["parameters"], function["parameters"]);

    // Anthropic: strict, objects closed, optional properties stay optional,
    // `$ref`s inlined, bounds in the description, examples in their field,
    // provider options merged.
    let anthropic = tool.export(Provider::Anthropic).unwrap();
    assert!(anthropic.is_strict());
    let definition = anthropic.definition();
    assert_eq!(definition["strict"], true);
    assert_eq!(definition["cache_control"], json!({ "type": "ephemeral" }));
    assert_eq!(
        definition["input_examples"],
        json!([{ "location": "Paris", "unit": "celsius", "days": null }])
    );
    let schema = &definition["input_schema"];
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["location"]));
    assert_eq!(
        schema["properties"]["days"],
        json!({ "type": ["integer", "null"], "description": "Forecast days\n\n{minimum: 0, maximum: 255}" })
    );
    assert_eq!(
        schema["properties"]["unit"],
        json!({
            "description": "Temperature unit",
            "anyOf": [{ "type": "string", "enum": ["celsius", "fahrenheit"] }, { "type": "null" }]
        })
    );
    assert!(schema.get("$defs").is_none());

    // Gemini: OpenAPI subset, `nullable` instead of type arrays and null
    // branches, `$ref`s inlined, `strict` ignored, options merged (including
    // its own description, then the examples).
    let gemini = tool.export(Provider::Gemini).unwrap();
    assert!(!gemini.is_strict());
    let definition = gemini.definition();
    assert_eq!(definition["behavior"], "NON_BLOCKING");
    assert!(definition.get("strict").is_none());
    assert_eq!(
        definition["description"],
        "Weather for a place\n\nExamples:\n{\"location\":\"Paris\",\"unit\":\"celsius\",\"days\":null}"
    );
    assert_eq!(
        definition["parameters"]["properties"],
        json!({
            "location": { "type": "string", "description": "City name or coordinates" },
            "unit": { "description": "Temperature unit", "type": "string", "enum": ["celsius", "fahrenheit"], "nullable": true },
            "days": { "type": "integer", "minimum": 0, "maximum": 255, "description": "Forecast days", "nullable": true }
        })
    );

    // A list of tools for a Gemini request is one tool with the declarations.
    let tools = ProviderTools::new(Provider::Gemini, [GetWeatherTool]).unwrap();
    assert_eq!(
        tools.request_tools(),
        json!([{ "functionDeclarations": [definition] }])
    );
}

#[test]
fn exports_are_converted_once_per_tool_and_provider() {
    let tool = Tool::from(SearchProductsTool);
    let first = tool.export(Provider::OpenAiChat).unwrap();
    let clone = tool.clone();
    let again = clone.export(Provider::OpenAiChat).unwrap();
    assert!(
        std::ptr::eq(first, again),
        "the second export is the cached one"
    );
    // Each provider has its own.
    let anthropic = tool.export(Provider::Anthropic).unwrap();
    assert!(!std::ptr::eq(first.definition(), anthropic.definition()));
    // A fresh tool converts afresh, to an equal definition.
    let fresh = Tool::from(SearchProductsTool);
    assert_eq!(
        fresh.export(Provider::OpenAiChat).unwrap().definition(),
        first.definition()
    );
}

#[test]
fn provider_options_cannot_replace_what_the_tool_defines() {
    let tool = Tool::builder("echo")
        .description("Echo")
        .provider_options(
            json!({ "anthropic": { "input_schema": {} }, "openai": "fast" })
                .as_object()
                .cloned()
                .unwrap(),
        )
        .execute(|input: Value, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
        .unwrap();
    assert_eq!(
        tool.export(Provider::Anthropic).unwrap_err().to_string(),
        "Anthropic Messages: tool `echo`: provider_options.anthropic.input_schema: \
         is set by the exporter from the tool itself and cannot be overridden"
    );
    assert_eq!(
        tool.export(Provider::OpenAiChat).unwrap_err().to_string(),
        "OpenAI Chat Completions: tool `echo`: provider_options.openai: must be a JSON object"
    );
    assert!(tool.export(Provider::Gemini).is_ok());
}

// --- Anthropic strict limits --------------------------------------------------

/// Only the schema matters here: seven optional fields.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct Profile {
    name: Option<String>,
    email: Option<String>,
    phone: Option<String>,
    city: Option<String>,
    country: Option<String>,
    bio: Option<String>,
    website: Option<String>,
}

/// Update a profile
#[tool(strict)]
pub async fn update_profile(profile: Profile) -> bool {
    profile.name.is_some()
}

/// Create a profile
#[tool(strict)]
pub async fn create_profile(profile: Profile) -> bool {
    profile.email.is_some()
}

/// Merge two profiles
#[tool(strict)]
pub async fn merge_profile(profile: Profile) -> bool {
    profile.phone.is_some()
}

/// Archive a profile
#[tool(strict)]
pub async fn archive_profile(profile: Profile) -> bool {
    profile.city.is_some()
}

#[test]
fn anthropic_request_over_strict_limits_is_an_error_naming_the_limit_and_tools() {
    let tools: [Tool; 4] = [
        UpdateProfileTool.into(),
        CreateProfileTool.into(),
        MergeProfileTool.into(),
        ArchiveProfileTool.into(),
    ];
    // Three fit: 21 optional parameters (24 allowed)... but 21 union-typed ones (16 allowed).
    let err = ProviderTools::new(Provider::Anthropic, tools[..2].to_vec()).map(|_| ());
    assert!(err.is_ok(), "{err:?}");
    let err = ProviderTools::new(Provider::Anthropic, tools.clone()).unwrap_err();
    let ExportError::Limits {
        provider,
        violations,
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(*provider, Provider::Anthropic);
    // 4 tools x 7 `Option` fields, each optional and each a type array.
    let found: Vec<(AnthropicLimit, usize, usize)> = violations
        .iter()
        .map(|v| (v.limit, v.found, v.allowed))
        .collect();
    assert_eq!(
        found,
        [
            (AnthropicLimit::OptionalParameters, 28, 24),
            (AnthropicLimit::UnionParameters, 28, 16),
        ]
    );
    assert_eq!(
        err.to_string(),
        "Anthropic Messages: the request would break strict-mode limits: \
         optional parameters across strict schemas: 28, Anthropic allows 24 \
         (from update_profile (7), create_profile (7), merge_profile (7), archive_profile (7)); \
         parameters with union types across strict schemas: 28, Anthropic allows 16 \
         (from update_profile (7), create_profile (7), merge_profile (7), archive_profile (7))"
    );
    // Each tool alone is fine, and other providers have no such limits.
    assert!(
        Tool::from(UpdateProfileTool)
            .export(Provider::Anthropic)
            .is_ok()
    );
    assert!(ProviderTools::new(Provider::OpenAiChat, tools.clone()).is_ok());
    // The limits are configurable, e.g. when Anthropic raises them.
    assert!(
        ProviderTools::with_limits(Provider::Anthropic, tools, AnthropicLimits::unlimited())
            .is_ok()
    );
}

#[test]
fn duplicate_names_are_an_error() {
    let err =
        ProviderTools::new(Provider::Gemini, [SearchProductsTool, SearchProductsTool]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Gemini: two tools are named `search_products`"
    );
}

// --- Tool results ---------------------------------------------------------------

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Chart {
    title: String,
    png_base64: String,
}

fn chart_for_model(chart: &Chart) -> ModelOutput {
    ModelOutput::Content(vec![
        ContentPart::text(format!("Chart: {}", chart.title)),
        ContentPart::ImageData {
            data: chart.png_base64.clone(),
            media_type: "image/png".into(),
        },
    ])
}

/// Draw a chart
#[tool(to_model_output = chart_for_model)]
pub async fn draw_chart(title: String) -> Chart {
    Chart {
        title,
        png_base64: "iVBORw0KGgo=".into(),
    }
}

/// Divide two numbers
#[tool]
pub async fn divide(a: f64, b: f64) -> Result<f64, ToolError> {
    if b == 0.0 {
        return Err(ToolError::new("division by zero"));
    }
    Ok(a / b)
}

#[test]
fn tool_results_encode_into_each_providers_message() {
    let chart =
        block_on(Tool::from(DrawChartTool).execute(r#"{"title": "Sales"}"#, CallContext::new("c")));
    let quotient =
        block_on(Tool::from(DivideTool).execute(r#"{"a": 1, "b": 4}"#, CallContext::new("c")));
    let failed =
        block_on(Tool::from(DivideTool).execute(r#"{"a": 1, "b": 0}"#, CallContext::new("c")));
    let error = failed.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Execution);
    let error_json = error.to_json();

    // OpenAI Chat Completions: tool messages carry text only.
    let chat = Provider::OpenAiChat;
    assert_eq!(
        chat.tool_result("call_1", "divide", &quotient),
        json!({ "role": "tool", "tool_call_id": "call_1", "content": "0.25" })
    );
    assert_eq!(
        chat.tool_result("call_1", "draw_chart", &chart)["content"],
        json!([
            { "type": "text", "text": "Chart: Sales" },
            { "type": "text", "text": "[image not sent: an OpenAI Chat Completions tool message takes text only]" }
        ])
    );
    assert_eq!(
        chat.tool_result("call_1", "divide", &failed)["content"],
        json!(error_json.to_string())
    );

    // OpenAI Responses: a content array with the image as a data URL.
    assert_eq!(
        Provider::OpenAiResponses.tool_result("call_2", "draw_chart", &chart),
        json!({
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [
                { "type": "input_text", "text": "Chart: Sales" },
                { "type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto" }
            ]
        })
    );

    // Anthropic: text and image blocks; failures flagged.
    assert_eq!(
        Provider::Anthropic.tool_result("toolu_1", "draw_chart", &chart)["content"][1],
        json!({ "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo=" } })
    );
    assert_eq!(
        Provider::Anthropic.tool_result("toolu_2", "divide", &failed),
        json!({ "type": "tool_result", "tool_use_id": "toolu_2", "content": error_json.to_string(), "is_error": true })
    );

    // Gemini: `output` or `error` in the response object, inline data in parts.
    assert_eq!(
        Provider::Gemini.tool_result("", "divide", &quotient),
        json!({ "functionResponse": { "name": "divide", "response": { "output": 0.25 } } })
    );
    assert_eq!(
        Provider::Gemini.tool_result("", "divide", &failed),
        json!({ "functionResponse": { "name": "divide", "response": { "error": error_json } } })
    );
    assert_eq!(
        Provider::Gemini.tool_result("fc_1", "draw_chart", &chart),
        json!({ "functionResponse": {
            "id": "fc_1",
            "name": "draw_chart",
            "response": { "output": "Chart: Sales" },
            "parts": [{ "inlineData": { "mimeType": "image/png", "data": "iVBORw0KGgo=" } }]
        } })
    );
}

#[test]
fn unknown_tools_get_the_model_facing_error() {
    let tools = ProviderTools::new(Provider::Anthropic, [DivideTool]).unwrap();
    let outcome = block_on(tools.execute("multiply", "{}", CallContext::new("toolu_9")));
    assert_eq!(
        outcome.error().map(|e| e.message().to_owned()),
        Some(r#"Tool "multiply" not found. Available tools: divide."#.to_owned())
    );
    assert_eq!(
        tools.tool_result("toolu_9", "multiply", &outcome)["is_error"],
        true
    );
}

// --- Recorded streams, through the decoders, back to the tools --------------

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct Place {
    /// Where
    location: String,
    /// Unit, when the user gave one
    #[serde(default)]
    unit: String,
}

/// Weather at a place
#[tool(id = "weather", strict)]
pub async fn weather_at(place: Place) -> String {
    format!(
        "{} ({})",
        place.location,
        if place.unit.is_empty() {
            "default unit"
        } else {
            &place.unit
        }
    )
}

/// Weather at a place (Anthropic fixture name)
#[tool(id = "get_weather", strict)]
pub async fn get_weather_at(place: Place) -> String {
    place.location
}

/// Runs a recorded stream through the provider's decoder and the tools'
/// restoring stream, then executes every completed call.
fn run_stream(tools: &ProviderTools, body: &str) -> Vec<(String, String, Outcome)> {
    let decoder = tools.provider().decoder().expect("a streaming provider");
    let mut stream = tools.stream();
    let mut names = std::collections::HashMap::new();
    let mut done = Vec::new();
    for event in decode_sse(decoder, body).expect("the fixture decodes") {
        match stream.apply(event) {
            ToolCallEvent::Start { call_id, tool_name } => {
                names.insert(call_id, tool_name);
            }
            ToolCallEvent::InputEnd { call_id, input } => {
                let name = names.remove(&call_id).expect("started");
                let outcome =
                    block_on(tools.execute(&name, input, CallContext::new(call_id.clone())));
                done.push((call_id, name, outcome));
            }
            _ => {}
        }
    }
    done
}

#[test]
fn openai_responses_stream_runs_the_strict_tool() {
    let Some(path) =
        integration_tests::shared_fixture("streams/openai-responses-function-call.chunks.jsonl")
    else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let body: String = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("data: {line}\n\n"))
        .collect();
    let tools = ProviderTools::new(Provider::OpenAiResponses, [WeatherAtTool]).unwrap();
    let calls = run_stream(&tools, &body);
    assert_eq!(calls.len(), 1);
    let (call_id, name, outcome) = &calls[0];
    assert_eq!(name, "weather");
    assert_eq!(
        outcome.output(),
        Some(&json!("San Francisco (default unit)"))
    );
    let item = tools.tool_result(call_id, name, outcome);
    assert_eq!(item["type"], "function_call_output");
    assert_eq!(item["output"], "San Francisco (default unit)");
}

#[test]
fn anthropic_stream_runs_the_tool() {
    let Some(path) = integration_tests::shared_fixture("streams/anthropic-messages-tool-use.sse")
    else {
        return;
    };
    let body = std::fs::read_to_string(path).unwrap();
    let tools = ProviderTools::new(Provider::Anthropic, [GetWeatherAtTool]).unwrap();
    let calls = run_stream(&tools, &body);
    assert_eq!(calls.len(), 1);
    let (call_id, name, outcome) = &calls[0];
    assert_eq!(outcome.output(), Some(&json!("Paris")));
    assert_eq!(
        tools.tool_result(call_id, name, outcome),
        json!({ "type": "tool_result", "tool_use_id": call_id, "content": "Paris" })
    );
}

#[test]
fn streamed_strict_arguments_with_nulls_are_restored() {
    // An OpenAI Chat stream for the strict `weather` tool whose model sent
    // `"unit": null` (split across chunks, as models do).
    let chunk = |args: &str| {
        format!(
            "data: {}\n\n",
            json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [{ "index": 0, "function": { "arguments": args } }] } }] })
        )
    };
    let mut body = format!(
        "data: {}\n\n",
        json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [{ "index": 0, "id": "call_7", "function": { "name": "weather", "arguments": "" } }] } }] })
    );
    for piece in [r#"{"location":"Os"#, r#"lo","unit""#, r#":null}"#] {
        body.push_str(&chunk(piece));
    }
    body.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] })
    ));
    let tools = ProviderTools::new(Provider::OpenAiChat, [WeatherAtTool]).unwrap();
    let decoder = Provider::OpenAiChat.decoder().unwrap();
    let mut stream = tools.stream();
    let ends: Vec<ToolCallEvent> = decode_sse(decoder, &body)
        .unwrap()
        .into_iter()
        .map(|event| stream.apply(event))
        .filter(|event| matches!(event, ToolCallEvent::InputEnd { .. }))
        .collect();
    assert_eq!(
        ends,
        [ToolCallEvent::InputEnd {
            call_id: "call_7".into(),
            input: json!({ "location": "Oslo" })
        }]
    );
    let calls = run_stream(&tools, &body);
    assert_eq!(calls[0].2.output(), Some(&json!("Oslo (default unit)")));
}

// --- Every provider, every schema: an export or a typed error, never a panic --

/// Walks a converted schema through its subschema positions only (so that a
/// property *named* `$ref` is not mistaken for the keyword).
fn walk_schema<'a>(schema: &'a Value, visit: &mut dyn FnMut(&'a serde_json::Map<String, Value>)) {
    let Value::Object(object) = schema else {
        return;
    };
    visit(object);
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = object.get(key) {
            children
                .values()
                .for_each(|child| walk_schema(child, visit));
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(children)) = object.get(key) {
            children.iter().for_each(|child| walk_schema(child, visit));
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = object.get(key) {
            walk_schema(child, visit);
        }
    }
}

/// What each provider's converted schema must look like.
fn check_shape(provider: Provider, strict: bool, schema: &Value) -> Result<(), String> {
    let mut problems = Vec::new();
    walk_schema(schema, &mut |object| match provider {
        Provider::Anthropic if strict => {
            for key in [
                "$ref",
                "$defs",
                "oneOf",
                "allOf",
                "minimum",
                "maxLength",
                "not",
            ] {
                if object.contains_key(key) {
                    problems.push(format!("`{key}` in {}", Value::Object(object.clone())));
                }
            }
            let typed_object = match object.get("type") {
                Some(Value::String(t)) => t == "object",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
                _ => object.contains_key("properties"),
            };
            if typed_object && object.get("additionalProperties") != Some(&Value::Bool(false)) {
                problems.push(format!("open object {}", Value::Object(object.clone())));
            }
        }
        Provider::Gemini => {
            for key in [
                "$ref",
                "$defs",
                "oneOf",
                "allOf",
                "additionalProperties",
                "const",
                "not",
            ] {
                if object.contains_key(key) {
                    problems.push(format!("`{key}` in {}", Value::Object(object.clone())));
                }
            }
            if object.get("type").is_some_and(|t| !t.is_string()) {
                problems.push(format!("type array in {}", Value::Object(object.clone())));
            }
            let enum_values = object.get("enum").and_then(Value::as_array);
            if enum_values.is_some_and(|values| !values.iter().all(Value::is_string)) {
                problems.push(format!(
                    "non-string enum in {}",
                    Value::Object(object.clone())
                ));
            }
        }
        _ => {}
    });
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn hostile_schemas() -> Vec<Value> {
    let mut deep = json!({ "type": "string" });
    for _ in 0..300 {
        deep = json!({ "type": "object", "properties": { "x": deep } });
    }
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        defs.insert(
            format!("D{i}"),
            json!({ "type": "object", "properties": {
                "a": { "$ref": format!("#/$defs/D{}", i + 1) },
                "b": { "$ref": format!("#/$defs/D{}", i + 1) }
            } }),
        );
    }
    defs.insert("D40".into(), json!({ "type": "string" }));
    vec![
        deep,
        json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/D0" } }, "$defs": defs }),
        json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/A" } },
                "$defs": { "A": { "$ref": "#/$defs/B" }, "B": { "$ref": "#/$defs/A" } } }),
        json!({ "type": "object", "properties": { "a": { "$ref": "#" } } }),
        json!({ "type": "object", "properties": 5 }),
        json!({ "type": "object", "properties": { "a": { "anyOf": {} } } }),
        json!({ "type": "object", "properties": { "a": { "enum": 3 } } }),
        json!({ "type": "object", "properties": { "a": { "type": 5 } } }),
        json!({ "type": "object", "properties": { "a": { "$ref": 5 } } }),
        json!({ "type": "object", "properties": { "a": { "type": "array", "items": [{ "type": "string" }] } } }),
        json!({ "type": "object", "properties": { "a": { "allOf": [{ "$ref": "#/properties/a" }] } } }),
        json!({ "type": "object", "properties": { "$ref": { "type": "string" }, "additionalProperties": { "type": "integer" } } }),
        json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/%ZZ" } } }),
        json!({ "type": "object", "properties": { "a": { "type": "integer", "enum": [1, null] } } }),
        json!([]),
        json!(null),
        json!(false),
        json!("object"),
    ]
}

#[test]
fn every_provider_exports_or_refuses_any_schema_without_panicking() {
    let mut schemas = hostile_schemas();
    if let Some(path) = integration_tests::shared_fixture("strict/openai-strict-cases.json") {
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        schemas.extend(cases.into_iter().map(|case| case["input"].clone()));
    }
    let base = Tool::from(DivideTool).definition().clone();
    let mut exported = 0;
    let mut refused = 0;
    for schema in &schemas {
        for strict in [false, true] {
            let mut definition = base.clone();
            definition.input_schema = schema.clone();
            definition.strict = strict;
            for provider in Provider::ALL {
                match tool_core::provider::Export::from_definition(&definition, provider) {
                    Ok(export) => {
                        exported += 1;
                        let shape = export
                            .input_schema()
                            .map(|converted| check_shape(provider, strict, converted));
                        if let Some(Err(problem)) = shape {
                            panic!("{provider} strict={strict}: {problem}\ninput: {schema}");
                        }
                        // OpenAI strict succeeds exactly when the strict converter does.
                        if strict
                            && matches!(provider, Provider::OpenAiChat | Provider::OpenAiResponses)
                        {
                            assert!(tool_core::strict::openai_strict(schema).is_ok(), "{schema}");
                        }
                    }
                    Err(error) => {
                        refused += 1;
                        let message = error.to_string();
                        assert!(message.starts_with(&provider.to_string()), "{message}");
                        assert!(message.contains("`divide`"), "{message}");
                    }
                }
            }
        }
    }
    assert!(
        exported > 0 && refused > 0,
        "{exported} exported, {refused} refused"
    );
}

// --- Integer bounds in every export (issue 25) -------------------------------

/// Move a counter
#[tool(strict)]
async fn move_counter(
    /// Steps to take
    steps: u32,
    /// Signed offset
    offset: i32,
    /// Counter id
    id: u64,
    /// Signed 64-bit delta
    delta: i64,
) -> u32 {
    steps + (offset + id as i32 + delta as i32).unsigned_abs()
}

/// A 32-bit integer's bounds reach the model in every export (Anthropic's as
/// a short note in the description, as it has no numeric bounds); a 64-bit
/// integer advertises no maximum (its bounds exceed 2^53), `u64` only
/// `minimum: 0`.
#[test]
fn integer_bounds_reach_every_export() {
    let tool = Tool::from(MoveCounterTool);
    let steps = json!({ "type": "integer", "minimum": 0, "maximum": 4294967295_u32, "description": "Steps to take" });
    let offset = json!({ "type": "integer", "minimum": -2147483648_i32, "maximum": 2147483647, "description": "Signed offset" });
    let id = json!({ "type": "integer", "minimum": 0, "description": "Counter id" });
    let delta = json!({ "type": "integer", "description": "Signed 64-bit delta" });
    for provider in [Provider::OpenAiChat, Provider::OpenAiResponses] {
        let definition = tool.export(provider).unwrap().definition();
        let parameters = definition
            .get("function")
            .unwrap_or(definition)
            .get("parameters")
            .unwrap();
        let properties = &parameters["properties"];
        assert_eq!(
            [
                &properties["steps"],
                &properties["offset"],
                &properties["id"],
                &properties["delta"]
            ],
            [&steps, &offset, &id, &delta],
            "{provider:?}"
        );
    }
    // Gemini's OpenAPI subset keeps the `int32` format too.
    let gemini = tool.export(Provider::Gemini).unwrap().definition();
    let properties = &gemini["parameters"]["properties"];
    for (name, bounds) in [("steps", &steps), ("offset", &offset)] {
        let bound = |key: &str| (&properties[name][key], &bounds[key]);
        assert_eq!(bound("minimum").0, bound("minimum").1, "{name}");
        assert_eq!(bound("maximum").0, bound("maximum").1, "{name}");
    }
    assert!(properties["delta"].get("maximum").is_none());
    let anthropic = tool.export(Provider::Anthropic).unwrap().definition();
    let properties = &anthropic["input_schema"]["properties"];
    assert_eq!(
        properties["steps"],
        json!({ "type": "integer", "description": "Steps to take\n\n{minimum: 0, maximum: 4294967295}" })
    );
    assert_eq!(
        properties["id"],
        json!({ "type": "integer", "description": "Counter id\n\n{minimum: 0}" })
    );
    assert_eq!(
        properties["delta"],
        json!({ "type": "integer", "description": "Signed 64-bit delta" })
    );
    // A value the type refuses is refused by the schema, naming the bound.
    let outcome = block_on(tool.execute(
        json!({ "steps": 4294967296_u64, "offset": 0, "id": 1, "delta": 0 }),
        CallContext::new("c"),
    ));
    assert!(
        outcome
            .error()
            .unwrap()
            .message()
            .contains("- steps: Number must be less than or equal to 4294967295"),
        "{outcome:?}"
    );
}
