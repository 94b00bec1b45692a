//! Each key of `#[tool(...)]`, shown by its effect on the definition or on
//! execution. (Keys covered elsewhere: `to_model_output`, `transform`,
//! `mcp(...)` and the hooks in `reference_examples.rs`; `request_context`,
//! `output_validation` and suspend via `ToolContext` in `pipeline.rs`.)

use integration_tests::block_on;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{
    BackgroundConfig, CallContext, Disposition, RequestContext, Tool, ToolContext, ToolError,
    TypedTool, tool,
};

/// Add two numbers.
///
/// Both must be finite.
#[tool]
pub async fn add(
    /// The first addend
    a: f64,
    /// The second addend
    b: f64,
) -> f64 {
    a + b
}

#[test]
fn id_defaults_to_the_fn_name_and_description_to_the_doc_comment() {
    let tool = Tool::from(AddTool);
    assert_eq!(tool.id(), "add");
    assert_eq!(AddTool::ID, "add");
    assert_eq!(
        tool.definition().description,
        "Add two numbers.\n\nBoth must be finite."
    );
    assert_eq!(
        <AddTool as TypedTool>::DESCRIPTION,
        tool.definition().description
    );
}

#[test]
fn plain_parameters_become_a_generated_input_struct() {
    let tool = Tool::from(AddTool);
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["properties"]["a"]["description"], "The first addend");
    assert_eq!(
        schema["properties"]["b"]["description"],
        "The second addend"
    );
    assert_eq!(schema["required"], json!(["a", "b"]));
    // The generated struct is a public, usable type.
    let input = AddToolInput { a: 1.0, b: 2.0 };
    assert_eq!(input.a + input.b, 3.0);
    // The function stays callable as written.
    assert_eq!(block_on(add(2.0, 3.0)), 5.0);
    let outcome = block_on(tool.execute(r#"{"a": 2, "b": 0.5}"#, CallContext::new("c")));
    assert_eq!(outcome.output(), Some(&json!(2.5)));
}

/// Search with optional filters
#[tool(
    id = "search-docs",
    description = "Full-text search over the docs",
    title = "Doc Search"
)]
fn search_docs(query: String, limit: Option<u32>, tags: Vec<String>) -> Value {
    json!({ "query": query, "limit": limit, "tags": tags })
}

#[test]
fn explicit_id_description_and_title_win_and_options_are_optional() {
    let tool = Tool::from(SearchDocsTool);
    let def = tool.definition();
    assert_eq!(def.id, "search-docs");
    assert_eq!(def.description, "Full-text search over the docs");
    assert_eq!(def.title.as_deref(), Some("Doc Search"));
    assert_eq!(def.input_schema["required"], json!(["query", "tags"]));
    let outcome = block_on(tool.execute(r#"{"query": "q", "tags": []}"#, CallContext::new("c")));
    assert_eq!(
        outcome.output(),
        Some(&json!({ "query": "q", "limit": null, "tags": [] }))
    );
}

/// Delete everything
#[tool(require_approval)]
async fn wipe() -> &'static str {
    "wiped"
}

fn needs_approval(input: &TransferToolInput, request_context: &RequestContext) -> bool {
    input.amount > 100 && request_context.get("role").and_then(Value::as_str) != Some("admin")
}

fn panicking_policy(_: &TransferBuggyToolInput, _: &RequestContext) -> bool {
    panic!("policy bug")
}

/// Transfer money
#[tool(require_approval = needs_approval)]
async fn transfer(amount: u32) -> u32 {
    amount
}

/// Transfer money, with a buggy policy
#[tool(require_approval = panicking_policy)]
async fn transfer_buggy(amount: u32) -> u32 {
    amount
}

#[test]
fn require_approval_flag_and_policy() {
    let rc = RequestContext::new();
    assert!(block_on(
        Tool::from(WipeTool).requires_approval(&json!({}), &rc)
    ));
    assert!(Tool::from(WipeTool).definition().require_approval);
    assert!(!block_on(
        Tool::from(AddTool).requires_approval(&json!({ "a": 1, "b": 2 }), &rc)
    ));

    let transfer = Tool::from(TransferTool);
    assert!(transfer.has_approval_policy());
    assert!(!block_on(
        transfer.requires_approval(&json!({ "amount": 5 }), &rc)
    ));
    assert!(block_on(
        transfer.requires_approval(&json!({ "amount": 500 }), &rc)
    ));
    let admin = RequestContext::new().with("role", "admin");
    assert!(!block_on(
        transfer.requires_approval(&json!({ "amount": 500 }), &admin)
    ));
    // Input that no longer fits the type, or a panicking policy: approval required.
    assert!(block_on(
        transfer.requires_approval(&json!({ "amount": "lots" }), &rc)
    ));
    assert!(block_on(
        Tool::from(TransferBuggyTool).requires_approval(&json!({ "amount": 1 }), &rc)
    ));
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Pause {
    step: u32,
}

/// Run a job in steps
#[tool(suspend = Pause, resume = bool)]
async fn stepped_job(ctx: ToolContext<Pause, bool>) -> Result<&'static str, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Pause { step: 1 }),
        Some(_) => Ok("done"),
    }
}

