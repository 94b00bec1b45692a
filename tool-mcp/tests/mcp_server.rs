//! `McpServer` against a real MCP client (rmcp's), in process over a duplex
//! stream for both protocol eras, and over streamable HTTP with raw requests.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    ClientConfig, ClientRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProtocolVersion,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceError, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tool_core::{CallContext, ContentPart, ModelOutput, Tool, ToolContext, ToolError, tool};
use tool_mcp::{
    ElicitFuture, Elicitation, Elicitor, HttpOptions, McpContext, McpServer, McpToolContext as _,
    PENDING_META,
};
use tool_runtime::{EventKind, Runtime};

// --- tools -------------------------------------------------------------------

/// Where.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct WeatherInput {
    /// City name or coordinates
    location: String,
}

/// The weather.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Weather {
    location: String,
    temperature_celsius: f64,
}

fn weather_meta() -> Value {
    json!({ "ui/icon": "sun" })
}

/// Get the current weather for a location
#[tool(
    id = "weather-tool",
    strict,
    mcp(title = "Weather Lookup", read_only, destructive = false, idempotent, open_world, meta = weather_meta)
)]
pub async fn weather(WeatherInput { location }: WeatherInput) -> Result<Weather, ToolError> {
    if location == "Atlantis" {
        return Err(ToolError::new("Atlantis has no weather station"));
    }
    if location == "Crash" {
        panic!("the weather station exploded");
    }
    Ok(Weather {
        location,
        temperature_celsius: 21.0,
    })
}

/// Count the letters of a word
#[tool(title = "Letter Counter")]
pub async fn letters(word: String) -> usize {
    word.chars().count()
}

fn chart(_output: &String) -> ModelOutput {
    ModelOutput::Content(vec![
        ContentPart::text("the chart"),
        ContentPart::ImageData {
            data: "iVBORw0KGgo=".into(),
            media_type: "image/png".into(),
        },
    ])
}

/// Draw a chart
#[tool(to_model_output = chart)]
pub async fn draw(title: String) -> String {
    format!("chart of {title}")
}

/// Count to `steps`, reporting progress
#[tool]
pub async fn count(steps: u32, ctx: ToolContext) -> u32 {
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(2)).await;
        ctx.progress(f64::from(step), Some(f64::from(steps)), Some("counting"));
    }
    steps
}

static SLEEPER_ABORTED: AtomicBool = AtomicBool::new(false);

/// Waits until aborted
#[tool]
pub async fn sleeper(ctx: ToolContext) -> Result<(), ToolError> {
    ctx.abort_signal().aborted().await;
    SLEEPER_ABORTED.store(true, Ordering::SeqCst);
    Ok(())
}

/// Delete a file
#[tool(
    id = "delete-file",
    require_approval,
    mcp(title = "Delete File", destructive)
)]
pub async fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

/// What the booking tool asks.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Quote {
    question: String,
    price_eur: u32,
}

/// The user's answer.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Answer {
    /// Book it?
    confirmed: bool,
    /// Number of seats
    #[schemars(range(min = 1))]
    seats: u32,
}

/// What `book-flight` and `book-later` do: ask for a confirmation of the
/// price, then book with the answer.
fn book_once_confirmed(
    flight: String,
    ctx: &ToolContext<Quote, Answer>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Quote {
            question: format!("Book {flight} for 249 EUR?"),
            price_eur: 249,
        }),
        Some(Answer {
            confirmed: true,
            seats,
        }) => Ok(format!("booked {seats} seat(s) on {flight}")),
        Some(Answer {
            confirmed: false, ..
        }) => Ok("not booked".into()),
    }
}

/// Book a flight after the user confirms the price
#[tool(id = "book-flight")]
pub async fn book_flight(
    flight: String,
    ctx: ToolContext<Quote, Answer>,
) -> Result<String, ToolError> {
    book_once_confirmed(flight, &ctx)
}

/// A resume schema no form can ask for.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Nested {
    inner: Inner,
}

/// Its nested part.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Inner {
    value: String,
}

/// Suspends with a resume schema no form can ask for
#[tool(id = "deep-ask")]
pub async fn deep_ask(ctx: ToolContext<String, Nested>) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend("Which value?".to_owned()),
        Some(nested) => Ok(nested.inner.value.clone()),
    }
}

/// A seat.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct SeatChoice {
    /// Seat, e.g. 12A
    seat: String,
    /// A window seat?
    window: bool,
}

/// Asks the user for a seat while it runs
#[tool(id = "pick-seat")]
pub async fn pick_seat(flight: String, ctx: ToolContext) -> Result<String, ToolError> {
    let Some(mcp) = ctx.mcp() else {
        return Ok(format!("{flight}: nobody to ask, seat unassigned"));
    };
    Ok(
        match mcp
            .elicit_as::<SeatChoice>(format!("Which seat on {flight}?"))
            .await?
        {
            Some(SeatChoice { seat, window }) => {
                format!(
                    "{flight}: seat {seat} ({})",
                    if window { "window" } else { "aisle" }
                )
            }
            None => format!("{flight}: the user did not pick a seat"),
        },
    )
}

fn runtime() -> Runtime {
    Runtime::builder()
        .tool(WeatherTool)
        .tool(LettersTool)
        .tool(DrawTool)
        .tool(CountTool)
        .tool(SleeperTool)
        .tool(DeleteFileTool)
        .tool(BookFlightTool)
        .tool(DeepAskTool)
        .tool(PickSeatTool)
        .build()
        .unwrap()
}

// --- a test client -------------------------------------------------------------

type Answerer = Arc<dyn Fn(&str, &Value) -> ElicitResult + Send + Sync>;

/// An MCP client that records progress and answers elicitations with `answer`
/// (and declares no elicitation support without one).
#[derive(Clone, Default)]
struct TestClient {
    answer: Option<Answerer>,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    logged: Arc<Mutex<Vec<(String, String, Value)>>>,
    /// Declares the tasks extension.
    tasks: bool,
    /// Declares sampling, and answers each prompt with "echo: <prompt>".
    sampling: bool,
}

impl TestClient {
    fn answering(answer: impl Fn(&str, &Value) -> ElicitResult + Send + Sync + 'static) -> Self {
        TestClient {
            answer: Some(Arc::new(answer)),
            ..TestClient::default()
        }
    }
}

impl ClientHandler for TestClient {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap();
        self.asked
            .lock()
            .unwrap()
            .push((message.clone(), schema.clone()));
        let answer = self
            .answer
            .as_ref()
            .expect("elicitation without an answerer");
        Ok(answer(&message, &schema))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    #[allow(deprecated, reason = "MCP sampling (SEP-2577 deprecates it)")]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let prompt: String = params.messages[0]
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        assert_eq!(params.max_tokens, 50);
        let answer = rmcp::model::SamplingMessage::assistant_text(format!("echo: {prompt}"));
        Ok(rmcp::model::CreateMessageResult::new(
            answer,
            "test-model".into(),
        ))
    }

    #[allow(deprecated, reason = "MCP logging (SEP-2577 deprecates it)")]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level).unwrap();
        self.logged.lock().unwrap().push((
            level.as_str().unwrap().to_owned(),
            params.logger.unwrap_or_default(),
            params.data,
        ));
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.tasks {
            capabilities = ClientCapabilities::builder().enable_tasks().build();
        }
        if self.sampling {
            capabilities.sampling = Some(Default::default());
        }
        if self.answer.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        }
        ClientConfig::new(capabilities, Implementation::new("test-client", "0.1.0"))
    }
}

type Client = RunningService<RoleClient, TestClient>;

/// Serves `runtime` and connects `client` with the `initialize` handshake
/// (protocol 2025-11-25), or with `server/discover` (2026-07-28).
async fn connect(runtime: Runtime, client: TestClient, modern: bool) -> Client {
    connect_to(McpServer::new(runtime), client, modern).await
}

async fn connect_to(server: McpServer, client: TestClient, modern: bool) -> Client {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    tokio::spawn(server.serve(server_end));
    if modern {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        client
            .serve_with_lifecycle(client_end, lifecycle)
            .await
            .unwrap()
    } else {
        client.serve(client_end).await.unwrap()
    }
}

async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn accept(content: Value) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

// --- tools/list ------------------------------------------------------------------

#[tokio::test]
async fn tools_list_carries_declarations() {
    let client = connect(runtime(), TestClient::default(), false).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "weather-tool",
            "letters",
            "draw",
            "count",
            "sleeper",
            "delete-file",
            "book-flight",
            "deep-ask",
            "pick-seat"
        ]
    );
    let weather = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(weather["title"], "Weather Lookup");
    assert_eq!(
        weather["description"],
        "Get the current weather for a location"
    );
    assert_eq!(
        weather["annotations"],
        json!({
            "title": "Weather Lookup",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": true
        })
    );
    assert_eq!(
        weather["_meta"],
        json!({ "ui/icon": "sun", "strict": true })
    );
    assert_eq!(weather["inputSchema"]["required"], json!(["location"]));
    assert_eq!(weather["outputSchema"]["type"], "object");
    assert_eq!(
        weather["outputSchema"]["required"],
        json!(["location", "temperatureCelsius"])
    );

    // The tool's own title wins; no annotations declared, none sent.
    let letters = serde_json::to_value(&tools[1]).unwrap();
    assert_eq!(letters["title"], "Letter Counter");
    assert!(letters.get("annotations").is_none());
    assert_eq!(letters["_meta"], json!({ "strict": false }));
    // A non-object output schema is wrapped: MCP wants an object root.
    assert_eq!(letters["outputSchema"]["type"], "object");
    assert_eq!(letters["outputSchema"]["required"], json!(["result"]));
    assert_eq!(
        letters["outputSchema"]["properties"]["result"]["type"],
        "integer"
    );

    // No output schema at all for `()` output.
    let sleeper = serde_json::to_value(&tools[4]).unwrap();
    assert!(sleeper.get("outputSchema").is_none());
}

/// What to locate: one of several shapes.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Target {
    City { name: String },
    Coords { lat: f64, lon: f64 },
}

/// Locate a target
#[tool]
async fn locate(
    /// What to locate
    target: Target,
) -> String {
    match target {
        Target::City { name } => name,
        Target::Coords { lat, lon } => format!("{lat},{lon}"),
    }
}

#[tokio::test]
async fn a_tool_whose_one_parameter_is_an_enum_gets_an_object_input_schema() {
    for modern in [false, true] {
        let runtime = Runtime::builder().tool(LocateTool).build().unwrap();
        let client = connect(runtime, TestClient::default(), modern).await;
        let tools = client.list_all_tools().await.unwrap();
        let schema = Value::Object((*tools[0].input_schema).clone());
        assert_eq!(schema["type"], "object", "{schema}");
        assert_eq!(schema["required"], json!(["target"]), "{schema}");
        assert_eq!(
            schema["properties"]["target"]["description"],
            "What to locate"
        );
        let located = call(
            &client,
            "locate",
            json!({ "target": { "kind": "city", "name": "Oslo" } }),
        )
        .await
        .unwrap();
        assert_eq!(text(&located), "Oslo");
        let wrong = call(
            &client,
            "locate",
            json!({ "target": { "kind": "coords", "lat": 1.0 } }),
        )
        .await
        .unwrap();
        assert_eq!(wrong.is_error, Some(true));
        assert!(
            text(&wrong).contains("- target.lon: Required"),
            "{}",
            text(&wrong)
        );
    }
}

