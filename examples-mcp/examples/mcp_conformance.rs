//! The tools of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server scenarios), each declared
//! with `#[tool]` and served over streamable HTTP by the runtime's MCP
//! server, so the suite can be run against this crate:
//!
//!     cargo run -q -p examples-mcp --example mcp_conformance -- --http 127.0.0.1:3000
//!     npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3000/mcp --scenario tools-call-image
//!
//! (`.ci/mcp-conformance` does both, with the suite's Node.js from npm.)
//!
//! | scenario | tool |
//! | --- | --- |
//! | tools-call-simple-text | `test_simple_text` |
//! | tools-call-image | `test_image_content` |
//! | tools-call-audio | `test_audio_content` |
//! | tools-call-embedded-resource | `test_embedded_resource` |
//! | tools-call-mixed-content | `test_multiple_content_types` |
//! | tools-call-with-logging | `test_tool_with_logging` |
//! | tools-call-error | `test_error_handling` |
//! | tools-call-with-progress | `test_tool_with_progress` |
//! | tools-call-sampling | `test_sampling` |
//! | tools-call-elicitation | `test_elicitation` |
//! | elicitation-sep1034-defaults | `test_elicitation_sep1034_defaults` |
//! | elicitation-sep1330-enums | `test_elicitation_sep1330_enums` |
//! | json-schema-2020-12 | `json_schema_2020_12_tool` |
//! | server-sse-polling | `test_reconnection` |
//! | tasks-* (0.2 suite, the tasks extension) | `greet`, `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`, `test_tool_with_task` |
//! | input-required-result-basic-elicitation, -missing-input-response, -result-type, -ignore-extra-params, -validate-input (0.2 suite) | `test_input_required_result_elicitation` |
//! | input-required-result-basic-sampling | `test_input_required_result_sampling` |
//! | input-required-result-basic-list-roots | `test_input_required_result_list_roots` |
//! | input-required-result-multiple-input-requests | `test_input_required_result_multiple_inputs` |
//! | input-required-result-request-state | `test_input_required_result_request_state` |
//! | input-required-result-tampered-state | `test_input_required_result_tampered_state` |
//! | input-required-result-multi-round | `test_input_required_result_multi_round` |
//! | input-required-result-capability-check | `test_input_required_result_capabilities` |
//! | http-custom-header-server-validation (0.2 suite) | `test_custom_header` |
//! | server-stateless (0.2 suite) | `test_missing_capability`, `test_streaming_elicitation`, `test_logging_tool` |
//!
//! The input-required fixtures ask their client through `ctx.mcp()` as any
//! tool does: on protocol 2026-07-28 a question ends the call with an
//! `input_required` result (SEP-2322), and the client's retry runs the tool
//! again with the answer; the keys the suite looks for are given with
//! `McpContext::with_key`.
//!
//! The tasks fixtures: `greet` answers at once; `slow_compute`,
//! `failing_job` and `protocol_error_job` are background tools, so a client
//! that declares the tasks extension gets a task for their calls (one that
//! completes, completes with an error result, fails). Tasks that ask their
//! client are `input_required` until `tasks/update` answers:
//! `confirm_delete` suspends (a stored question), `multi_input` asks two
//! questions at once while it runs. `test_tool_with_task` asks before its
//! task exists (an `input_required` result), then runs as one.
//!
//! Images, audio and embedded resources are `to_model_output` content
//! parts: the MCP server turns an image part into image content, an
//! `audio/*` file into audio content and any other file into an embedded
//! resource.

use std::net::SocketAddr;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{ContentPart, ModelOutput, ToolContext, ToolError, schema_for, tool};
use tool_mcp::{Elicitation, HttpOptions, McpContext, McpServer, McpToolContext as _};
use tool_runtime::Runtime;
use tracing_subscriber::EnvFilter;

/// A 1x1 red pixel, PNG, base64.
const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A WAV file of one silent sample (8 kHz, mono, 8 bit), base64.
const SILENT_WAV: &str = "UklGRiUAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQEAAACA";

// --- content --------------------------------------------------------------

/// Returns a simple text response
#[tool]
pub async fn test_simple_text() -> String {
    "This is a simple text response for testing.".into()
}

