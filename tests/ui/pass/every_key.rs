// Every attribute key, with every mcp(...) and background(...) entry.
use serde_json::{json, Value};
use tool_core::hooks::{InputAvailable, InputDelta, InputStart, OutputAvailable};
use tool_core::transform::{Phase, ToolTransform};
use tool_core::{
    tool, Disposition, ModelOutput, OutputValidation, RequestContext, Tool, ToolContext, ToolError,
};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Answer {
    approved: bool,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Tenant {
    tenant_id: String,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Deleted {
    count: u32,
}

fn model_output(output: &Deleted) -> ModelOutput {
    ModelOutput::text(format!("deleted {}", output.count))
}

fn transform() -> ToolTransform {
    ToolTransform::new().display(Phase::Input, |ctx| Some(ctx.payload.clone()))
}

fn provider_options() -> Value {
    json!({ "anthropic": { "cacheControl": { "type": "ephemeral" } } })
}

fn examples() -> Vec<PurgeToolInput> {
    vec![PurgeToolInput { table: "logs".into(), older_than_days: Some(30) }]
}

fn meta() -> Value {
    json!({ "owner": "ops" })
}

fn started(_: InputStart) {}
fn delta(_: InputDelta) {}
// Typed: the input as the function takes it, its output type; async too.
async fn available(args: InputAvailable<PurgeToolInput>) -> Result<(), ToolError> {
    let _: &String = &args.input.table;
    Ok(())
}
fn output(args: OutputAvailable<Deleted>) {
    let _: u32 = args.output.count;
}

/// Deletes old rows
#[tool(
    id = "purge-rows",
    description = "Delete rows older than a number of days",
    title = "Purge rows",
    strict = true,
    require_approval,
    retry_safe = false,
    transactional,
    reconcile = find_purge,
    suspend = Question,
    resume = Answer,
    request_context = Tenant,
    to_model_output = model_output,
    transform = transform,
    mcp(title = "Purge", read_only = false, destructive, idempotent = true, open_world = false, meta = meta),
    provider_options = provider_options,
    input_examples = examples,
    background(enabled, disposition = "foreground", timeout_ms = 30_000, max_retries = 2),
    on_input_start = started,
    on_input_delta = delta,
    on_input_available = available,
    on_output = output,
    output_validation = "warn",
    crate = ::tool_core,
)]
pub async fn purge(
    /// Table to purge
    table: String,
    /// Age threshold in days
    older_than_days: Option<u32>,
    ctx: ToolContext<Question, Answer>,
) -> Result<Deleted, ToolError> {
    if ctx.resume_data().is_none() {
        return ctx.suspend(Question { text: format!("Purge {table}?") });
    }
    let _ = older_than_days;
    Ok(Deleted { count: 3 })
}

async fn find_purge(
    input: PurgeToolInput,
    _key: tool_core::IdempotencyKey,
    _ctx: ToolContext<Question, Answer>,
) -> Result<tool_core::Reconciled<Deleted>, ToolError> {
    let _ = input.table;
    Ok(tool_core::Reconciled::NotHappened)
}

struct Args {
    days: u32,
}

fn policy(input: &KeepRowsToolInput, request_context: &RequestContext) -> bool {
    input.days > 7 || request_context.get("tenant").is_none()
}

/// Keeps rows for a number of days
#[tool(require_approval = policy, strict = false, output_validation = "strict", background(enabled = false, disposition = "deferred"), mcp(read_only))]
pub async fn keep_rows(days: u32) -> u32 {
    Args { days }.days
}

/// Explicitly needs no approval
#[tool(require_approval = false, background)]
pub async fn relaxed() {}

fn main() {
    let tool = Tool::from(PurgeTool);
    let d = tool.definition();
    assert_eq!(d.id, "purge-rows");
    assert_eq!(d.description, "Delete rows older than a number of days");
    assert_eq!(d.title.as_deref(), Some("Purge rows"));
    assert!(d.strict);
    assert!(d.require_approval);
    assert!(!d.retry_safe);
    assert!(d.transactional);
    assert!(tool.has_reconcile());
    assert!(d.suspend_schema.is_some() && d.resume_schema.is_some());
    assert!(d.request_context_schema.as_ref().unwrap()["properties"]["tenant_id"].is_object());
    assert_eq!(d.provider_options["anthropic"]["cacheControl"]["type"], "ephemeral");
    assert_eq!(d.input_examples, vec![json!({ "table": "logs", "older_than_days": 30 })]);
    let bg = d.background.as_ref().unwrap();
    assert!(bg.enabled);
    assert_eq!(bg.disposition, Disposition::Foreground);
    assert_eq!(bg.timeout_ms, Some(30_000));
    assert_eq!(bg.max_retries, 2);
    assert_eq!(d.output_validation, OutputValidation::Warn);
    let mcp = d.mcp.as_ref().unwrap();
    assert_eq!(mcp.annotations.title.as_deref(), Some("Purge"));
    assert_eq!(mcp.annotations.read_only_hint, Some(false));
    assert_eq!(mcp.annotations.destructive_hint, Some(true));
    assert_eq!(mcp.annotations.idempotent_hint, Some(true));
    assert_eq!(mcp.annotations.open_world_hint, Some(false));
    assert_eq!(mcp.meta.as_ref().unwrap()["owner"], "ops");
    let hooks = tool.hooks();
    assert!(hooks.has_on_input_start() && hooks.has_on_input_delta());
    assert!(hooks.has_on_input_available() && hooks.has_on_output());
    assert!(tool.transform().is_configured(tool_core::transform::Target::Display));

    let tool = Tool::from(KeepRowsTool);
    assert!(tool.has_approval_policy());
    let block_on = |f| tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f);
    assert!(block_on(tool.requires_approval(&json!({ "days": 30 }), &RequestContext::new())));
    assert!(!block_on(tool.requires_approval(&json!({ "days": 1 }), &RequestContext::new().with("tenant", "a"))));
    let d = tool.definition();
    assert!(!d.strict);
    assert!(!d.transactional);
    assert_eq!(d.output_validation, OutputValidation::Strict);
    assert!(!d.background.as_ref().unwrap().enabled);
    assert_eq!(d.background.as_ref().unwrap().disposition, Disposition::Deferred);

    let tool = Tool::from(RelaxedTool);
    assert!(!tool.definition().require_approval);
    assert!(tool.definition().background.as_ref().unwrap().enabled);
}