// --- tools/call --------------------------------------------------------------------

/// The MCP issue: peers of 2026-07-28 get non-object output schemas as
/// declared; older peers keep the `{"result": ...}` wrapper.
#[tokio::test]
async fn output_schemas_are_wrapped_for_older_peers_only() {
    for modern in [false, true] {
        let client = connect(runtime(), TestClient::default(), modern).await;
        let tools = client.list_all_tools().await.unwrap();
        let letters = tools.iter().find(|t| t.name == "letters").unwrap();
        let schema = Value::Object((**letters.output_schema.as_ref().unwrap()).clone());
        let integer = |s: &Value| s["type"] == "integer";
        if modern {
            assert!(integer(&schema), "as declared: {schema}");
        } else {
            assert_eq!(schema["type"], "object");
            assert!(
                integer(&schema["properties"]["result"]),
                "wrapped: {schema}"
            );
        }
        // Object roots are the same for both.
        let weather = tools.iter().find(|t| t.name == "weather-tool").unwrap();
        assert_eq!(weather.output_schema.as_ref().unwrap()["type"], "object");
        // Input schemas name their dialect, MCP's default.
        assert_eq!(
            weather.input_schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }
}

#[tokio::test]
async fn calls_return_structured_content_and_text() {
    for modern in [false, true] {
        let client = connect(runtime(), TestClient::default(), modern).await;
        let result = call(&client, "weather-tool", json!({ "location": "Paris" }))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false));
        let expected = json!({ "location": "Paris", "temperatureCelsius": 21.0 });
        assert_eq!(result.structured_content, Some(expected.clone()));
        assert_eq!(
            serde_json::from_str::<Value>(&text(&result)).unwrap(),
            expected
        );

        // Wrapped like its schema (before 2026-07-28, whose peers take
        // any schema root); the text is the value itself.
        let result = call(&client, "letters", json!({ "word": "hello" }))
            .await
            .unwrap();
        let structured = if modern {
            json!(5)
        } else {
            json!({ "result": 5 })
        };
        assert_eq!(
            result.structured_content,
            Some(structured),
            "modern: {modern}"
        );
        assert_eq!(text(&result), "5");

        // to_model_output: text and image content; the output stays structured.
        let result = call(&client, "draw", json!({ "title": "sales" }))
            .await
            .unwrap();
        let chart = json!("chart of sales");
        let structured = if modern {
            chart
        } else {
            json!({ "result": chart })
        };
        assert_eq!(result.structured_content, Some(structured));
        assert_eq!(
            serde_json::to_value(&result.content).unwrap(),
            json!([
                { "type": "text", "text": "the chart" },
                { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }
            ])
        );
    }
}

#[tokio::test]
async fn failures_are_error_results_naming_the_problem() {
    let client = connect(runtime(), TestClient::default(), false).await;

    let missing = call(&client, "weather-tool", json!({})).await.unwrap();
    assert_eq!(missing.is_error, Some(true));
    assert!(missing.structured_content.is_none());
    let message = text(&missing);
    assert!(
        message.starts_with("Tool input validation failed for weather-tool."),
        "{message}"
    );
    assert!(message.contains("- location: Required"), "{message}");

    let wrong = call(&client, "weather-tool", json!({ "location": 42 }))
        .await
        .unwrap();
    assert_eq!(wrong.is_error, Some(true));
    assert!(text(&wrong).contains("location"), "{}", text(&wrong));

    let failed = call(&client, "weather-tool", json!({ "location": "Atlantis" }))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(text(&failed), "Atlantis has no weather station");

    let panicked = call(&client, "weather-tool", json!({ "location": "Crash" }))
        .await
        .unwrap();
    assert_eq!(panicked.is_error, Some(true));
    assert!(text(&panicked).contains("the weather station exploded"));

    // An unknown tool is a protocol error (invalid params), not a result.
    let unknown = call(&client, "no-such-tool", json!({})).await.unwrap_err();
    let ServiceError::McpError(error) = unknown else {
        panic!("expected a JSON-RPC error, got {unknown:?}")
    };
    assert_eq!(error.code.0, -32602);
    assert!(
        error
            .message
            .starts_with("Tool \"no-such-tool\" not found. Available tools: weather-tool")
    );

    // The server keeps serving.
    let ok = call(&client, "weather-tool", json!({ "location": "Oslo" }))
        .await
        .unwrap();
    assert_eq!(ok.is_error, Some(false));
}

#[tokio::test]
async fn progress_reaches_the_client() {
    for modern in [false, true] {
        let client_handler = TestClient::default();
        let progress = Arc::clone(&client_handler.progress);
        let client = connect(runtime(), client_handler, modern).await;
        let result = call(&client, "count", json!({ "steps": 5 })).await.unwrap();
        let structured = if modern {
            json!(5)
        } else {
            json!({ "result": 5 })
        };
        assert_eq!(result.structured_content, Some(structured));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let seen: Vec<(f64, Option<f64>)> = progress
            .lock()
            .unwrap()
            .iter()
            .map(|p| (p.progress, p.total))
            .collect();
        assert_eq!(
            seen,
            (1..=5)
                .map(|i| (f64::from(i), Some(5.0)))
                .collect::<Vec<_>>(),
            "modern: {modern}"
        );
    }
}

#[tokio::test]
async fn concurrent_calls_each_get_their_own_progress_only() {
    let client_handler = TestClient::default();
    let progress = Arc::clone(&client_handler.progress);
    let client = connect(runtime(), client_handler, false).await;
    let (three, six) = tokio::join!(
        call(&client, "count", json!({ "steps": 3 })),
        call(&client, "count", json!({ "steps": 6 })),
    );
    assert_eq!(
        three.unwrap().structured_content,
        Some(json!({ "result": 3 }))
    );
    assert_eq!(
        six.unwrap().structured_content,
        Some(json!({ "result": 6 }))
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut by_token: HashMap<String, Vec<(f64, Option<f64>)>> = HashMap::new();
    for p in progress.lock().unwrap().iter() {
        by_token
            .entry(format!("{:?}", p.progress_token))
            .or_default()
            .push((p.progress, p.total));
    }
    let mut seen: Vec<_> = by_token.into_values().collect();
    seen.sort_by_key(Vec::len);
    let expected = |steps: u32| {
        (1..=steps)
            .map(|i| (f64::from(i), Some(f64::from(steps))))
            .collect::<Vec<_>>()
    };
    assert_eq!(seen, [expected(3), expected(6)], "one sequence per request");
}

/// Logs at two levels through `ctx.observe()` and through `tracing`
#[tool]
pub async fn chatty(ctx: ToolContext) -> &'static str {
    ctx.observe().debug("observed debug");
    ctx.observe().info("observed info");
    tracing::warn!(disk = 93, "traced warning");
    tracing::debug!("traced debug");
    "done"
}

/// The issue's logging point: `observe()` logs and `tracing` events inside
/// a call reach the client as `notifications/message`, at the level the
/// client set (info until it sets one), once each; peers of the 2026-07-28
/// protocol (which has no logging) get none.
#[tokio::test]
async fn a_calls_logs_reach_the_client_at_the_level_it_set() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let runtime = Runtime::builder().tool(ChattyTool).build().unwrap();
    // This test runs on one thread: the layer sees every event of the call.
    // Callsite interest is cached globally; while this test's subscriber is
    // the only one, tracing computes the interest of a callsite first hit
    // on another thread (a test running beside this one) from that thread's
    // subscriber alone: none, so the call's spans would stay disabled here
    // too. With the global one as well, every subscriber has its say.
    let _ = logs();
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(runtime.log_layer()));
    for modern in [false, true] {
        let handler = TestClient::default();
        let logged = Arc::clone(&handler.logged);
        let client = connect(runtime.clone(), handler, modern).await;
        call(&client, "chatty", json!({})).await.unwrap();
        // Notifications are handled as they arrive: wait for those expected.
        let arrived = |n: usize| {
            let logged = &logged;
            async move {
                let _ = eventually(100, |_| async move {
                    (logged.lock().unwrap().len() >= n).then_some(()).ok_or(())
                })
                .await;
            }
        };
        arrived(if modern { 1 } else { 2 }).await;
        let seen = || {
            let mut seen = logged.lock().unwrap().clone();
            seen.sort_by_key(|(level, logger, data)| {
                (level.clone(), logger.clone(), data.to_string())
            });
            std::mem::take(&mut *logged.lock().unwrap());
            seen
        };
        if modern {
            assert!(seen().is_empty(), "no logging in 2026-07-28");
            continue;
        }
        assert_eq!(
            seen(),
            [
                (
                    "info".to_owned(),
                    "chatty".to_owned(),
                    json!("observed info")
                ),
                (
                    "warning".to_owned(),
                    "chatty".to_owned(),
                    json!("traced warning disk=93")
                ),
            ]
        );
        #[allow(deprecated, reason = "MCP logging (SEP-2577 deprecates it)")]
        client
            .set_level(rmcp::model::SetLevelRequestParams::new(
                rmcp::model::LoggingLevel::Debug,
            ))
            .await
            .unwrap();
        call(&client, "chatty", json!({})).await.unwrap();
        arrived(4).await;
        let levels: Vec<String> = seen()
            .into_iter()
            .map(|(level, _, data)| format!("{level} {data}"))
            .collect();
        assert_eq!(
            levels,
            [
                r#"debug "observed debug""#,
                r#"debug "traced debug""#,
                r#"info "observed info""#,
                r#"warning "traced warning disk=93""#,
            ]
        );
    }
}

/// Asks the client's model
#[tool]
pub async fn ask_model(question: String, ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = ctx.mcp().ok_or_else(|| ToolError::new("no MCP client"))?;
    mcp.sample(question, 50).await
}

/// The MCP issue's conformance point (tools-call-sampling): a tool asks the
/// client's model through `ctx.mcp().sample(..)` when the client declares
/// sampling; otherwise it learns that it cannot.
#[tokio::test]
async fn a_tool_asks_the_clients_model_when_the_client_declares_sampling() {
    let runtime = || Runtime::builder().tool(AskModelTool).build().unwrap();
    let client = connect(
        runtime(),
        TestClient {
            sampling: true,
            ..TestClient::default()
        },
        false,
    )
    .await;
    let result = call(&client, "ask_model", json!({ "question": "ready?" }))
        .await
        .unwrap();
    assert_eq!(text(&result), "echo: ready?", "{result:?}");
    let without = connect(runtime(), TestClient::default(), false).await;
    let result = call(&without, "ask_model", json!({ "question": "ready?" }))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{result:?}");
}

/// Builds a report in the background (waits until `REPORT_GATE` opens)
#[tool(background(timeout_ms = 10_000))]
pub async fn report(pages: u32) -> Result<u32, ToolError> {
    while !REPORT_GATE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(pages * 10)
}

static REPORT_GATE: AtomicBool = AtomicBool::new(false);