/// A file, which the model reads as content: an image, audio or an
/// embedded resource, after its media type.
#[derive(Serialize, schemars::JsonSchema)]
pub struct File {
    /// File name
    name: String,
    /// IANA media type
    media_type: String,
    /// The file's bytes, base64
    data: String,
}

impl File {
    fn new(name: &str, media_type: &str, data: &str) -> Self {
        File {
            name: name.into(),
            media_type: media_type.into(),
            data: data.into(),
        }
    }

    /// The content part: the MCP server serves an `image/*` file as image
    /// content, `audio/*` as audio, anything else as an embedded resource.
    fn part(&self) -> ContentPart {
        ContentPart::FileData {
            data: self.data.clone(),
            media_type: self.media_type.clone(),
            filename: Some(self.name.clone()),
        }
    }
}

fn file_content(file: &File) -> ModelOutput {
    ModelOutput::Content(vec![file.part()])
}

/// Returns an image (a 1x1 red pixel PNG)
#[tool(to_model_output = file_content)]
pub async fn test_image_content() -> File {
    File::new("red-pixel.png", "image/png", RED_PIXEL_PNG)
}

/// Returns audio (a one-sample WAV file)
#[tool(to_model_output = file_content)]
pub async fn test_audio_content() -> File {
    File::new("silence.wav", "audio/wav", SILENT_WAV)
}

/// `This is an embedded resource content.`, base64.
const EMBEDDED_TXT: &str = "VGhpcyBpcyBhbiBlbWJlZGRlZCByZXNvdXJjZSBjb250ZW50Lg==";

/// `{"test":"data","value":123}`, base64.
const MIXED_JSON: &str = "eyJ0ZXN0IjoiZGF0YSIsInZhbHVlIjoxMjN9";

/// Returns an embedded text resource
#[tool(to_model_output = file_content)]
pub async fn test_embedded_resource() -> File {
    File::new("embedded-resource.txt", "text/plain", EMBEDDED_TXT)
}

/// Text, an image and an embedded JSON resource.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Mixed {
    /// The text
    text: String,
    /// A PNG image, base64
    image_png: String,
    /// A JSON file
    file: File,
}

/// Returns text, image and embedded resource content together
#[tool(to_model_output = mixed_content)]
pub async fn test_multiple_content_types() -> Mixed {
    Mixed {
        text: "Multiple content types test:".into(),
        image_png: RED_PIXEL_PNG.into(),
        file: File::new(
            "mixed-content-resource.json",
            "application/json",
            MIXED_JSON,
        ),
    }
}

fn mixed_content(mixed: &Mixed) -> ModelOutput {
    ModelOutput::Content(vec![
        ContentPart::text(mixed.text.clone()),
        ContentPart::ImageData {
            data: mixed.image_png.clone(),
            media_type: "image/png".into(),
        },
        mixed.file.part(),
    ])
}

// --- errors, logging, progress --------------------------------------------

/// Always fails: the model reads the error
#[tool]
pub async fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

/// Logs three messages while it runs, 50 ms apart
#[tool]
pub async fn test_tool_with_logging(ctx: ToolContext) -> String {
    ctx.observe().info("Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.observe().info("Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.observe().info("Tool execution completed");
    "Tool with logging executed successfully".into()
}

/// Reports progress 0, 50 and 100 of 100, 50 ms apart
#[tool]
pub async fn test_tool_with_progress(ctx: ToolContext) -> String {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.progress(step, Some(100.0), None);
    }
    "Tool with progress executed successfully".into()
}

/// Answers after 100 ms (the SSE polling scenario calls it; the server does
/// not close the stream mid-call, so the answer comes on the call's stream)
#[tool]
pub async fn test_reconnection() -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    "Reconnection test completed".into()
}

// --- asking the client ----------------------------------------------------

/// Asks the client's model to answer a prompt (MCP sampling)
#[tool]
pub async fn test_sampling(
    /// The prompt to send to the model
    prompt: String,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let answer = client(&ctx)?.sample(prompt, 100).await?;
    Ok(format!("LLM response: {answer}"))
}

/// What `test_elicitation` asks for.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct UserInfo {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Asks the user for a username and an email address (MCP elicitation)
#[tool]
pub async fn test_elicitation(
    /// The message to show the user
    message: String,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let answer = ask::<UserInfo>(&ctx, message).await?;
    Ok(format!("User response: {answer}"))
}