#[test]
fn suspend_and_resume_keys_declare_the_schemas() {
    let def = Tool::from(SteppedJobTool).definition().clone();
    assert_eq!(
        def.suspend_schema.unwrap()["properties"]["step"]["type"],
        "integer"
    );
    assert_eq!(def.resume_schema.unwrap()["type"], "boolean");
    assert!(Tool::from(AddTool).definition().suspend_schema.is_none());
}

fn openai_options() -> Value {
    json!({ "openai": { "parallel_tool_calls": false }, "anthropic": { "cache_control": { "type": "ephemeral" } } })
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Geo {
    /// City name
    city: String,
}

fn geo_examples() -> Vec<Geo> {
    vec![
        Geo {
            city: "Paris".into(),
        },
        Geo {
            city: "Lima".into(),
        },
    ]
}

/// Geocode a city
#[tool(provider_options = openai_options, input_examples = geo_examples)]
async fn geocode(geo: Geo) -> String {
    geo.city
}

#[test]
fn provider_options_and_typed_input_examples() {
    let def = Tool::from(GeocodeTool).definition().clone();
    assert_eq!(Value::Object(def.provider_options), openai_options());
    assert_eq!(
        def.input_examples,
        [json!({ "city": "Paris" }), json!({ "city": "Lima" })]
    );
}

/// Crawl a site in the background
#[tool(background(disposition = "foreground", timeout_ms = 30000, max_retries = 2))]
async fn crawl(url: String) -> String {
    url
}

/// Crawl later
#[tool(background)]
async fn crawl_later(url: String) -> String {
    url
}

#[test]
fn background_settings() {
    assert_eq!(
        Tool::from(CrawlTool).definition().background,
        Some(
            BackgroundConfig::new()
                .disposition(Disposition::Foreground)
                .timeout_ms(30_000)
                .max_retries(2)
        )
    );
    assert_eq!(
        Tool::from(CrawlLaterTool).definition().background,
        Some(BackgroundConfig::new())
    );
    assert_eq!(Tool::from(AddTool).definition().background, None);
}

/// A tool with no output schema
#[tool]
async fn fire_and_forget(message: String) {
    let _ = message;
}

#[test]
fn unit_output_has_no_output_schema() {
    let tool = Tool::from(FireAndForgetTool);
    assert!(tool.definition().output_schema.is_none());
    let outcome = block_on(tool.execute(json!({ "message": "m" }), CallContext::new("c")));
    assert_eq!(outcome.output(), Some(&Value::Null));
}

#[test]
fn clones_share_the_derived_schemas_and_compiled_validators() {
    let tool = Tool::from(AddTool);
    let clone = tool.clone();
    // One derivation: clones point at the very same definition.
    assert!(std::ptr::eq(tool.definition(), clone.definition()));
}