/// The MCP issue's tasks point: for a client that declares the tasks
/// extension, a background tool's call is a task at once; `tasks/get` says
/// it works, then gives the call's result; another server on the same store
/// answers for it too. Without the extension the request waits, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tools_are_mcp_tasks_for_clients_that_declare_the_extension() {
    use rmcp::model::{GetTaskParams, TaskPayload, TaskStatus};
    let store = Arc::new(tool_runtime::store::MemoryStore::new());
    let runtime = || {
        Runtime::builder()
            .tool(ReportTool)
            .store(Arc::clone(&store))
            .build()
            .unwrap()
    };
    for modern in [false, true] {
        REPORT_GATE.store(false, Ordering::SeqCst);
        let client = connect(
            runtime(),
            TestClient {
                tasks: true,
                ..TestClient::default()
            },
            modern,
        )
        .await;
        let params = CallToolRequestParams::new("report")
            .with_arguments(json!({ "pages": 3 }).as_object().unwrap().clone());
        let CallToolResponse::Task(created) = client.call_tool_once(params).await.unwrap() else {
            panic!("a task handle")
        };
        let task_id = created.task.task_id.clone();
        assert_eq!(created.task.status, TaskStatus::Working);
        assert!(created.task.created_at.ends_with('Z'), "{:?}", created.task);
        let working = client.get_task(GetTaskParams::new(&task_id)).await.unwrap();
        assert_eq!(working.task.status(), TaskStatus::Working);

        REPORT_GATE.store(true, Ordering::SeqCst);
        // Another server (instance) on the same store answers for the task.
        let elsewhere = connect(
            runtime(),
            TestClient {
                tasks: true,
                ..TestClient::default()
            },
            modern,
        )
        .await;
        let (elsewhere, task_id) = (&elsewhere, &task_id);
        let done = eventually(1000, |_| async move {
            let got = elsewhere
                .get_task(GetTaskParams::new(task_id))
                .await
                .unwrap();
            (got.task.status() == TaskStatus::Completed)
                .then_some(got)
                .ok_or(())
        })
        .await
        .expect("the task completed");
        let TaskPayload::Completed { result } = &done.task.payload else {
            panic!("{done:?}")
        };
        let structured = if modern {
            json!(30)
        } else {
            json!({ "result": 30 })
        };
        assert_eq!(result["structuredContent"], structured, "modern: {modern}");
        assert_eq!(result["isError"], false);

        let unknown = client.get_task(GetTaskParams::new("mcp-0-nope")).await;
        assert!(unknown.is_err(), "{unknown:?}");

        // Without the extension: the request waits for the result.
        let plain = connect(runtime(), TestClient::default(), modern).await;
        let waited = call(&plain, "report", json!({ "pages": 1 })).await.unwrap();
        assert_eq!(
            waited.structured_content,
            Some(if modern {
                json!(10)
            } else {
                json!({ "result": 10 })
            })
        );
    }
}

/// Panics in the background (a crash, not a tool's error)
#[tool(background)]
pub async fn crashing_job() -> u32 {
    panic!("crashing_job crashes")
}

/// Fails in the background (the tool's own error)
#[tool(background)]
pub async fn failing_job() -> Result<u32, ToolError> {
    Err(ToolError::new("the job failed"))
}

/// Calls `probe` with the attempt's number (from 0) every 10 ms until it
/// succeeds, `tries` times at most; its last failure when it never did.
async fn eventually<T, E, F>(tries: u32, mut probe: impl FnMut(u32) -> F) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    let mut attempt = 0;
    loop {
        match probe(attempt).await {
            Ok(value) => return Ok(value),
            Err(last) if attempt + 1 >= tries => return Err(last),
            Err(_) => attempt += 1,
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Polls `tasks/get` until the task leaves `working`.
async fn settled(client: &Client, task_id: &str) -> rmcp::model::DetailedTask {
    use rmcp::model::{GetTaskParams, TaskStatus};
    eventually(500, |_| async move {
        let got = client.get_task(GetTaskParams::new(task_id)).await.unwrap();
        (got.task.status() != TaskStatus::Working)
            .then_some(got.task)
            .ok_or(())
    })
    .await
    .unwrap_or_else(|()| panic!("task {task_id} did not settle"))
}

/// SEP-2663's error semantics: a tool that reports an error completes with
/// an `isError` result; a tool that crashed (a panic: an internal error,
/// not the tool's answer) fails, with a JSON-RPC error and no result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_tool_panics_fails_and_one_whose_tool_errs_completes_with_is_error() {
    use rmcp::model::TaskPayload;
    let runtime = Runtime::builder()
        .tool(CrashingJobTool)
        .tool(FailingJobTool)
        .build()
        .unwrap();
    for modern in [false, true] {
        let client = connect(
            runtime.clone(),
            TestClient {
                tasks: true,
                ..TestClient::default()
            },
            modern,
        )
        .await;
        let start = |name: &'static str| {
            let client = &client;
            async move {
                let params = CallToolRequestParams::new(name);
                let CallToolResponse::Task(created) = client.call_tool_once(params).await.unwrap()
                else {
                    panic!("a task handle for {name}")
                };
                created.task.task_id
            }
        };
        let crashed = settled(&client, &start("crashing_job").await).await;
        let TaskPayload::Failed { error } = &crashed.payload else {
            panic!("a failed task: {crashed:?}")
        };
        assert_eq!(error["code"], -32603, "{error:?}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("crashing_job crashes"),
            "{error:?}"
        );
        let value = serde_json::to_value(&crashed).unwrap();
        assert_eq!(value["status"], "failed");
        assert!(value.get("result").is_none(), "{value}");

        let errored = settled(&client, &start("failing_job").await).await;
        let TaskPayload::Completed { result } = &errored.payload else {
            panic!("a completed task: {errored:?}")
        };
        assert_eq!(result["isError"], true, "{result:?}");
    }
}

/// SEP-2663's `ttlMs`: how long from its creation a task stays readable.
/// The store keeps a settled call for the runtime's settled retention, so
/// a task lives at least that long past its last update: `ttlMs` says so,
/// rather than `null` (unlimited), which the store's purge would belie.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_says_how_long_it_stays_readable() {
    let retention = Duration::from_secs(3_600);
    let runtime = Runtime::builder()
        .tool(FailingJobTool)
        .settled_retention(retention)
        .build()
        .unwrap();
    let client = connect(
        runtime,
        TestClient {
            tasks: true,
            ..TestClient::default()
        },
        true,
    )
    .await;
    let before = std::time::Instant::now();
    let params = CallToolRequestParams::new("failing_job");
    let CallToolResponse::Task(created) = client.call_tool_once(params).await.unwrap() else {
        panic!("a task handle")
    };
    // Counted from the task's creation: the handle, made a moment later,
    // says the retention plus that moment.
    let handed = u64::try_from(before.elapsed().as_millis()).unwrap();
    let wire = serde_json::to_value(&created).unwrap();
    let ttl = wire["ttlMs"].as_u64().expect("a ttlMs");
    assert!(
        (3_600_000..=3_600_000 + handed + 1).contains(&ttl),
        "{wire}"
    );
    let done = settled(&client, &created.task.task_id).await;
    let elapsed = u64::try_from(before.elapsed().as_millis()).unwrap();
    let ttl = done.task.ttl_ms.expect("a ttlMs");
    assert!(
        (3_600_000..=3_600_000 + elapsed + 1).contains(&ttl),
        "{ttl} after {elapsed} ms"
    );
}

/// Builds an archive, served only as an MCP task
#[tool(background, mcp(task_required))]
pub async fn archive() -> &'static str {
    "archived"
}

/// The MCP issue's tasks point (tasks-required-task-error): a tool served
/// only as a task refuses a client without the tasks extension with
/// -32021, naming the extension; a client with it gets a task.
#[tokio::test]
async fn a_task_only_tool_refuses_clients_without_the_tasks_extension() {
    let runtime = || Runtime::builder().tool(ArchiveTool).build().unwrap();
    let plain = connect(runtime(), TestClient::default(), false).await;
    let refused = call(&plain, "archive", json!({})).await.unwrap_err();
    let ServiceError::McpError(error) = refused else {
        panic!("a JSON-RPC error: {refused:?}")
    };
    assert_eq!(error.code.0, -32021, "{error:?}");
    let data = error.data.expect("the required capabilities");
    assert!(
        data["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{data}"
    );
    let tasks = connect(
        runtime(),
        TestClient {
            tasks: true,
            ..TestClient::default()
        },
        false,
    )
    .await;
    let response = tasks
        .call_tool_once(CallToolRequestParams::new("archive"))
        .await
        .unwrap();
    assert!(
        matches!(response, CallToolResponse::Task(_)),
        "{response:?}"
    );
}

// --- tasks that ask their client (SEP-2663 in-task input) ------------------------

/// Books a flight in the background, after the user confirms the price
/// (suspends: the question is stored)
#[tool(background, id = "book-later")]
pub async fn book_later(
    flight: String,
    ctx: ToolContext<Quote, Answer>,
) -> Result<String, ToolError> {
    book_once_confirmed(flight, &ctx)
}

/// An accepted form with `content`, as `inputResponses` carry it.
fn accepted(content: Value) -> Value {
    serde_json::to_value(accept(content)).unwrap()
}

/// A tasks client that shows forms (it declares elicitation) and records
/// any elicitation request sent to it: a task's questions must go in the
/// task instead.
fn task_client() -> TestClient {
    TestClient {
        tasks: true,
        ..TestClient::answering(|_, _| ElicitResult::new(ElicitationAction::Decline))
    }
}

/// Starts `tool` with `arguments` as a task: its id.
async fn start_task(client: &Client, tool: &str, arguments: Value) -> String {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone());
    let response = client.call_tool_once(params).await.unwrap();
    let CallToolResponse::Task(created) = response else {
        panic!("a task handle for {tool}: {response:?}")
    };
    created.task.task_id
}

/// Polls `tasks/get` until the task is `input_required` with at least
/// `questions` questions; its questions, as JSON.
async fn questions(
    client: &Client,
    task_id: &str,
    questions: usize,
) -> serde_json::Map<String, Value> {
    use rmcp::model::{GetTaskParams, TaskPayload};
    eventually(500, |_| async move {
        let got = client.get_task(GetTaskParams::new(task_id)).await.unwrap();
        match &got.task.payload {
            TaskPayload::InputRequired { input_requests } if input_requests.len() >= questions => {
                let Value::Object(asked) = serde_json::to_value(input_requests).unwrap() else {
                    panic!("a map")
                };
                Ok(asked)
            }
            _ => Err(()),
        }
    })
    .await
    .unwrap_or_else(|()| panic!("task {task_id} did not ask {questions} question(s)"))
}

/// The JSON-RPC error code and message of a refused request.
fn refusal<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> (i32, String) {
    match result {
        Err(ServiceError::McpError(error)) => (error.code.0, error.message.to_string()),
        other => panic!("a JSON-RPC error: {other:?}"),
    }
}