/// A user's status.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Status {
    Active,
    Inactive,
    Pending,
}

/// Every primitive type, each with a default (SEP-1034).
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Defaults {
    /// Name
    #[schemars(extend("default" = "John Doe"))]
    name: String,
    /// Age
    #[schemars(extend("default" = 30))]
    age: i64,
    /// Score
    #[schemars(extend("default" = 95.5))]
    score: f64,
    /// Status
    #[schemars(extend("default" = "active"))]
    status: Status,
    /// Verified
    #[schemars(extend("default" = true))]
    verified: bool,
}

/// Asks the user with defaults for every field (SEP-1034)
#[tool]
pub async fn test_elicitation_sep1034_defaults(ctx: ToolContext) -> Result<String, ToolError> {
    let answer = ask::<Defaults>(
        &ctx,
        "Please review and update the form fields with defaults".into(),
    )
    .await?;
    Ok(format!("Elicitation completed: {answer}"))
}

/// An untitled single-select enum.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Untitled {
    Option1,
    Option2,
    Option3,
}

/// A titled single-select enum (`oneOf` of `const` and `title`, under
/// `"type": "string"` as elicitation forms want).
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline, extend("type" = "string"))]
pub enum Titled {
    #[schemars(title = "First Option")]
    Value1,
    #[schemars(title = "Second Option")]
    Value2,
    #[schemars(title = "Third Option")]
    Value3,
}

/// Every enum form of SEP-1330.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Enums {
    /// Untitled single-select
    untitled_single: Untitled,
    /// Titled single-select
    titled_single: Titled,
    /// Legacy titled (enumNames, deprecated)
    #[schemars(extend("enum" = ["opt1", "opt2", "opt3"], "enumNames" = ["Option One", "Option Two", "Option Three"]))]
    legacy_enum: String,
    /// Untitled multi-select
    untitled_multi: Vec<Untitled>,
    /// Titled multi-select
    #[schemars(extend("items" = { "anyOf": [
        { "const": "value1", "title": "First Choice" },
        { "const": "value2", "title": "Second Choice" },
        { "const": "value3", "title": "Third Choice" }
    ] }))]
    titled_multi: Vec<String>,
}

/// Asks the user with every enum form (SEP-1330)
#[tool]
pub async fn test_elicitation_sep1330_enums(ctx: ToolContext) -> Result<String, ToolError> {
    let answer = ask::<Enums>(&ctx, "Please select options from the enum fields".into()).await?;
    Ok(format!("Elicitation completed: {answer}"))
}

/// The MCP client that called a tool, to ask it something. There is none
/// for a call from elsewhere, or from a client before 2026-07-28 that
/// declared neither elicitation nor sampling; on 2026-07-28 there always is
/// one, and asking it for what it did not declare says so.
fn client<S, R>(ctx: &ToolContext<S, R>) -> Result<&McpContext, ToolError> {
    ctx.mcp().ok_or_else(|| {
        ToolError::new(
            "no MCP client to ask: this call did not come over MCP, or its client (protocol before 2026-07-28) declared neither elicitation nor sampling",
        )
    })
}

/// Asks the client's user for a `T` (the form is its schema) and says what
/// they did, with the answer read as a `T`:
/// `action=<accept|decline|cancel>, content=<json>`.
async fn ask<T: DeserializeOwned + Serialize + schemars::JsonSchema + 'static>(
    ctx: &ToolContext,
    message: String,
) -> Result<String, ToolError> {
    let mcp = client(ctx)?;
    let schema = schema_for::<T>().unwrap_or(Value::Null);
    Ok(match mcp.elicit(message, schema).await? {
        Elicitation::Accepted(content) => {
            let answer = T::deserialize(&content).map_err(|e| {
                ToolError::new(format!("the answer does not have the form's shape: {e}"))
            })?;
            let content =
                serde_json::to_string(&answer).map_err(|e| ToolError::new(e.to_string()))?;
            format!("action=accept, content={content}")
        }
        Elicitation::Declined => "action=decline, content={}".into(),
        _ => "action=cancel, content={}".into(),
    })
}

// --- schemas --------------------------------------------------------------

/// A postal address.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(rename = "address")]
pub struct Address {
    street: Option<String>,
    city: Option<String>,
}

