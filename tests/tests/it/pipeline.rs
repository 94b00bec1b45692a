//! The call pipeline of one tool, through the public API: repairs,
//! validation messages in the reference's formats, suspend/resume, panics,
//! aborts and the execution context.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use integration_tests::block_on;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{
    AbortSignal, CallContext, ErrorKind, Outcome, Progress, RequestContext, Tool, ToolContext,
    ToolError, ToolSet, tool,
};

fn run(tool: &Tool, input: impl Into<tool_core::RawInput>) -> Outcome {
    block_on(tool.execute(input, CallContext::new("call-1")))
}

fn failure(outcome: &Outcome) -> (ErrorKind, String) {
    let error = outcome
        .error()
        .unwrap_or_else(|| panic!("expected a failure, got {outcome:?}"));
    (error.kind(), error.message().to_owned())
}

// --- input validation ------------------------------------------------------

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct Item {
    name: String,
    tags: Vec<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Order {
    items: Vec<Item>,
    note: Option<String>,
    #[serde(default)]
    priority: u8,
}

/// Place an order
#[tool(id = "place-order")]
async fn place_order(order: Order) -> Value {
    json!({
        "items": order.items.len(),
        "note": order.note,
        "priority": order.priority,
        "first_tags": order.items.first().map(|i| i.tags.clone()),
    })
}

#[test]
fn missing_key_is_reported_in_the_reference_format() {
    let (kind, message) = failure(&run(&Tool::from(PlaceOrderTool), json!({})));
    assert_eq!(kind, ErrorKind::InputValidation);
    assert_eq!(
        message,
        "Tool input validation failed for place-order. Please fix the following errors and try again:\n- items: Required\n\nProvided arguments: {}"
    );
}

#[test]
fn every_problem_is_named_by_its_json_path() {
    let outcome = run(
        &Tool::from(PlaceOrderTool),
        json!({ "items": [{ "name": "a", "tags": "x" }, { "tags": [] }] }),
    );
    let (_, message) = failure(&outcome);
    assert!(
        message.contains("\n- items.0.tags: Expected array, received string"),
        "{message}"
    );
    assert!(message.contains("\n- items.1.name: Required"), "{message}");
    let fields = &outcome.error().unwrap().validation_errors().unwrap().fields;
    assert_eq!(
        fields["items"].fields["0"].fields["tags"].errors,
        ["Expected array, received string"]
    );
    let json = outcome.error().unwrap().to_json();
    assert_eq!(json["error"], true);
    assert_eq!(
        json["validationErrors"]["fields"]["items"]["fields"]["1"]["fields"]["name"]["errors"][0],
        "Required"
    );
}

#[test]
fn provided_arguments_are_cut_at_200_characters() {
    let long = "x".repeat(500);
    let outcome = run(&Tool::from(PlaceOrderTool), json!({ "items": long }));
    let (_, message) = failure(&outcome);
    let dump = message.split("Provided arguments: ").nth(1).unwrap();
    assert!(dump.ends_with("... (truncated)"), "{dump}");
    assert_eq!(dump.chars().count(), 200 + "... (truncated)".len());
}

#[test]
fn unparseable_arguments_get_the_reference_message() {
    let (kind, message) = failure(&run(&Tool::from(PlaceOrderTool), r#"{"items": [ "#));
    assert_eq!(kind, ErrorKind::InvalidJson);
    assert_eq!(
        message,
        "Tool \"place-order\" received invalid arguments \u{2014} the provided JSON could not be parsed. Please provide valid JSON arguments."
    );
}

#[test]
fn unknown_tool_lists_the_available_ones() {
    let set = ToolSet::new([Tool::from(PlaceOrderTool), Tool::from(EchoContextTool)]).unwrap();
    let outcome = block_on(set.execute("order", json!({}), CallContext::new("c1")));
    let (kind, message) = failure(&outcome);
    assert_eq!(kind, ErrorKind::UnknownTool);
    assert_eq!(
        message,
        "Tool \"order\" not found. Available tools: place-order, echo_context."
    );
}

// --- safe repairs ------------------------------------------------------------

#[test]
fn stringified_nested_arrays_are_parsed() {
    let outcome = run(
        &Tool::from(PlaceOrderTool),
        json!({ "items": r#"[{"name": "a", "tags": ["t"]}]"# }),
    );
    assert_eq!(outcome.output().unwrap()["first_tags"], json!(["t"]));
}

#[test]
fn null_on_a_key_that_rejects_null_means_absent() {
    // `priority` has a default but is not nullable: null means "not given".
    let outcome = run(
        &Tool::from(PlaceOrderTool),
        json!({ "items": [], "priority": null, "note": null }),
    );
    assert_eq!(
        outcome.output().unwrap(),
        &json!({ "items": 0, "note": null, "priority": 0, "first_tags": null })
    );
}

#[test]
fn top_level_null_and_empty_text_become_an_empty_object() {
    let tool = Tool::from(NoArgsTool);
    assert_eq!(run(&tool, Value::Null).output(), Some(&json!("pong")));
    assert_eq!(run(&tool, "").output(), Some(&json!("pong")));
    assert_eq!(run(&tool, "  ").output(), Some(&json!("pong")));
}

#[test]
fn the_errors_reported_are_those_of_the_last_repair_attempt() {
    // Attempt 1 sees a string where an array is expected; the stringified
    // array is parsed (attempt 2), which reveals the missing `name`.
    let outcome = run(
        &Tool::from(PlaceOrderTool),
        json!({ "items": r#"[{"tags": []}]"# }),
    );
    let (_, message) = failure(&outcome);
    assert!(message.contains("- items.0.name: Required"), "{message}");
    assert!(!message.contains("received string"), "{message}");
    // The arguments quoted are the ones the model sent.
    assert!(
        message.contains(r#""items": "[{\"tags\": []}]""#),
        "{message}"
    );
}

/// Answer ping
#[tool]
fn no_args() -> String {
    "pong".into()
}

// --- output validation -----------------------------------------------------

#[derive(Serialize, schemars::JsonSchema)]
struct Score {
    #[schemars(range(max = 100))]
    value: u32,
}

/// Score a text
#[tool]
async fn score(points: u32) -> Score {
    Score { value: points }
}

/// Score a text, tolerating bad output
#[tool(output_validation = "warn")]
async fn lenient_score(points: u32) -> Score {
    Score { value: points }
}

#[test]
fn invalid_output_fails_in_strict_mode_and_passes_in_warn_mode() {
    let (kind, message) = failure(&run(&Tool::from(ScoreTool), json!({ "points": 120 })));
    assert_eq!(kind, ErrorKind::OutputValidation);
    assert_eq!(
        message,
        "Tool output validation failed for score. The tool returned invalid output:\n- value: Number must be less than or equal to 100\n\nReturned output: {\n  \"value\": 120\n}"
    );
    let outcome = run(&Tool::from(LenientScoreTool), json!({ "points": 120 }));
    assert_eq!(outcome.output(), Some(&json!({ "value": 120 })));
    assert_eq!(
        run(&Tool::from(ScoreTool), json!({ "points": 7 })).output(),
        Some(&json!({ "value": 7 }))
    );
}

// --- request context -------------------------------------------------------

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Session {
    user_id: String,
    api_key: String,
}

/// Echo who is calling
#[tool(request_context = Session)]
async fn echo_context(ctx: ToolContext) -> Result<String, ToolError> {
    let session: Session = ctx.request_context().parse()?;
    Ok(format!("{} via {}", session.user_id, ctx.tool_id()))
}

#[test]
fn request_context_is_validated_with_secrets_redacted() {
    let tool = Tool::from(EchoContextTool);
    let bad = RequestContext::new()
        .with("userId", 42)
        .with("apiKey", "sk-secret")
        .with("authToken", "t");
    let outcome =
        block_on(tool.execute(json!({}), CallContext::new("c1").with_request_context(bad)));
    let (kind, message) = failure(&outcome);
    assert_eq!(kind, ErrorKind::RequestContextValidation);
    assert!(message.starts_with("Request context validation failed for echo_context. Please fix the following errors and try again:\n- userId: Expected string, received integer\n\nProvided request context: "), "{message}");
    assert!(!message.contains("sk-secret"), "{message}");
    assert!(message.contains(r#""apiKey": "[REDACTED]""#), "{message}");
    assert!(
        message.contains(r#""authToken": "[REDACTED]""#),
        "{message}"
    );

    let good = RequestContext::new()
        .with("userId", "u-1")
        .with("apiKey", "k");
    let outcome =
        block_on(tool.execute(json!({}), CallContext::new("c1").with_request_context(good)));
    assert_eq!(outcome.output(), Some(&json!("u-1 via echo_context")));
}

// --- suspend and resume -----------------------------------------------------

#[derive(Serialize, Deserialize, schemars::JsonSchema, PartialEq, Debug)]
struct Confirm {
    question: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Decision {
    approved: bool,
}

/// Delete a file after confirmation
#[tool]
async fn delete_file(
    /// Path of the file to delete
    path: String,
    ctx: ToolContext<Confirm, Decision>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Confirm {
            question: format!("Delete {path}?"),
        }),
        Some(decision) => {
            let asked = ctx
                .suspend_payload()
                .map(|c| c.question.as_str())
                .unwrap_or("?");
            Ok(format!(
                "{asked} -> {}",
                if decision.approved { "deleted" } else { "kept" }
            ))
        }
    }
}

#[test]
fn suspend_returns_the_validated_payload_and_resume_schema() {
    let tool = Tool::from(DeleteFileTool);
    let def = tool.definition();
    assert_eq!(
        def.input_schema["properties"]["path"]["description"],
        "Path of the file to delete"
    );
    assert_eq!(
        def.suspend_schema.as_ref().unwrap()["required"],
        json!(["question"])
    );
    let outcome = run(&tool, json!({ "path": "/tmp/a" }));
    let Outcome::Suspended {
        call_id,
        input,
        payload,
        resume_schema,
    } = outcome
    else {
        panic!("expected a suspension, got {outcome:?}");
    };
    assert_eq!(call_id, "call-1");
    assert_eq!(
        input,
        json!({ "path": "/tmp/a" }),
        "the arguments it ran on, for storing"
    );
    assert_eq!(payload, json!({ "question": "Delete /tmp/a?" }));
    assert_eq!(
        resume_schema.unwrap()["properties"]["approved"]["type"],
        "boolean"
    );
}

#[test]
fn resume_runs_with_typed_data_and_the_earlier_payload() {
    let tool = Tool::from(DeleteFileTool);
    let payload = json!({ "question": "Delete /tmp/a?" });
    for (approved, expected) in [
        (true, "Delete /tmp/a? -> deleted"),
        (false, "Delete /tmp/a? -> kept"),
    ] {
        // `false` is resume data, not "no data": nullish, not truthy.
        let ctx = CallContext::new("call-1")
            .resuming(json!({ "approved": approved }), Some(payload.clone()));
        let outcome = block_on(tool.execute(json!({ "path": "/tmp/a" }), ctx));
        assert_eq!(outcome.output(), Some(&json!(expected)));
    }
}

#[test]
fn resume_data_is_validated_and_input_is_not() {
    let tool = Tool::from(DeleteFileTool);
    let ctx = CallContext::new("call-1").resuming(json!({ "approved": "yes" }), None);
    let (kind, message) = failure(&block_on(tool.execute(json!({ "path": "/a" }), ctx)));
    assert_eq!(kind, ErrorKind::ResumeValidation);
    assert!(
        message.contains("- approved: Expected boolean, received string"),
        "{message}"
    );
}

/// Resume with a plain boolean
#[tool]
async fn confirm_flag(ctx: ToolContext<String, bool>) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend("confirm?".to_owned()),
        Some(flag) => Ok(format!("resumed with {flag}")),
    }
}

#[test]
fn falsy_resume_data_is_still_resume_data() {
    let tool = Tool::from(ConfirmFlagTool);
    let ctx = CallContext::new("c1").resuming(json!(false), Some(json!("confirm?")));
    assert_eq!(
        block_on(tool.execute(json!({}), ctx)).output(),
        Some(&json!("resumed with false"))
    );
    let ctx = CallContext::new("c1").resuming(json!(0), None);
    let (kind, _) = failure(&block_on(tool.execute(json!({}), ctx)));
    assert_eq!(
        kind,
        ErrorKind::ResumeValidation,
        "0 is validated, not skipped"
    );
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Ticket {
    #[schemars(length(min = 3))]
    reason: String,
}

/// Open a ticket and wait
#[tool]
async fn open_ticket(reason: String, ctx: ToolContext<Ticket, String>) -> Result<(), ToolError> {
    ctx.suspend(Ticket { reason })
}

#[test]
fn an_invalid_suspend_payload_fails_in_the_reference_format() {
    let (kind, message) = failure(&run(&Tool::from(OpenTicketTool), json!({ "reason": "no" })));
    assert_eq!(kind, ErrorKind::SuspendValidation);
    assert!(message.starts_with("Tool suspension data validation failed for open_ticket. Please fix the following errors and try again:\n- reason: String must contain at least 3 character(s)"), "{message}");
}

// --- failures inside the tool ------------------------------------------------

/// Divide two numbers
#[tool]
async fn divide(a: f64, b: f64) -> Result<f64, ToolError> {
    if b == 0.0 {
        return Err(ToolError::new("division by zero").with_data(json!({ "a": a })));
    }
    Ok(a / b)
}

/// Always panics
#[tool]
async fn explode(depth: u32) -> u32 {
    if depth < 100 {
        panic!("boom at depth {depth}");
    }
    depth
}

#[test]
fn a_tool_error_reaches_the_model_with_its_data() {
    let outcome = run(&Tool::from(DivideTool), json!({ "a": 1.0, "b": 0.0 }));
    assert_eq!(
        outcome.to_model_value(),
        json!({ "error": true, "message": "division by zero", "data": { "a": 1.0 } })
    );
    assert_eq!(
        run(&Tool::from(DivideTool), json!({ "a": 1.0, "b": 4.0 })).output(),
        Some(&json!(0.25))
    );
}

#[test]
fn a_panicking_tool_becomes_a_failed_outcome() {
    let tool = Tool::from(ExplodeTool);
    let (kind, message) = failure(&run(&tool, json!({ "depth": 3 })));
    assert_eq!(kind, ErrorKind::Panic);
    assert_eq!(message, "Tool explode failed unexpectedly: boom at depth 3");
    // The tool keeps working afterwards.
    assert_eq!(
        run(&tool, json!({ "depth": 100 })).output(),
        Some(&json!(100))
    );
}

// --- context: abort, messages, progress, ids --------------------------------

/// Count slowly, reporting progress
#[tool]
async fn count_slowly(steps: u32, ctx: ToolContext) -> u32 {
    for step in 1..=steps {
        ctx.progress(f64::from(step), Some(f64::from(steps)), Some("counting"));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    steps
}

#[test]
fn progress_reaches_the_caller_in_order() {
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let ctx = CallContext::new("c1").on_progress(move |p| sink.lock().unwrap().push(p));
    let outcome = block_on(Tool::from(CountSlowlyTool).execute(json!({ "steps": 3 }), ctx));
    assert_eq!(outcome.output(), Some(&json!(3)));
    let values: Vec<f64> = seen.lock().unwrap().iter().map(|p| p.value).collect();
    assert_eq!(values, [1.0, 2.0, 3.0]);
}

#[test]
fn firing_the_abort_signal_ends_the_call_as_aborted() {
    let abort = AbortSignal::new();
    let trigger = abort.clone();
    let outcome = block_on(async move {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            trigger.abort();
        });
        Tool::from(CountSlowlyTool)
            .execute(
                json!({ "steps": 10_000 }),
                CallContext::new("c1").with_abort_signal(abort),
            )
            .await
    });
    assert_eq!(outcome, Outcome::Aborted);
}

/// Report what the context holds
#[tool]
async fn inspect(ctx: ToolContext) -> Value {
    json!({
        "call": ctx.call_id(),
        "tool": ctx.tool_id(),
        "messages": ctx.messages().len(),
        "aborted": ctx.abort_signal().is_aborted(),
        "resuming": ctx.resume_data().is_some(),
    })
}

#[test]
fn the_context_exposes_ids_and_messages() {
    let ctx = CallContext::new("call-9").with_messages(vec![
        json!({ "role": "user" }),
        json!({ "role": "assistant" }),
    ]);
    let outcome = block_on(Tool::from(InspectTool).execute(json!({}), ctx));
    assert_eq!(
        outcome.output(),
        Some(
            &json!({ "call": "call-9", "tool": "inspect", "messages": 2, "aborted": false, "resuming": false })
        )
    );
}

/// Offsets a counter
#[tool]
async fn offset(by: i32) -> i32 {
    by
}

#[test]
fn integral_floats_are_integers() {
    // JSON Schema counts 7.0 as an integer, serde's u32 does not: repaired.
    assert_eq!(
        run(&Tool::from(ScoreTool), json!({ "points": 7.0 })).output(),
        Some(&json!({ "value": 7 }))
    );
    assert_eq!(
        run(&Tool::from(OffsetTool), json!({ "by": -2.0 })).output(),
        Some(&json!(-2))
    );
    // A float field still reads integers and floats alike.
    assert_eq!(
        run(&Tool::from(DivideTool), json!({ "a": 3, "b": 2.0 })).output(),
        Some(&json!(1.5))
    );
}

#[test]
fn an_integer_past_its_types_range_is_refused_by_the_schema_naming_the_bound() {
    // The schema of an `i32` advertises the type's bounds, so the model is
    // told the bound (it read only schemars' `format: int32`, an annotation
    // to JSON Schema, and got serde's "expected i32").
    let (kind, message) = failure(&run(
        &Tool::from(OffsetTool),
        json!({ "by": 3_000_000_000_u64 }),
    ));
    assert_eq!(kind, ErrorKind::InputValidation);
    assert_eq!(
        message,
        "Tool input validation failed for offset. Please fix the following errors and try again:\n- by: Number must be less than or equal to 2147483647\n\nProvided arguments: {\n  \"by\": 3000000000\n}"
    );
    let error = run(&Tool::from(OffsetTool), json!({ "by": 3_000_000_000_u64 }));
    let fields = &error.error().unwrap().validation_errors().unwrap().fields;
    assert!(fields.contains_key("by"), "{fields:?}");
}

#[test]
fn a_child_signal_fires_with_its_parent_and_not_the_other_way() {
    let parent = AbortSignal::new();
    let child = parent.child();
    let sibling = parent.child();
    child.abort();
    assert!(child.is_aborted() && !parent.is_aborted() && !sibling.is_aborted());
    let grandchild = sibling.child();
    block_on(async {
        let waiting = tokio::spawn({
            let grandchild = grandchild.clone();
            async move { grandchild.aborted().await }
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        parent.abort();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the grandchild wakes when the parent fires")
            .expect("the waiting task ends");
    });
    assert!(sibling.is_aborted() && grandchild.is_aborted());
    assert!(!AbortSignal::never().is_aborted());
}

/// Sums numbers
#[tool]
async fn sum(n: i64, v: Vec<i64>) -> i64 {
    n + v.iter().sum::<i64>()
}

#[test]
fn a_value_wrong_everywhere_gets_a_bounded_error_listing_the_first_problems() {
    // 100,000 wrong items: every one used to be listed (a 4.5 MB message
    // here; 45 MB for a million).
    let input = json!({ "n": 1, "v": vec!["x"; 100_000] });
    let (kind, message) = failure(&run(&Tool::from(SumTool), input));
    assert_eq!(kind, ErrorKind::InputValidation);
    assert!(message.len() < 4_000, "{} bytes", message.len());
    assert_eq!(message.matches("\n- v.").count(), 20, "{message}");
    assert!(
        message.contains("- v.0: Expected integer, received string"),
        "{message}"
    );
    assert!(
        message.contains("more errors of the same kind are not listed"),
        "{message}"
    );
    assert!(message.ends_with("... (truncated)"), "{message}");
}

// --- validators compile on first use ---------------------------------------

#[test]
fn a_schema_that_only_fails_to_compile_is_reported_by_its_first_call() {
    // Valid against the meta-schema, so the build (which compiles nothing)
    // takes it; the `$ref` resolves nowhere, so the validator does not
    // compile, and every call says so instead of running.
    let tool = Tool::builder("dangling")
        .description("A tool whose schema refers to a definition it lacks")
        .input_schema(
            json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/missing" } } }),
        )
        .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
        .expect("the meta-schema check passes");
    let (kind, message) = failure(&run(&tool, json!({ "a": 1 })));
    assert_eq!(kind, ErrorKind::Configuration);
    assert!(message.contains("invalid input schema"), "{message}");
    assert!(tool.config_error().is_some());
    // A schema its meta-schema refuses still fails the build.
    let refused = Tool::builder("malformed")
        .description("A tool whose schema is malformed")
        .input_schema(json!({ "type": "object", "properties": { "a": { "type": 5 } } }))
        .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
        .build();
    let error = refused.expect_err("the meta-schema refuses it").to_string();
    assert!(error.contains("input schema"), "{error}");
    assert!(error.contains("5"), "the refused value is quoted: {error}");
}

// --- an async tool's error type: `ToolError` under any name, or converted ----------

/// `ToolError` under another name.
type Failure = ToolError;

/// Fails as `ToolError`
#[tool]
pub async fn fails_as_tool_error(code: u32) -> Result<u32, ToolError> {
    Err(ToolError::new(format!("tool error {code}")))
}

/// Fails as an alias of `ToolError`
#[tool]
pub async fn fails_as_alias(code: u32) -> Result<u32, Failure> {
    Err(Failure::new(format!("alias {code}")))
}

/// An error of the tool's own.
#[derive(Debug)]
pub struct NotFound(u32);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} not found", self.0)
    }
}

impl std::error::Error for NotFound {}

/// Fails with an error of its own
#[tool]
pub async fn fails_as_own_error(code: u32) -> Result<u32, NotFound> {
    if code == 0 {
        Ok(0)
    } else {
        Err(NotFound(code))
    }
}

#[test]
fn an_async_tool_error_is_the_tool_error_whatever_its_type_is_named() {
    for (tool, message) in [
        (Tool::from(FailsAsToolErrorTool), "tool error 7"),
        (Tool::from(FailsAsAliasTool), "alias 7"),
        (Tool::from(FailsAsOwnErrorTool), "7 not found"),
    ] {
        let (kind, found) = failure(&run(&tool, json!({ "code": 7 })));
        assert_eq!(kind, ErrorKind::Execution, "{}", tool.id());
        assert!(found.contains(message), "{}: {found}", tool.id());
    }
    let outcome = run(&Tool::from(FailsAsOwnErrorTool), json!({ "code": 0 }));
    assert_eq!(outcome.output(), Some(&json!(0)));
}