/// The MCP issue's in-task input (tasks-mrtr-input), the durable way: a
/// background tool that suspends is an `input_required` task whose question
/// (its resume form) any instance sharing the store shows, and whose answer
/// any instance takes (`tasks/update`): the call resumes and the task
/// completes with the tool's result. Resume data the schema rejects, or an
/// answer of the wrong shape, is refused saying why, the question staying;
/// keys no question has are ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_task_asks_through_tasks_get_and_resumes_with_tasks_update() {
    use rmcp::model::{TaskPayload, UpdateTaskParams};
    let store = Arc::new(tool_runtime::store::MemoryStore::new());
    let runtime = || {
        Runtime::builder()
            .tool(BookLaterTool)
            .store(Arc::clone(&store))
            .build()
            .unwrap()
    };
    for modern in [false, true] {
        let handler = task_client();
        let sent = Arc::clone(&handler.asked);
        let client = connect(runtime(), handler, modern).await;
        let task_id = start_task(&client, "book-later", json!({ "flight": "AF123" })).await;

        // Another instance on the same store shows the stored question.
        let elsewhere = connect(runtime(), task_client(), modern).await;
        let asked = questions(&elsewhere, &task_id, 1).await;
        assert_eq!(asked.len(), 1, "{asked:?}");
        let key = asked.keys().next().unwrap().clone();
        assert!(key.starts_with("resume-"), "{key}");
        // Both instances name it alike (it comes from the store).
        let here = questions(&client, &task_id, 1).await;
        assert_eq!(here.keys().collect::<Vec<_>>(), [&key]);
        let question = &asked[&key];
        assert_eq!(question["method"], "elicitation/create", "{question}");
        let message: Value =
            serde_json::from_str(question["params"]["message"].as_str().unwrap()).unwrap();
        assert_eq!(message["question"], "Book AF123 for 249 EUR?");
        let schema = &question["params"]["requestedSchema"];
        assert_eq!(schema["properties"]["seats"]["minimum"], 1, "{schema}");
        assert!(
            sent.lock().unwrap().is_empty(),
            "no elicitation request: the task asks"
        );

        let update = |answer: Value| {
            let elsewhere = &elsewhere;
            let task_id = task_id.clone();
            let answers = [(key.clone(), answer)].into();
            async move {
                elsewhere
                    .update_task(UpdateTaskParams::new(task_id, answers))
                    .await
            }
        };
        // Not an elicitation result: refused, naming the key.
        let (code, message) = refusal(update(json!("yes please")).await);
        assert_eq!(code, -32602, "{message}");
        assert!(
            message.contains(&format!("{key:?}")) && message.contains("elicitation result"),
            "{message}"
        );
        // Resume data the resume schema rejects (seats >= 1): refused, saying why.
        let (code, message) = refusal(
            update(json!({ "action": "accept", "content": { "confirmed": true, "seats": 0 } }))
                .await,
        );
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains("seats"), "{message}");
        assert!(message.len() < 1_000, "bounded: {message}");
        // A key no question has: ignored (acked); the question stays.
        elsewhere
            .update_task(UpdateTaskParams::new(
                task_id.clone(),
                [("nope".to_owned(), json!({ "action": "accept" }))].into(),
            ))
            .await
            .unwrap();
        let still = questions(&client, &task_id, 1).await;
        assert_eq!(still.keys().collect::<Vec<_>>(), [&key]);

        update(json!({ "action": "accept", "content": { "confirmed": true, "seats": 2 } }))
            .await
            .unwrap();
        let done = settled(&client, &task_id).await;
        let TaskPayload::Completed { result } = &done.payload else {
            panic!("a completed task: {done:?}")
        };
        assert_eq!(
            result["content"][0]["text"], "booked 2 seat(s) on AF123",
            "{result:?}"
        );
        assert_eq!(result["isError"], false);
    }
}

/// Asks the user for two seats at once while it runs
#[tool(background, id = "two-seats")]
pub async fn two_seats(flight: String, ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = ctx.mcp().ok_or_else(|| ToolError::new("nobody to ask"))?;
    let (first, second) = tokio::join!(
        mcp.elicit_as::<SeatChoice>(format!("First seat on {flight}?")),
        mcp.elicit_as::<SeatChoice>(format!("Second seat on {flight}?"))
    );
    let seat = |choice: Option<SeatChoice>| choice.map_or_else(|| "none".to_owned(), |c| c.seat);
    Ok(format!("{flight}: {} and {}", seat(first?), seat(second?)))
}

/// The MCP issue's in-task input, the tool asking while it runs (the
/// partial fulfillment of tasks-mrtr-input): two questions open at once,
/// each with a key of its own; an answer of the wrong shape is refused and
/// delivers nothing; each answer closes its question; the task completes
/// with the answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_task_asks_several_questions_and_each_answer_closes_its_own() {
    use rmcp::model::{TaskPayload, UpdateTaskParams};
    let runtime = Runtime::builder().tool(TwoSeatsTool).build().unwrap();
    for modern in [false, true] {
        let handler = task_client();
        let sent = Arc::clone(&handler.asked);
        let client = connect(runtime.clone(), handler, modern).await;
        let task_id = start_task(&client, "two-seats", json!({ "flight": "AF123" })).await;
        let asked = questions(&client, &task_id, 2).await;
        let mut messages: Vec<&str> = asked
            .values()
            .map(|q| {
                assert_eq!(q["method"], "elicitation/create", "{q}");
                q["params"]["message"].as_str().unwrap()
            })
            .collect();
        messages.sort_unstable();
        assert_eq!(messages, ["First seat on AF123?", "Second seat on AF123?"]);
        assert!(
            sent.lock().unwrap().is_empty(),
            "no elicitation request: the task asks"
        );
        let key_of = |message: &str| {
            asked
                .iter()
                .find(|(_, q)| q["params"]["message"] == message)
                .map(|(key, _)| key.clone())
                .unwrap()
        };
        let (first, second) = (
            key_of("First seat on AF123?"),
            key_of("Second seat on AF123?"),
        );
        let update = |answers: Vec<(&String, Value)>| {
            let client = &client;
            let task_id = task_id.clone();
            let answers = answers.into_iter().map(|(k, v)| (k.clone(), v)).collect();
            async move {
                client
                    .update_task(UpdateTaskParams::new(task_id, answers))
                    .await
            }
        };

        // One answer of the wrong shape: nothing is delivered.
        let (code, message) = refusal(
            update(vec![
                (&first, accepted(json!({ "seat": "12A", "window": true }))),
                (&second, json!(42)),
            ])
            .await,
        );
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains(&format!("{second:?}")), "{message}");
        assert_eq!(questions(&client, &task_id, 2).await.len(), 2);

        update(vec![(
            &first,
            accepted(json!({ "seat": "12A", "window": true })),
        )])
        .await
        .unwrap();
        let left = questions(&client, &task_id, 1).await;
        assert_eq!(left.keys().collect::<Vec<_>>(), [&second], "{left:?}");

        update(vec![(
            &second,
            accepted(json!({ "seat": "12B", "window": false })),
        )])
        .await
        .unwrap();
        let done = settled(&client, &task_id).await;
        let TaskPayload::Completed { result } = &done.payload else {
            panic!("a completed task: {done:?}")
        };
        assert_eq!(
            result["content"][0]["text"], "AF123: 12A and 12B",
            "{result:?}"
        );
    }
}

/// `tasks/cancel` of a task waiting on its questions: the questions end
/// and the task is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_that_waits_for_answers_cancels_it() {
    use rmcp::model::{CancelTaskParams, TaskPayload};
    let runtime = Runtime::builder().tool(TwoSeatsTool).build().unwrap();
    let client = connect(runtime, task_client(), true).await;
    let task_id = start_task(&client, "two-seats", json!({ "flight": "AF123" })).await;
    questions(&client, &task_id, 2).await;
    client
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .unwrap();
    let done = settled(&client, &task_id).await;
    assert_eq!(done.payload, TaskPayload::Cancelled, "{done:?}");
}

/// Greets the user, asking their name first (a background tool waited for)
#[tool(background(disposition = "foreground"), id = "greet-later")]
pub async fn greet_later(ctx: ToolContext<String, GreetName>) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend("What is your name?".to_owned()),
        Some(GreetName { name }) => Ok(format!("Hello, {name}!")),
    }
}

/// The answer `greet-later` asks for.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct GreetName {
    /// Your name
    name: String,
}

/// The MCP issue's tasks-mrtr-composition: a background call that asks
/// before its task runs gets an `input_required` result (no task yet);
/// the retry with the answer gets a task handle, and the task completes
/// with the answer in its result. A client without the tasks extension
/// gets the result itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_asks_first_becomes_a_task_once_answered() {
    use rmcp::model::TaskPayload;
    let runtime = Runtime::builder().tool(GreetLaterTool).build().unwrap();
    for tasks in [true, false] {
        let client = connect(
            runtime.clone(),
            TestClient {
                tasks,
                ..TestClient::answering(|_, _| ElicitResult::new(ElicitationAction::Decline))
            },
            true,
        )
        .await;
        let response = client
            .call_tool_once(CallToolRequestParams::new("greet-later"))
            .await
            .unwrap();
        let CallToolResponse::InputRequired(asked) = response else {
            panic!("input_required first: {response:?}")
        };
        let requests = asked.input_requests.expect("a question");
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["resume"]);
        let retry = CallToolRequestParams::new("greet-later")
            .with_request_state(asked.request_state.expect("a request state"))
            .with_input_responses(
                [("resume".to_owned(), accepted(json!({ "name": "Alice" })))].into(),
            );
        let response = client.call_tool_once(retry).await.unwrap();
        if !tasks {
            let CallToolResponse::Complete(result) = response else {
                panic!("the result itself without the extension: {response:?}")
            };
            assert_eq!(text(&result), "Hello, Alice!");
            continue;
        }
        let CallToolResponse::Task(created) = response else {
            panic!("a task handle once answered: {response:?}")
        };
        let wire = serde_json::to_value(&created).unwrap();
        assert!(wire.get("requestState").is_none(), "{wire}");
        let done = settled(&client, &created.task.task_id).await;
        let TaskPayload::Completed { result } = &done.payload else {
            panic!("a completed task: {done:?}")
        };
        assert_eq!(result["content"][0]["text"], "Hello, Alice!", "{result:?}");
    }
}

/// Summarizes a text in the background with the client's model
#[tool(background)]
pub async fn summarize(text: String, ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = ctx.mcp().ok_or_else(|| ToolError::new("nobody to ask"))?;
    mcp.sample(format!("Summarize: {text}"), 50).await
}

/// A task's question for the client's model (sampling, before 2026-07-28)
/// is an input request too: `sampling/createMessage`, answered by a
/// `CreateMessageResult`; anything else is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_asks_the_clients_model_through_its_input_requests() {
    use rmcp::model::{TaskPayload, UpdateTaskParams};
    let runtime = Runtime::builder().tool(SummarizeTool).build().unwrap();
    let client = connect(
        runtime,
        TestClient {
            tasks: true,
            sampling: true,
            ..TestClient::default()
        },
        false,
    )
    .await;
    let task_id = start_task(&client, "summarize", json!({ "text": "a long story" })).await;
    let asked = questions(&client, &task_id, 1).await;
    let (key, question) = asked.iter().next().unwrap();
    assert_eq!(question["method"], "sampling/createMessage", "{question}");
    assert_eq!(
        question["params"]["messages"][0]["content"]["text"],
        "Summarize: a long story"
    );
    assert_eq!(question["params"]["maxTokens"], 50);
    let update = |answer: Value| {
        let (client, task_id) = (&client, task_id.clone());
        let answers = [(key.clone(), answer)].into();
        async move {
            client
                .update_task(UpdateTaskParams::new(task_id, answers))
                .await
        }
    };
    let (code, message) = refusal(update(accepted(json!({ "text": "short" }))).await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("sampling result"), "{message}");
    update(json!({
        "role": "assistant",
        "content": { "type": "text", "text": "short" },
        "model": "test-model"
    }))
    .await
    .unwrap();
    let done = settled(&client, &task_id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("a completed task: {done:?}")
    };
    assert_eq!(result["content"][0]["text"], "short", "{result:?}");
}