/// The input of `json_schema_2020_12_tool`: `$defs`, a `$ref` and
/// `additionalProperties: false`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Person {
    name: Option<String>,
    address: Option<Address>,
}

/// Tool with JSON Schema 2020-12 features
#[tool]
pub async fn json_schema_2020_12_tool(person: Person) -> String {
    let city = person.address.and_then(|a| a.city.or(a.street));
    format!(
        "{} ({})",
        person.name.as_deref().unwrap_or("someone"),
        city.as_deref().unwrap_or("no address")
    )
}

// --- tasks (the tasks extension, SEP-2663) ---------------------------------

/// Greets someone, at once (never a task)
#[tool]
pub async fn greet(
    /// Who to greet
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Sleeps `seconds` seconds, then answers: a background tool, so a client
/// that declares the tasks extension (or a 2025-11-25 client that declares
/// `capabilities.tasks` and sends a `task` param) gets a task to poll, and
/// cancelling the task ends the sleep
#[tool(background)]
pub async fn slow_compute(
    /// How long to work, in seconds
    seconds: f64,
    /// A label to echo
    label: Option<String>,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let duration = Duration::try_from_secs_f64(seconds.max(0.0))
        .map_err(|e| ToolError::new(format!("seconds: {e}")))?;
    tokio::select! {
        () = tokio::time::sleep(duration) => {}
        () = ctx.abort_signal().aborted() => {
            return Err(ToolError::new("cancelled"));
        }
    }
    Ok(format!(
        "Computed {} in {seconds} s",
        label.as_deref().unwrap_or("a result")
    ))
}

/// Works for a second, then fails: the task completes with an error result
/// (served only as a task: a client without the tasks extension is refused)
#[tool(background, mcp(task_required))]
pub async fn failing_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::new("This job intentionally fails"))
}

/// Panics: the task fails (an internal error, not a tool's error result)
#[tool(background)]
pub async fn protocol_error_job() -> String {
    panic!("protocol_error_job panics on purpose")
}

/// What `confirm_delete` and `multi_input` ask.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Confirmation {
    /// Go ahead?
    confirm: bool,
}

/// Asks the user to confirm, then "deletes" the file: a background tool
/// that suspends, so that as a task it is `input_required` with the
/// question (`inputRequests`), and `tasks/update` with the answer resumes
/// it, on any instance sharing the store (the suspension is stored)
#[tool(background)]
pub async fn confirm_delete(
    /// The file to delete
    filename: String,
    ctx: ToolContext<String, Confirmation>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(format!("Delete {filename}?")),
        Some(Confirmation { confirm: true }) => Ok(format!("Deleted {filename}")),
        Some(Confirmation { confirm: false }) => Ok(format!("Kept {filename}")),
    }
}

/// A name.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Name {
    /// The name
    name: String,
}

/// Asks the user two questions at once while it runs (`McpContext`): as a
/// task, both are open in `inputRequests` together, and each answer
/// (`tasks/update`) closes its own
#[tool(background)]
pub async fn multi_input(ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = client(&ctx)?;
    let (first, second) = tokio::join!(
        mcp.elicit_as::<Name>("First name?"),
        mcp.elicit_as::<Name>("Second name?")
    );
    let name = |answer: Option<Name>| answer.map_or_else(|| "nobody".to_owned(), |n| n.name);
    Ok(format!("Got {} and {}", name(first?), name(second?)))
}

/// Asks the user's name (an `input_required` result: no task yet), then
/// greets them as a task: a background tool the caller waits for, until it
/// asked and its client (one of the tasks extension) answered; the rest
/// then runs as a task (SEP-2663's input rounds, then a task)
#[tool(background(disposition = "foreground"))]
pub async fn test_tool_with_task(ctx: ToolContext<String, Name>) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend("What is your name?".to_owned()),
        Some(Name { name }) => Ok(format!("Hello, {name}!")),
    }
}

// --- asking on 2026-07-28: input_required results (SEP-2322) ----------------

/// What `test_input_required_result_request_state` and
/// `test_input_required_result_tampered_state` ask.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct OkAnswer {
    /// Confirmed?
    ok: bool,
}

/// A favourite colour.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Color {
    /// The colour
    color: String,
}

/// Asks the user's name (`user_name`), then greets them: one question, one
/// `input_required` round on 2026-07-28
#[tool]
pub async fn test_input_required_result_elicitation(ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = client(&ctx)?.with_key("user_name");
    Ok(match mcp.elicit_as::<Name>("What is your name?").await? {
        Some(Name { name }) => format!("Hello, {name}!"),
        None => "Hello, stranger!".into(),
    })
}

/// Asks the client's model the capital of France (`capital_question`)
#[tool]
pub async fn test_input_required_result_sampling(ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = client(&ctx)?.with_key("capital_question");
    let answer = mcp.sample("What is the capital of France?", 100).await?;
    Ok(format!("The model says: {answer}"))
}

/// Asks the client's roots (`client_roots`) and names them
#[tool]
pub async fn test_input_required_result_list_roots(ctx: ToolContext) -> Result<String, ToolError> {
    let roots = client(&ctx)?.with_key("client_roots").roots().await?;
    Ok(format!("Roots: {}", root_uris(&roots)))
}

/// Asks three questions at once, one round: the user's name (`user_name`),
/// a greeting from the client's model (`greeting`) and the client's roots
/// (`client_roots`)
#[tool]
pub async fn test_input_required_result_multiple_inputs(
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let mcp = client(&ctx)?;
    let (user, model, places) = (
        mcp.with_key("user_name"),
        mcp.with_key("greeting"),
        mcp.with_key("client_roots"),
    );
    let (name, greeting, roots) = tokio::join!(
        user.elicit_as::<Name>("What is your name?"),
        model.sample("Generate a greeting", 50),
        places.roots()
    );
    let name = name?.map_or_else(|| "stranger".to_owned(), |n| n.name);
    Ok(format!(
        "{} {name} (roots: {})",
        greeting?,
        root_uris(&roots?)
    ))
}

fn root_uris(roots: &[tool_mcp::Root]) -> String {
    let uris: Vec<&str> = roots.iter().map(|root| root.uri.as_str()).collect();
    uris.join(", ")
}

/// Asks for a confirmation (`confirm`); answered, says `state-ok` (the
/// answer came back with the round's requestState)
#[tool]
pub async fn test_input_required_result_request_state(
    ctx: ToolContext,
) -> Result<String, ToolError> {
    confirmed(&ctx).await
}

/// Asks for a confirmation; the requestState it returns is signed, so a
/// tampered one is refused (-32602) before the tool runs
#[tool]
pub async fn test_input_required_result_tampered_state(
    ctx: ToolContext,
) -> Result<String, ToolError> {
    confirmed(&ctx).await
}

async fn confirmed(ctx: &ToolContext) -> Result<String, ToolError> {
    let mcp = client(ctx)?.with_key("confirm");
    Ok(match mcp.elicit_as::<OkAnswer>("Please confirm").await? {
        Some(OkAnswer { ok: true }) => "state-ok: confirmed".into(),
        Some(OkAnswer { ok: false }) => "state-ok: not confirmed".into(),
        None => "state-ok: no answer".into(),
    })
}

/// Asks two questions, one round each (`step1`, then `step2`): the tool runs
/// again from the start on each retry, the first answer carried by the
/// requestState
#[tool]
pub async fn test_input_required_result_multi_round(ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = client(&ctx)?;
    let name = mcp
        .with_key("step1")
        .elicit_as::<Name>("Step 1: What is your name?")
        .await?
        .map_or_else(|| "someone".to_owned(), |n| n.name);
    let color = mcp
        .with_key("step2")
        .elicit_as::<Color>("Step 2: What is your favorite color?")
        .await?
        .map_or_else(|| "no colour".to_owned(), |c| c.color);
    Ok(format!("{name} likes {color}"))
}

/// Asks the user to go ahead and the client's model for a summary, at once,
/// as far as the client declared each: a client of sampling only gets the
/// sampling question alone
#[tool]
pub async fn test_input_required_result_capabilities(
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let mcp = client(&ctx)?;
    let go_ahead = mcp.with_key("go_ahead");
    let summary = mcp.with_key("summary");
    let (answer, model) = tokio::join!(
        go_ahead.elicit_as::<OkAnswer>("Go ahead?"),
        summary.sample("Summarize the plan in one line", 50)
    );
    match (answer, model) {
        (Err(user), Err(model)) => Err(ToolError::new(format!("{user}; {model}"))),
        (answer, model) => Ok(format!(
            "user: {}, model: {}",
            answer
                .ok()
                .flatten()
                .map_or("no answer", |a| if a.ok { "yes" } else { "no" }),
            model.as_deref().unwrap_or("no answer")
        )),
    }
}