/// Purges the cache, in the background, once approved
#[tool(background, require_approval)]
pub async fn purge() -> &'static str {
    "purged"
}

/// A deferred background call that needs approval is asked about first
/// (an `input_required` result: no task yet); once approved, the client of
/// the tasks extension gets a task handle rather than a wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_background_call_is_a_task_for_a_tasks_client() {
    use rmcp::model::TaskPayload;
    let runtime = Runtime::builder().tool(PurgeTool).build().unwrap();
    let client = connect(runtime, task_client(), true).await;
    let response = client
        .call_tool_once(CallToolRequestParams::new("purge"))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(asked) = response else {
        panic!("asked for approval first: {response:?}")
    };
    let retry = CallToolRequestParams::new("purge")
        .with_request_state(asked.request_state.expect("a request state"))
        .with_input_responses(
            [("approval".to_owned(), accepted(json!({ "approved": true })))].into(),
        );
    let response = client.call_tool_once(retry).await.unwrap();
    let CallToolResponse::Task(created) = response else {
        panic!("a task handle once approved: {response:?}")
    };
    let done = settled(&client, &created.task.task_id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("a completed task: {done:?}")
    };
    assert_eq!(result["content"][0]["text"], "purged", "{result:?}");
}

/// Every log line of this test binary (the runtime logs through `tracing`).
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    Arc::clone(LOGS.get_or_init(|| {
        let logs: Arc<Mutex<Vec<u8>>> = Arc::default();
        let sink = Arc::clone(&logs);
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || LogWriter(Arc::clone(&sink)))
            .init();
        logs
    }))
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn cancellation_fires_the_abort_signal_and_the_runtime_logs_it() {
    let logs = logs();
    let runtime = runtime();
    let mut events = runtime.events();
    let client = connect(runtime, TestClient::default(), false).await;
    let request =
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("sleeper")));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    handle
        .cancel(Some("the user pressed stop".into()))
        .await
        .unwrap();

    let aborted = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(event) = events.next().await {
            if event.tool_id == "sleeper" && event.kind == EventKind::Aborted {
                return event.call_id;
            }
        }
        panic!("the event stream ended")
    })
    .await
    .expect("the call was not aborted");
    assert!(aborted.starts_with("mcp-"));
    assert!(
        SLEEPER_ABORTED.load(Ordering::SeqCst),
        "the tool saw its abort signal"
    );
    let logged = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        logged
            .lines()
            .any(|l| l.contains("tool call aborted") && l.contains(&aborted)),
        "{logged}"
    );
    // Still serving.
    let ok = call(&client, "letters", json!({ "word": "ok" }))
        .await
        .unwrap();
    assert_eq!(ok.structured_content, Some(json!({ "result": 2 })));
}

// --- approval and suspend over elicitation ---------------------------------------------

#[tokio::test]
async fn approval_is_asked_through_elicitation() {
    for modern in [false, true] {
        let client_handler = TestClient::answering(|message, _schema| {
            if message.contains("/tmp/keep") {
                accept(json!({ "approved": false, "reason": "keep that one" }))
            } else if message.contains("/tmp/other") {
                ElicitResult::new(ElicitationAction::Decline)
            } else {
                accept(json!({ "approved": true }))
            }
        });
        let asked = Arc::clone(&client_handler.asked);
        let runtime = runtime();
        let client = connect(runtime.clone(), client_handler, modern).await;

        let approved = call(&client, "delete-file", json!({ "path": "/tmp/x" }))
            .await
            .unwrap();
        assert_eq!(approved.is_error, Some(false), "{}", text(&approved));
        assert_eq!(text(&approved), "deleted /tmp/x");
        let (message, schema) = asked.lock().unwrap()[0].clone();
        assert_eq!(
            message,
            "Allow \"Delete File\" (delete-file) to run with these arguments?\n{\"path\":\"/tmp/x\"}"
        );
        assert_eq!(schema["properties"]["approved"]["type"], "boolean");
        assert_eq!(schema["required"], json!(["approved"]));

        // Declined with a reason: the model reads the reason; it never ran.
        let declined = call(&client, "delete-file", json!({ "path": "/tmp/keep" }))
            .await
            .unwrap();
        assert_eq!(declined.is_error, Some(true));
        assert_eq!(text(&declined), "keep that one");

        let declined = call(&client, "delete-file", json!({ "path": "/tmp/other" }))
            .await
            .unwrap();
        assert_eq!(text(&declined), "Tool call was not approved by the user");
        assert!(
            runtime.pending().await.unwrap().is_empty(),
            "modern: {modern}"
        );
    }
}

#[tokio::test]
async fn without_elicitation_a_call_needing_approval_stays_pending() {
    let runtime = runtime();
    let client = connect(runtime.clone(), TestClient::default(), false).await;
    let result = call(&client, "delete-file", json!({ "path": "/tmp/x" }))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let pending = &result.meta.as_ref().unwrap()[PENDING_META];
    let call_id = pending["callId"].as_str().unwrap().to_owned();
    assert_eq!(pending["kind"], "approval");
    let message = text(&result);
    assert!(message.contains("needs human approval"), "{message}");
    assert!(
        message.contains(&format!("Runtime::approve(\"{call_id}\")")),
        "{message}"
    );

    // A client that learnt the id cannot approve it by replaying it as the
    // requestState of an answer: only calls the server asked about are accepted.
    let forged = client
        .call_tool_once(
            CallToolRequestParams::new("delete-file")
                .with_request_state(call_id.clone())
                .with_input_responses(
                    [(
                        "approval".to_owned(),
                        json!({ "action": "accept", "content": { "approved": true } }),
                    )]
                    .into(),
                ),
        )
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = forged else {
        panic!("expected a JSON-RPC error, got {forged:?}")
    };
    assert_eq!(error.code.0, -32602);

    let stored = runtime.pending().await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].call_id, call_id);
    let outcome = runtime.approve(&call_id).await.unwrap();
    assert_eq!(outcome.output(), Some(&json!("deleted /tmp/x")));
}

#[tokio::test]
async fn an_input_required_retry_is_accepted_after_a_restart_and_on_another_instance() {
    let dir = std::env::temp_dir().join(format!("tool-runtime-mcp-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let on_file = || {
        Runtime::builder()
            .tool(DeleteFileTool)
            .sqlite_store(dir.join("pending.sqlite"))
            .build()
            .unwrap()
    };
    let key = b"a key the instances share, 32 bytes or more".to_vec();
    let server = |key: &[u8]| {
        McpServer::builder(on_file())
            .request_state_key(key.to_vec())
            .build()
    };
    let answering = || TestClient::answering(|_, _| accept(json!({ "approved": true })));
    let request = |state: Option<String>| {
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), json!("/tmp/x"));
        let mut params = CallToolRequestParams::new("delete-file").with_arguments(arguments);
        if let Some(state) = state {
            params = params.with_request_state(state).with_input_responses(
                [(
                    "approval".to_owned(),
                    json!({ "action": "accept", "content": { "approved": true } }),
                )]
                .into(),
            );
        }
        params
    };

    // Instance A asks; then it goes away (a restart, or the load balancer
    // sends the retry elsewhere).
    let client = connect_to(server(&key), answering(), true).await;
    let CallToolResponse::InputRequired(asked) =
        client.call_tool_once(request(None)).await.unwrap()
    else {
        panic!("expected input_required")
    };
    let state = asked.request_state.expect("a request state");
    drop(client);

    // An instance without the key cannot accept it: the call stays pending.
    let stranger = connect_to(
        server(b"another key entirely, also long enough"),
        answering(),
        true,
    )
    .await;
    let refused = stranger
        .call_tool_once(request(Some(state.clone())))
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = refused else {
        panic!("expected a JSON-RPC error, got {refused:?}")
    };
    assert_eq!(error.code.0, -32602, "{error:?}");
    assert_eq!(on_file().pending().await.unwrap().len(), 1);

    // Instance B, same store and key: the retry is accepted and runs once.
    let client = connect_to(server(&key), answering(), true).await;
    let CallToolResponse::Complete(done) = client
        .call_tool_once(request(Some(state.clone())))
        .await
        .unwrap()
    else {
        panic!("expected a result")
    };
    assert_eq!(text(&done), "deleted /tmp/x");
    assert!(on_file().pending().await.unwrap().is_empty());
    // A retry whose response was lost: the recorded result, no second run.
    let CallToolResponse::Complete(again) =
        client.call_tool_once(request(Some(state))).await.unwrap()
    else {
        panic!("expected a result")
    };
    assert_eq!(text(&again), "deleted /tmp/x");
}

#[tokio::test]
async fn a_suspended_call_elicits_its_resume_data() {
    for modern in [false, true] {
        // The first answer breaks the resume schema (seats >= 1): asked again.
        let client_handler = TestClient::answering(|message, _schema| {
            if message.contains("seats") {
                accept(json!({ "confirmed": true, "seats": 2 }))
            } else {
                accept(json!({ "confirmed": true, "seats": 0 }))
            }
        });
        let asked = Arc::clone(&client_handler.asked);
        let runtime = runtime();
        let client = connect(runtime.clone(), client_handler, modern).await;
        let result = call(&client, "book-flight", json!({ "flight": "AF123" }))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
        assert_eq!(text(&result), "booked 2 seat(s) on AF123");

        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 2);
        let (message, schema) = &asked[0];
        let payload: Value = serde_json::from_str(message).unwrap();
        assert_eq!(
            payload,
            json!({ "question": "Book AF123 for 249 EUR?", "price_eur": 249 })
        );
        assert_eq!(
            schema["properties"]["confirmed"],
            json!({ "type": "boolean", "description": "Book it?" })
        );
        assert_eq!(schema["properties"]["seats"]["minimum"], 1);
        assert_eq!(schema["required"], json!(["confirmed", "seats"]));
        assert!(
            asked[1].0.starts_with("Tool resume data validation failed"),
            "{}",
            asked[1].0
        );
        assert!(runtime.pending().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_running_tool_asks_the_user_through_its_context() {
    let client_handler = TestClient::answering(|message, _schema| {
        if message.contains("AF123") {
            accept(json!({ "seat": "12A", "window": true }))
        } else {
            ElicitResult::new(ElicitationAction::Decline)
        }
    });
    let asked = Arc::clone(&client_handler.asked);
    let client = connect(runtime(), client_handler, false).await;
    let picked = call(&client, "pick-seat", json!({ "flight": "AF123" }))
        .await
        .unwrap();
    assert_eq!(text(&picked), "AF123: seat 12A (window)");
    let (message, schema) = asked.lock().unwrap()[0].clone();
    assert_eq!(message, "Which seat on AF123?");
    assert_eq!(schema["properties"]["seat"]["type"], "string");
    assert_eq!(schema["properties"]["window"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["seat", "window"]));
    let declined = call(&client, "pick-seat", json!({ "flight": "LH456" }))
        .await
        .unwrap();
    assert_eq!(text(&declined), "LH456: the user did not pick a seat");

    // A client that cannot show forms (and the stateless protocol, which has
    // no server-to-client requests): the tool gets no MCP context.
    for (client_handler, modern) in [
        (TestClient::default(), false),
        (TestClient::default(), true),
    ] {
        let client = connect(runtime(), client_handler, modern).await;
        let result = call(&client, "pick-seat", json!({ "flight": "AF123" }))
            .await
            .unwrap();
        assert_eq!(
            text(&result),
            "AF123: nobody to ask, seat unassigned",
            "modern: {modern}"
        );
    }
}

#[tokio::test]
async fn suspensions_that_cannot_be_asked_stay_pending() {
    let runtime = runtime();
    let client = connect(
        runtime.clone(),
        TestClient::answering(|_, _| accept(json!({}))),
        false,
    )
    .await;
    let result = call(&client, "deep-ask", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let pending = &result.meta.as_ref().unwrap()[PENDING_META];
    assert_eq!(pending["kind"], "suspended");
    assert_eq!(pending["payload"], "Which value?");
    let call_id = pending["callId"].as_str().unwrap();
    assert!(text(&result).contains(&format!("Runtime::resume(\"{call_id}\", data)")));
    let outcome = runtime
        .resume(call_id, json!({ "inner": { "value": "forty-two" } }))
        .await
        .unwrap();
    assert_eq!(outcome.output(), Some(&json!("forty-two")));

    // Declining to answer leaves the call suspended too.
    let client = connect(
        runtime.clone(),
        TestClient::answering(|_, _| ElicitResult::new(ElicitationAction::Decline)),
        false,
    )
    .await;
    let result = call(&client, "book-flight", json!({ "flight": "AF1" }))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("the user did not provide it (decline)"),
        "{}",
        text(&result)
    );
    assert_eq!(runtime.pending().await.unwrap().len(), 1);
}

// --- streamable HTTP --------------------------------------------------------------------

/// One HTTP/1.0 POST (the body ends when the server closes the
/// connection), returning the status line, the headers and the JSON-RPC
/// message with `id` from the JSON or SSE body.
async fn post(
    addr: std::net::SocketAddr,
    host: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (String, String, Option<Value>) {
    post_text(addr, host, headers, &body.to_string()).await
}

/// [`post`] with any body text.
async fn post_text(
    addr: std::net::SocketAddr,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String, Option<Value>) {
    let (head, body) = exchange(addr, "POST", host, headers, body).await;
    let status = head.lines().next().unwrap_or_default().to_owned();
    let message = body
        .lines()
        .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|m| m.get("id").is_some());
    (status, head, message)
}

/// One HTTP/1.0 request with a JSON body (empty: none), read until the
/// server closes the connection: the response's head and body.
async fn exchange(
    addr: std::net::SocketAddr,
    method: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String) {
    let mut stream = send(addr, method, host, headers, body).await;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .expect("the response did not end")
        .unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.to_owned(), body.to_owned())
}

/// Sends one HTTP/1.0 request with a JSON body (empty: none); the
/// connection, to read the response from.
async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// The hardening issue: rmcp answered malformed JSON with HTTP 415 and
/// malformed `tools/call` params with -32601 (method not found).
#[tokio::test]
async fn malformed_messages_over_http_get_the_json_rpc_errors_the_specification_names() {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let (addr, host) = (server.local_addr(), server.local_addr().to_string());
    let (status, _, message) =
        post_text(addr, &host, &[], "{\"jsonrpc\": \"2.0\", \"id\": 1, ").await;
    assert!(status.contains("400"), "{status}");
    let message = message.expect("a JSON-RPC error");
    assert_eq!(message["error"]["code"], -32700, "{message}");
    assert_eq!(message["id"], Value::Null);
    for (n, params) in [
        json!({ "arguments": {} }),
        json!({ "name": 5 }),
        Value::Null,
        json!({ "name": "weather-tool", "arguments": [1] }),
        json!("weather-tool"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut request = json!({ "jsonrpc": "2.0", "id": n, "method": "tools/call" });
        if !params.is_null() {
            request["params"] = params.clone();
        }
        let (status, _, message) = post(addr, &host, &[], request).await;
        assert!(status.contains("200"), "{params}: {status}");
        let message = message.expect("a JSON-RPC error");
        assert_eq!(message["error"]["code"], -32602, "{params}: {message}");
        assert_eq!(message["id"], n, "{params}");
    }
    server.shutdown();
}

/// rmcp's own behaviour over stdio, pinned (the README lists it under
/// limits): a line that is not JSON gets no response at all; the server
/// goes on and answers the next message.
#[tokio::test]
async fn over_stdio_a_line_that_is_not_json_gets_no_response() {
    use tokio::io::AsyncBufReadExt as _;
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(McpServer::new(runtime()).serve(server_end));
    let (reader, mut writer) = tokio::io::split(client_end);
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
    });
    writer
        .write_all(format!("{{\"jsonrpc\": \"2.0\", \"id\": 0, \n{initialize}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(reader).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("an answer")
        .unwrap()
        .expect("a line");
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(
        first["id"], 1,
        "the first answer is the initialize result: {first}"
    );
}

#[tokio::test]
async fn streamable_http_on_loopback() {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let addr = server.local_addr();
    assert_eq!(server.url(), format!("http://{addr}/mcp"));
    let host = addr.to_string();

    let (status, head, init) = post(
        addr,
        &host,
        &[],
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
        }),
    )
    .await;
    assert!(status.contains("200"), "{status}");
    let init = init.unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "tool-runtime");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    let session = header(&head, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let session_headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];

    let (status, _, _) = post(
        addr,
        &host,
        &session_headers,
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    assert!(status.contains("202"), "{status}");

    let (_, _, listed) = post(
        addr,
        &host,
        &session_headers,
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    )
    .await;
    assert_eq!(
        listed.unwrap()["result"]["tools"][0]["name"],
        "weather-tool"
    );

    let (_, _, called) = post(
        addr,
        &host,
        &session_headers,
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "weather-tool", "arguments": { "location": "Rome" } } }),
    )
    .await;
    let called = called.unwrap();
    assert_eq!(called["result"]["structuredContent"]["location"], "Rome");
    assert_eq!(called["result"]["isError"], false);

    // Only loopback host names are served (DNS rebinding protection).
    let (status, _, _) = post(
        addr,
        "evil.example.com",
        &[],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    )
    .await;
    assert!(status.contains("403"), "{status}");

    // Only loopback origins (the hardening issue: a page of any origin was
    // served); a request without an Origin (not from a browser) passes.
    let list = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list" });
    let session_and = |origin: &'static str| {
        let mut headers = session_headers.to_vec();
        headers.push(("Origin", origin));
        headers
    };
    let (status, _, _) = post(
        addr,
        &host,
        &session_and("http://evil.example.com"),
        list.clone(),
    )
    .await;
    assert!(status.contains("403"), "{status}");
    let (status, _, listed) = post(
        addr,
        &host,
        &session_and("http://localhost:5173"),
        list.clone(),
    )
    .await;
    assert!(status.contains("200") && listed.is_some(), "{status}");

    server.shutdown();
    tokio::time::timeout(Duration::from_secs(5), server.wait())
        .await
        .expect("the server did not stop")
        .unwrap();
}

#[tokio::test]
async fn http_serves_the_origins_it_is_told_to() {
    let server = McpServer::new(runtime())
        .serve_http(
            HttpOptions::new(([127, 0, 0, 1], 0).into())
                .allowed_origins(["https://app.example.com:443"]),
        )
        .await
        .unwrap();
    let addr = server.local_addr();
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
    });
    let host = addr.to_string();
    let (status, _, _) = post(
        addr,
        &host,
        &[("Origin", "https://app.example.com")],
        init.clone(),
    )
    .await;
    assert!(status.contains("200"), "{status}");
    let (status, _, _) = post(addr, &host, &[("Origin", "http://localhost:3000")], init).await;
    assert!(
        status.contains("403"),
        "the list replaces the loopback default: {status}"
    );
    server.shutdown();
}

#[tokio::test]
async fn http_other_paths_are_not_found() {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()).path("/tools"))
        .await
        .unwrap();
    let (status, _, _) = post(
        server.local_addr(),
        "127.0.0.1",
        &[],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    )
    .await;
    assert!(status.contains("404"), "{status}");
    server.shutdown();
}

#[test]
fn tools_can_be_built_for_the_server_without_serving() {
    let tool = Tool::from(WeatherTool);
    let server = McpServer::new(Runtime::builder().tool(tool).build().unwrap());
    assert_eq!(server.tools()[0].name, "weather-tool");
}

// --- asking the user while running (MCP elicitation) -------------------------

struct Answers(Value);

impl Elicitor for Answers {
    fn elicit(&self, message: String, schema: Value) -> ElicitFuture<'_> {
        let answer = self.0.clone();
        Box::pin(async move {
            assert_eq!(message, "How many?");
            assert_eq!(schema["properties"]["count"]["type"], "integer");
            Ok(Elicitation::Accepted(answer))
        })
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct HowMany {
    count: u32,
}

/// Asks how many, when someone can answer
#[tool]
async fn ask_count(ctx: ToolContext) -> Result<String, ToolError> {
    match ctx.mcp() {
        None => Ok("nobody to ask".into()),
        Some(mcp) => Ok(match mcp.elicit_as::<HowMany>("How many?").await? {
            Some(HowMany { count }) => format!("count {count}"),
            None => "no answer".into(),
        }),
    }
}

#[tokio::test]
async fn a_tool_asks_the_user_through_the_mcp_context_extension_when_there_is_one() {
    let tool = Tool::from(AskCountTool);
    assert_eq!(
        tool.execute(json!({}), CallContext::new("c0"))
            .await
            .output(),
        Some(&json!("nobody to ask"))
    );
    let ctx =
        CallContext::new("c1").with_extension(McpContext::new(Answers(json!({ "count": 3 }))));
    assert_eq!(
        tool.execute(json!({}), ctx).await.output(),
        Some(&json!("count 3"))
    );
    // An answer of the wrong shape is an error the model reads.
    let ctx =
        CallContext::new("c2").with_extension(McpContext::new(Answers(json!({ "count": "x" }))));
    let outcome = tool.execute(json!({}), ctx).await;
    assert!(
        outcome
            .error()
            .unwrap()
            .message()
            .starts_with("the user's answer does not have the expected shape")
    );
}

// --- errors ------------------------------------------------------------------

#[tokio::test]
async fn mcp_errors_keep_the_sdks_error_as_their_source() {
    use std::error::Error as _;
    use tool_mcp::{McpClient, McpError};

    // A peer that hangs up before the handshake.
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    drop(client_end);
    let runtime = Runtime::builder().build().unwrap();
    let error = McpServer::new(runtime.clone())
        .serve(server_end)
        .await
        .unwrap_err();
    assert!(matches!(error, McpError::Initialize(_)), "{error:?}");
    let source = error.source().expect("the SDK's error is the source");
    assert!(error.to_string().contains(&source.to_string()), "{error}");

    // A server that goes away after the handshake: the next request fails.
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(McpServer::new(runtime).serve(server_end));
    let client = McpClient::connect(client_end).await.unwrap();
    server.abort();
    let _ = server.await;
    let error = client.tools().await.unwrap_err();
    assert!(matches!(error, McpError::Service(_)), "{error:?}");
    assert!(error.source().is_some(), "{error:?}");
}

/// The hardening issue: after a stream resumption with `Last-Event-ID`,
/// rmcp sent the event the client had received last again.
#[tokio::test]
async fn a_resumed_stream_starts_after_the_event_received_last() {
    let server = McpServer::new(runtime())
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let (addr, host) = (server.local_addr(), server.local_addr().to_string());
    let (_, head, _) = post(
        addr,
        &host,
        &[],
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
        }),
    )
    .await;
    let session = header(&head, "mcp-session-id").expect("a session id");
    let session = [
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    post(
        addr,
        &host,
        &session,
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;

    // A call reporting progress 100 times; the client reads two progress
    // events, then its connection breaks.
    let call = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "count", "arguments": { "steps": 100 }, "_meta": { "progressToken": "p" } }
    })
    .to_string();
    let mut stream = send(addr, "POST", &host, &session, &call).await;
    let (mut received, mut buffer) = (String::new(), [0u8; 4096]);
    let last_id = loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .expect("progress events")
            .unwrap();
        assert!(n > 0, "the stream ended early: {received}");
        received.push_str(std::str::from_utf8(&buffer[..n]).unwrap());
        let progress_ids = sse_ids(&received, "notifications/progress");
        if progress_ids.len() >= 2 {
            break progress_ids[1].clone();
        }
    };
    drop(stream);

    let mut headers = session.to_vec();
    headers.push(("Last-Event-ID", last_id.as_str()));
    let (head, replay) = exchange(addr, "GET", &host, &headers, "").await;
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    let replayed = sse_ids(&replay, "");
    assert!(
        !replayed.contains(&last_id),
        "the event received last ({last_id}) is not sent again: {replayed:?}"
    );
    // The replay goes on from the next event to the call's result.
    let next = |id: &str| {
        let (index, request) = id.split_once('/').unwrap();
        format!("{}/{request}", index.parse::<u64>().unwrap() + 1)
    };
    assert_eq!(replayed.first(), Some(&next(&last_id)), "{replay}");
    assert!(
        replay.contains("\"result\""),
        "the replay ends with the result"
    );
    server.shutdown();
}