// --- stateless server diagnostics (server-stateless, SEP-2575) --------------

/// Asks the client's model; a client that did not declare sampling is
/// refused with MissingRequiredClientCapability (-32021)
#[tool]
pub async fn test_missing_capability(ctx: ToolContext) -> Result<String, ToolError> {
    let answer = client(&ctx)?.sample("Say hello", 20).await?;
    Ok(format!("The model says: {answer}"))
}

/// Asks the user while it runs: on 2026-07-28 the response stream carries
/// the `input_required` result, never a request of the server's
#[tool]
pub async fn test_streaming_elicitation(ctx: ToolContext) -> Result<String, ToolError> {
    let answer = ask::<Name>(&ctx, "What is your name?".into()).await?;
    Ok(format!("User response: {answer}"))
}

/// Logs a message while it runs: a 2026-07-28 client that set no log level
/// gets no `notifications/message`
#[tool]
pub async fn test_logging_tool(ctx: ToolContext) -> String {
    ctx.observe().info("test_logging_tool ran");
    "Logged once".into()
}

// --- custom headers (SEP-2243) -----------------------------------------------

/// Where to run, mirrored in the `Mcp-Param-Region` header.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Placement {
    /// The region, also sent as the `Mcp-Param-Region` header
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// Echoes the region its client mirrored into the `Mcp-Param-Region`
/// header (checked against the body by the HTTP transport, SEP-2243)
#[tool]
pub async fn test_custom_header(placement: Placement) -> String {
    format!("Region: {}", placement.region)
}

// --- serving --------------------------------------------------------------

fn usage() -> ! {
    eprintln!("usage: mcp_conformance --http <addr>");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();

    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = match (args.next().as_deref(), args.next().map(|a| a.parse())) {
        (Some("--http"), Some(Ok(addr))) => addr,
        _ => usage(),
    };
    if args.next().is_some() {
        usage();
    }

    let runtime = Runtime::builder()
        .tool(TestSimpleTextTool)
        .tool(TestImageContentTool)
        .tool(TestAudioContentTool)
        .tool(TestEmbeddedResourceTool)
        .tool(TestMultipleContentTypesTool)
        .tool(TestErrorHandlingTool)
        .tool(TestToolWithLoggingTool)
        .tool(TestToolWithProgressTool)
        .tool(TestReconnectionTool)
        .tool(TestSamplingTool)
        .tool(TestElicitationTool)
        .tool(TestElicitationSep1034DefaultsTool)
        .tool(TestElicitationSep1330EnumsTool)
        .tool(JsonSchema202012ToolTool)
        .tool(GreetTool)
        .tool(SlowComputeTool)
        .tool(FailingJobTool)
        .tool(ProtocolErrorJobTool)
        .tool(ConfirmDeleteTool)
        .tool(MultiInputTool)
        .tool(TestToolWithTaskTool)
        .tool(TestInputRequiredResultElicitationTool)
        .tool(TestInputRequiredResultSamplingTool)
        .tool(TestInputRequiredResultListRootsTool)
        .tool(TestInputRequiredResultMultipleInputsTool)
        .tool(TestInputRequiredResultRequestStateTool)
        .tool(TestInputRequiredResultTamperedStateTool)
        .tool(TestInputRequiredResultMultiRoundTool)
        .tool(TestInputRequiredResultCapabilitiesTool)
        .tool(TestMissingCapabilityTool)
        .tool(TestStreamingElicitationTool)
        .tool(TestLoggingToolTool)
        .tool(TestCustomHeaderTool)
        .build()?;
    let server = McpServer::builder(runtime)
        .name("examples-mcp-conformance", env!("CARGO_PKG_VERSION"))
        .build();
    let http = server.serve_http(HttpOptions::new(addr)).await?;
    eprintln!("MCP endpoint: {}", http.url());
    http.wait().await?;
    Ok(())
}