/// The ids of the SSE events in `body` whose data contains `containing`.
fn sse_ids(body: &str, containing: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|event| {
            event
                .lines()
                .any(|line| line.starts_with("data: {") && line.contains(containing))
        })
        .filter_map(|event| {
            event
                .lines()
                .find_map(|line| line.strip_prefix("id: "))
                .map(str::to_owned)
        })
        .collect()
}

// --- 2025-11-25 tasks (SEP-1686), over streamable HTTP with raw requests -----------

static SLOW_JOB_GATE: AtomicBool = AtomicBool::new(false);

/// A slow job in the background (ends once `SLOW_JOB_GATE` opens)
#[tool(id = "slow-job", background(timeout_ms = 20_000))]
pub async fn slow_job(label: String) -> Result<String, ToolError> {
    while !SLOW_JOB_GATE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(format!("done: {label}"))
}

/// A quick job in the background
#[tool(id = "quick-job", background(timeout_ms = 20_000))]
pub async fn quick_job(label: String) -> Result<String, ToolError> {
    Ok(format!("done: {label}"))
}

/// Runs in the background until aborted
#[tool(id = "endless-job", background(timeout_ms = 20_000))]
pub async fn endless_job(ctx: ToolContext) -> Result<String, ToolError> {
    ctx.abort_signal().aborted().await;
    Ok("stopped".to_owned())
}

/// A streamable HTTP session of a 2025-11-25 client (`capabilities` as
/// given): the server's address, host, and the session's headers.
#[derive(Clone)]
struct Session2025 {
    addr: std::net::SocketAddr,
    host: String,
    session: String,
    init: Value,
}

impl Session2025 {
    async fn open(server: &tool_mcp::HttpServer, capabilities: Value) -> Session2025 {
        let (addr, host) = (server.local_addr(), server.local_addr().to_string());
        let (status, head, init) = post(
            addr,
            &host,
            &[],
            json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": { "protocolVersion": "2025-11-25", "capabilities": capabilities,
                    "clientInfo": { "name": "raw", "version": "0" } }
            }),
        )
        .await;
        assert!(status.contains("200"), "{status}");
        let session = header(&head, "mcp-session-id")
            .expect("a session")
            .to_owned();
        let opened = Session2025 {
            addr,
            host,
            session,
            init: init.expect("an initialize result"),
        };
        let (status, _, _) = post(
            addr,
            &opened.host,
            &opened.headers(),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        )
        .await;
        assert!(status.contains("202"), "{status}");
        opened
    }

    fn headers(&self) -> [(&str, &str); 2] {
        [
            ("Mcp-Session-Id", self.session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]
    }

    /// One request; its JSON-RPC response.
    async fn request(&self, id: u32, method: &str, params: Value) -> Value {
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let (_, _, message) = post(self.addr, &self.host, &self.headers(), body).await;
        message.unwrap_or_else(|| panic!("no response to {method}"))
    }

    /// Calls the background tool `name` (no arguments) as a task: the
    /// task's id.
    async fn start_task(&self, id: u32, name: &str) -> String {
        let created = self
            .request(
                id,
                "tools/call",
                json!({ "name": name, "arguments": {}, "task": {} }),
            )
            .await;
        created["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_owned()
    }

    /// [`request`](Self::request) on a task of its own, for a request that
    /// waits (`tasks/result`): its response, once it comes.
    fn request_later(
        &self,
        id: u32,
        method: &str,
        params: Value,
    ) -> tokio::task::JoinHandle<Value> {
        let (session, method) = (self.clone(), method.to_owned());
        tokio::spawn(async move { session.request(id, &method, params).await })
    }

    /// `tasks/result` of a task its tool holds until `gate` opens: the
    /// request must still wait after `held`; then the gate opens and its
    /// response comes.
    async fn result_when_released(
        &self,
        id: u32,
        task_id: &str,
        held: Duration,
        gate: &AtomicBool,
    ) -> Value {
        let waiting = self.request_later(id, "tasks/result", json!({ "taskId": task_id }));
        tokio::time::sleep(held).await;
        assert!(
            !waiting.is_finished(),
            "tasks/result answered before the task ended"
        );
        gate.store(true, Ordering::SeqCst);
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("tasks/result did not answer")
            .expect("a response")
    }

    /// The session's standalone SSE stream, read into `into` line by line.
    async fn listen(&self, into: Arc<Mutex<String>>) {
        use tokio::io::AsyncBufReadExt as _;
        let stream = send(self.addr, "GET", &self.host, &self.headers(), "").await;
        let mut lines = tokio::io::BufReader::new(stream).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut seen = into.lock().unwrap();
                seen.push_str(&line);
                seen.push('\n');
            }
        });
    }
}

/// Polls `tasks/get` until the task has `status` (10 s at most).
async fn task_reaches(session: &Session2025, task_id: &str, status: &str) -> Value {
    eventually(1000, |n| async move {
        let got = session
            .request(1000 + n, "tasks/get", json!({ "taskId": task_id }))
            .await;
        if got["result"]["status"] == status {
            Ok(got["result"].clone())
        } else {
            Err(got)
        }
    })
    .await
    .unwrap_or_else(|last| panic!("task {task_id} did not reach {status}: {last}"))
}

/// The issue's 2025-11-25 point: a client of that version that declares
/// `capabilities.tasks` gets, for a deferred background tool's call with a
/// `task` param, a task at once (`CreateTaskResult`); `tasks/get` says it
/// works, then that it completed; `tasks/result` waits for it and gives
/// the tool's result; `tasks/list` lists it; a status notification says it
/// completed; `tasks/cancel` cancels a running one. The server declares
/// `capabilities.tasks` and each task tool's `execution.taskSupport`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_client_that_declares_tasks_gets_tasks_for_background_tools() {
    let runtime = Runtime::builder()
        .tool(SlowJobTool)
        .tool(EndlessJobTool)
        .tool(WeatherTool)
        .tool(ArchiveTool)
        .build()
        .unwrap();
    let server = McpServer::new(runtime)
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let session =
        Session2025::open(&server, json!({ "tasks": { "list": {}, "cancel": {} } })).await;
    assert_eq!(
        session.init["result"]["capabilities"]["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
        "{}",
        session.init
    );
    let notifications = Arc::new(Mutex::new(String::new()));
    session.listen(Arc::clone(&notifications)).await;

    let listed = session.request(1, "tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().expect("tools").clone();
    let support = |name: &str| {
        let tool = tools.iter().find(|t| t["name"] == name).expect(name);
        tool["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("slow-job"), "optional", "{listed}");
    assert_eq!(support("weather-tool"), Value::Null, "{listed}");
    assert_eq!(support("archive"), "required", "{listed}");
    assert!(listed["result"].get("resultType").is_none(), "{listed}");

    SLOW_JOB_GATE.store(false, Ordering::SeqCst);
    let created = session
        .request(
            2,
            "tools/call",
            json!({ "name": "slow-job", "arguments": { "label": "a" }, "task": { "ttl": 60_000 } }),
        )
        .await;
    let task = &created["result"]["task"];
    let task_id = task["taskId"].as_str().expect("a task id").to_owned();
    assert_eq!(task["status"], "working", "{created}");
    assert!(task["ttl"].as_u64().is_some(), "{created}");
    assert!(task["pollInterval"].as_u64().is_some(), "{created}");
    assert!(
        task["createdAt"].as_str().unwrap().ends_with('Z'),
        "{created}"
    );
    assert!(task.get("ttlMs").is_none() && created["result"].get("resultType").is_none());

    let working = session
        .request(3, "tasks/get", json!({ "taskId": task_id }))
        .await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert_eq!(working["result"]["taskId"], task_id.as_str());
    assert!(working["result"].get("result").is_none(), "{working}");

    // tasks/result waits until the task ends.
    let result = session
        .result_when_released(4, &task_id, Duration::from_millis(300), &SLOW_JOB_GATE)
        .await;
    assert_eq!(
        result["result"]["content"][0]["text"], "done: a",
        "{result}"
    );
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert!(result["result"].get("resultType").is_none(), "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );

    let completed = task_reaches(&session, &task_id, "completed").await;
    assert!(completed.get("result").is_none(), "{completed}");
    let listed = session.request(5, "tasks/list", json!({})).await;
    let ids: Vec<&Value> = listed["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| &t["taskId"])
        .collect();
    assert_eq!(ids, [&json!(task_id)], "{listed}");
    assert_eq!(listed["result"]["tasks"][0]["status"], "completed");
    let bad_cursor = session
        .request(6, "tasks/list", json!({ "cursor": "nope" }))
        .await;
    assert_eq!(bad_cursor["error"]["code"], -32602, "{bad_cursor}");
    // Another session lists its own tasks only (none), and reads this one's by id.
    let other = Session2025::open(&server, json!({ "tasks": {} })).await;
    let theirs = other.request(1, "tasks/list", json!({})).await;
    assert_eq!(theirs["result"]["tasks"], json!([]), "{theirs}");
    let by_id = other
        .request(2, "tasks/get", json!({ "taskId": task_id }))
        .await;
    assert_eq!(by_id["result"]["status"], "completed", "{by_id}");

    // The session heard that the task completed.
    let (notifications, task_id) = (&notifications, &task_id);
    let heard = eventually(500, |_| async move {
        let seen = notifications.lock().unwrap().clone();
        let heard = seen.lines().any(|line| {
            line.contains("notifications/tasks/status")
                && line.contains(task_id.as_str())
                && line.contains("\"completed\"")
        });
        heard.then_some(()).ok_or(())
    })
    .await
    .is_ok();
    assert!(
        heard,
        "no status notification: {}",
        notifications.lock().unwrap()
    );

    // tasks/cancel cancels a running task, and refuses an ended one.
    let endless_id = session.start_task(7, "endless-job").await;
    let cancelled = session
        .request(8, "tasks/cancel", json!({ "taskId": endless_id }))
        .await;
    assert_eq!(
        cancelled["result"]["taskId"],
        endless_id.as_str(),
        "{cancelled}"
    );
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    task_reaches(&session, &endless_id, "cancelled").await;
    let again = session
        .request(9, "tasks/cancel", json!({ "taskId": endless_id }))
        .await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    let no_result = session
        .request(10, "tasks/result", json!({ "taskId": endless_id }))
        .await;
    assert_eq!(no_result["error"]["code"], -32602, "{no_result}");

    // A call without a `task` param waits for the result, as before; a
    // `task` param on a tool that is no task is refused.
    let waited = session
        .request(
            11,
            "tools/call",
            json!({ "name": "slow-job", "arguments": { "label": "b" } }),
        )
        .await;
    assert_eq!(
        waited["result"]["content"][0]["text"], "done: b",
        "{waited}"
    );
    let refused = session
        .request(
            12,
            "tools/call",
            json!({ "name": "weather-tool", "arguments": { "location": "Rome" }, "task": {} }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    let unknown = session
        .request(13, "tasks/get", json!({ "taskId": "mcp-task-0-nope" }))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // A task-required tool: a task, and method not found without `task`.
    let archived = session
        .request(
            14,
            "tools/call",
            json!({ "name": "archive", "arguments": {}, "task": {} }),
        )
        .await;
    assert!(
        archived["result"]["task"]["taskId"].is_string(),
        "{archived}"
    );
    let refused = session
        .request(
            15,
            "tools/call",
            json!({ "name": "archive", "arguments": {} }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    server.shutdown();
}

/// Without `capabilities.tasks`, a 2025-11-25 client keeps today's
/// behaviour: no tasks declared, a `task` param ignored (the request waits
/// for the result), `tasks/result` and `tasks/list` not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_client_without_tasks_waits_for_results() {
    let runtime = Runtime::builder().tool(QuickJobTool).build().unwrap();
    let server = McpServer::new(runtime)
        .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let session = Session2025::open(&server, json!({})).await;
    assert!(
        session.init["result"]["capabilities"]
            .get("tasks")
            .is_none(),
        "{}",
        session.init
    );
    let listed = session.request(1, "tools/list", json!({})).await;
    assert!(
        listed["result"]["tools"][0].get("execution").is_none(),
        "{listed}"
    );
    let called = session
        .request(
            2,
            "tools/call",
            json!({ "name": "quick-job", "arguments": { "label": "c" }, "task": {} }),
        )
        .await;
    assert_eq!(
        called["result"]["content"][0]["text"], "done: c",
        "{called}"
    );
    for method in ["tasks/result", "tasks/list"] {
        let refused = session.request(3, method, json!({ "taskId": "x" })).await;
        assert_eq!(refused["error"]["code"], -32601, "{method}: {refused}");
    }
    server.shutdown();
}

/// SEP-2663 removed `tasks/result` and `tasks/list`: its clients get
/// method not found (both protocol eras).
#[tokio::test]
async fn a_client_of_the_tasks_extension_gets_no_tasks_result_or_list() {
    for modern in [false, true] {
        let client = connect(runtime(), task_client(), modern).await;
        for method in ["tasks/result", "tasks/list"] {
            let request = rmcp::model::CustomRequest::new(method, Some(json!({ "taskId": "x" })));
            let refused = client
                .send_request(ClientRequest::CustomRequest(request))
                .await;
            let (code, _) = refusal(refused);
            assert_eq!(code, -32601, "{method}, modern: {modern}");
        }
    }
}

/// Over stdio's framing (`serve_lines`, which `serve_stdio` uses), a
/// 2025-11-25 client that declares `capabilities.tasks` gets them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_a_2025_11_25_client_that_declares_tasks_gets_tasks() {
    use tokio::io::AsyncBufReadExt as _;
    let runtime = Runtime::builder().tool(QuickJobTool).build().unwrap();
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let (server_reader, server_writer) = tokio::io::split(server_end);
    let serving = tokio::spawn(McpServer::new(runtime).serve_lines(server_reader, server_writer));
    let (reader, mut writer) = tokio::io::split(client_end);
    let mut lines = tokio::io::BufReader::new(reader).lines();
    let mut exchange = async |message: Value| -> Option<Value> {
        writer
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        let id = message.get("id")?.clone();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("an answer")
                .unwrap()
                .expect("a line");
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer.get("id") == Some(&id) {
                return Some(answer);
            }
        }
    };
    let init = exchange(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": { "tasks": {} },
            "clientInfo": { "name": "raw", "version": "0" } }
    }))
    .await
    .unwrap();
    assert!(
        init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(),
        "{init}"
    );
    exchange(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    let listed = exchange(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }))
        .await
        .unwrap();
    assert_eq!(
        listed["result"]["tools"][0]["execution"]["taskSupport"], "optional",
        "{listed}"
    );
    let created = exchange(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "quick-job", "arguments": { "label": "d" }, "task": {} }
    }))
    .await
    .unwrap();
    let task_id = created["result"]["task"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    let result = exchange(json!({
        "jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": { "taskId": task_id }
    }))
    .await
    .unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"], "done: d",
        "{result}"
    );
    writer.shutdown().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server ends when its input does")
        .unwrap()
        .unwrap();
}

/// A raw client of `serve_lines`: one JSON-RPC message a line.
struct LineClient {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    /// The task statuses notified so far.
    statuses: Vec<Value>,
}

impl LineClient {
    fn serve(runtime: Runtime) -> LineClient {
        use tokio::io::AsyncBufReadExt as _;
        let (server_end, client_end) = tokio::io::duplex(1 << 16);
        let (reader, writer) = tokio::io::split(server_end);
        tokio::spawn(McpServer::new(runtime).serve_lines(reader, writer));
        let (reader, writer) = tokio::io::split(client_end);
        LineClient {
            lines: tokio::io::BufReader::new(reader).lines(),
            writer,
            statuses: Vec::new(),
        }
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a message")
            .unwrap()
            .expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "notifications/tasks/status" {
            self.statuses.push(message["params"]["status"].clone());
        }
        message
    }

    /// Polls `tasks/get` (ids from 10) until the task has `status`, 1,000
    /// times at most; the task's last status either way.
    async fn task_status(&mut self, task_id: &Value, status: &str) -> Value {
        let mut last = Value::Null;
        for n in 0..1000 {
            let got = self
                .request(10 + n, "tasks/get", json!({ "taskId": task_id }))
                .await;
            last = got["result"]["status"].clone();
            if last == status {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        last
    }

    /// Sends a request and returns its response (skipping notifications).
    async fn request(&mut self, id: u32, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let message = self.next().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}

/// 2025-11-25's input rounds: a task that suspends is `input_required`;
/// `tasks/result` sends its question to the client as an
/// `elicitation/create` request tied to the task, and the answer resumes
/// it; `tasks/result` then gives the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_task_that_suspends_asks_through_tasks_result() {
    let runtime = Runtime::builder().tool(BookLaterTool).build().unwrap();
    let mut client = LineClient::serve(runtime);
    let init = client
        .request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25",
                "capabilities": { "tasks": {}, "elicitation": { "form": {} } },
                "clientInfo": { "name": "raw", "version": "0" } }),
        )
        .await;
    assert!(
        init["result"]["capabilities"]["tasks"].is_object(),
        "{init}"
    );
    client
        .send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    let created = client
        .request(
            2,
            "tools/call",
            json!({ "name": "book-later", "arguments": { "flight": "AZ 610" }, "task": {} }),
        )
        .await;
    let task_id = created["result"]["task"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    let status = client.task_status(&task_id, "input_required").await;
    assert_eq!(status, "input_required");

    client
        .send(json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": task_id } }))
        .await;
    let asked = loop {
        let message = client.next().await;
        if message["method"] == "elicitation/create" {
            break message;
        }
        assert_ne!(
            message["id"], 3,
            "tasks/result answered before asking: {message}"
        );
    };
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task_id,
        "{asked}"
    );
    assert!(
        asked["params"]["message"]
            .as_str()
            .unwrap()
            .contains("249 EUR"),
        "{asked}"
    );
    client
        .send(json!({ "jsonrpc": "2.0", "id": asked["id"],
            "result": { "action": "accept", "content": { "confirmed": true, "seats": 2 } } }))
        .await;
    let result = loop {
        let message = client.next().await;
        if message["id"] == 3 {
            break message;
        }
    };
    assert_eq!(
        result["result"]["content"][0]["text"], "booked 2 seat(s) on AZ 610",
        "{result}"
    );
    // The session heard the status changes (a `working` between them only
    // if the resumed task ran longer than a poll interval).
    while !client.statuses.contains(&json!("completed")) {
        client.next().await;
    }
    let mut heard = client.statuses.clone();
    heard.retain(|status| status != "working");
    assert_eq!(
        heard,
        [json!("input_required"), json!("completed")],
        "{:?}",
        client.statuses
    );
}

static SHARED_JOB_GATE: AtomicBool = AtomicBool::new(false);

/// A background job that ends once `SHARED_JOB_GATE` opens
#[tool(id = "shared-job", background(timeout_ms = 20_000))]
pub async fn shared_job() -> Result<String, ToolError> {
    while !SHARED_JOB_GATE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok("shared done".to_owned())
}

/// A 2025-11-25 task lives in the runtime's store: another instance sharing
/// it answers `tasks/get` and `tasks/result` for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_instance_answers_for_a_2025_11_25_task() {
    let store = Arc::new(tool_runtime::store::MemoryStore::new());
    let serve = || async {
        let runtime = Runtime::builder()
            .tool(SharedJobTool)
            .store(Arc::clone(&store))
            .build()
            .unwrap();
        McpServer::new(runtime)
            .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
            .await
            .unwrap()
    };
    let (here, there) = (serve().await, serve().await);
    let creator = Session2025::open(&here, json!({ "tasks": {} })).await;
    let reader = Session2025::open(&there, json!({ "tasks": {} })).await;
    let task_id = creator.start_task(1, "shared-job").await;
    let working = reader
        .request(1, "tasks/get", json!({ "taskId": task_id }))
        .await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    let result = reader
        .result_when_released(2, &task_id, Duration::from_millis(200), &SHARED_JOB_GATE)
        .await;
    assert_eq!(
        result["result"]["content"][0]["text"], "shared done",
        "{result}"
    );
    here.shutdown();
    there.shutdown();
}

/// `tasks/cancel` of a suspended 2025-11-25 task answers at once that it is
/// still `input_required` (nothing runs to be stopped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_suspended_2025_11_25_task_leaves_it_asking() {
    let runtime = Runtime::builder().tool(BookLaterTool).build().unwrap();
    let mut client = LineClient::serve(runtime);
    client
        .request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": { "tasks": {} },
                "clientInfo": { "name": "raw", "version": "0" } }),
        )
        .await;
    client
        .send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    let created = client
        .request(
            2,
            "tools/call",
            json!({ "name": "book-later", "arguments": { "flight": "AZ 611" }, "task": {} }),
        )
        .await;
    let task_id = created["result"]["task"]["taskId"].clone();
    client.task_status(&task_id, "input_required").await;
    let started = std::time::Instant::now();
    let cancelled = client
        .request(3, "tasks/cancel", json!({ "taskId": task_id }))
        .await;
    assert_eq!(
        cancelled["result"]["status"], "input_required",
        "{cancelled}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}
