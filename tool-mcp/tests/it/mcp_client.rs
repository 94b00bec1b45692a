//! `McpClient` against the project's own example MCP server
//! (`examples-mcp/examples/mcp_server.rs`), spawned over stdio: its tools join a
//! runtime beside a local tool.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{ErrorKind, Tool, ToolError};
use tool_mcp::McpClient;
use tool_runtime::{CallOutcome, EventKind, Runtime, ToolCall};

/// The example server's executable, built with the cargo running this test
/// and the README's feature selection (`cargo build --workspace
/// --all-features --example mcp_server`: the same features as `cargo test
/// --workspace --all-features`, so a no-op after it, where `-p
/// examples-mcp` alone would build its dependencies again with fewer
/// features), located from cargo's own report so that any target directory
/// works.
fn example_server() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let output = std::process::Command::new(cargo)
            .current_dir(&workspace)
            .args([
                "build",
                "--workspace",
                "--all-features",
                "--example",
                "mcp_server",
                "--message-format=json-render-diagnostics",
            ])
            .output()
            .expect("run cargo build");
        assert!(
            output.status.success(),
            "building the example server failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|message| {
                message["reason"] == "compiler-artifact"
                    && message["target"]["name"] == "mcp_server"
            })
            .find_map(|message| message["executable"].as_str().map(PathBuf::from))
            .expect("cargo reported no mcp_server executable")
    })
}

async fn spawn_example() -> McpClient {
    let mut command = tokio::process::Command::new(example_server());
    // Keep the test output quiet; the server logs to stderr.
    command.env("RUST_LOG", "warn");
    McpClient::spawn(command)
        .await
        .expect("connect to the example server")
}

/// Greet someone (a local tool)
fn greet() -> Tool {
    Tool::builder("greet")
        .description("Greet someone")
        .input_schema(json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }))
        .execute(|input: Value, _ctx| async move {
            Ok::<_, ToolError>(json!(format!("Hello, {}!", input["name"].as_str().unwrap_or("?"))))
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn remote_tools_keep_their_declarations() {
    let remote = spawn_example().await;
    let tools = remote.tools().await.unwrap();
    let ids: Vec<&str> = tools.iter().map(Tool::id).collect();
    assert_eq!(ids, ["weather-tool", "count-slowly"]);

    let weather = tools[0].definition();
    assert_eq!(
        weather.description,
        "Get the current weather for a location"
    );
    assert_eq!(weather.title.as_deref(), Some("Weather Lookup"));
    assert!(weather.strict, "the strict flag travels in _meta");
    assert_eq!(weather.input_schema["required"], json!(["location"]));
    assert_eq!(
        weather.output_schema.as_ref().unwrap()["required"],
        json!(["location", "temperatureCelsius", "conditions"])
    );
    let mcp = weather.mcp.as_ref().unwrap();
    assert_eq!(
        serde_json::to_value(&mcp.annotations).unwrap(),
        json!({
            "title": "Weather Lookup",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": true
        })
    );
    assert_eq!(mcp.meta, None, "nothing but the strict flag was in _meta");
    assert!(!tools[1].definition().strict);
    remote.close().await.unwrap();
}

#[tokio::test]
async fn local_and_remote_tools_run_in_one_runtime() {
    let remote = spawn_example().await;
    let runtime = Runtime::builder()
        .tool(greet())
        .tools(remote.tools_with_prefix("remote_").await.unwrap())
        .build()
        .unwrap();
    let ids: Vec<&str> = runtime.tools().iter().map(Tool::id).collect();
    assert_eq!(ids, ["greet", "remote_weather-tool", "remote_count-slowly"]);

    let local = runtime
        .call(ToolCall::new("c1", "greet", json!({ "name": "Ada" })))
        .await;
    assert_eq!(local.output(), Some(&json!("Hello, Ada!")));

    let weather = runtime
        .call(ToolCall::new(
            "c2",
            "remote_weather-tool",
            r#"{"location": "Lisbon"}"#,
        ))
        .await;
    assert_eq!(
        weather.output(),
        Some(&json!({ "location": "Lisbon", "temperatureCelsius": 21.0, "conditions": "sunny" }))
    );

    // Arguments are validated locally, against the remote schema.
    let invalid = runtime
        .call(ToolCall::new("c3", "remote_weather-tool", "{}"))
        .await;
    let error = invalid.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::InputValidation);
    assert!(
        error.message().contains("- location: Required"),
        "{}",
        error.message()
    );

    // The remote tool's own error comes back as the tool's error.
    let failed = runtime
        .call(ToolCall::new(
            "c4",
            "remote_weather-tool",
            json!({ "location": " " }),
        ))
        .await;
    let error = failed.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Execution);
    assert_eq!(error.message(), "location must not be empty");

    // Remote progress becomes the call's progress events.
    let mut events = runtime.events();
    let counted = runtime
        .call(ToolCall::new(
            "c5",
            "remote_count-slowly",
            json!({ "steps": 3, "delayMs": 5 }),
        ))
        .await;
    assert_eq!(counted.output(), Some(&json!({ "counted": 3 })));
    let mut progress = Vec::new();
    while let Some(event) = events.try_next() {
        if let EventKind::Progress(p) = event.kind {
            assert_eq!(event.call_id, "c5");
            progress.push((p.value, p.total));
        }
    }
    assert_eq!(
        progress,
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );
    remote.close().await.unwrap();
}

#[tokio::test]
async fn aborting_a_remote_call_cancels_it() {
    let remote = spawn_example().await;
    let runtime = Runtime::builder()
        .tools(remote.tools().await.unwrap())
        .build()
        .unwrap();
    let running = tokio::spawn({
        let runtime = runtime.clone();
        async move {
            runtime
                .call(ToolCall::new(
                    "slow",
                    "count-slowly",
                    json!({ "steps": 200, "delayMs": 50 }),
                ))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    runtime.cancel("slow").unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the aborted call did not end")
        .unwrap();
    assert_eq!(outcome, CallOutcome::Aborted);

    // The server stopped that call and keeps serving.
    let next = runtime
        .call(ToolCall::new(
            "next",
            "count-slowly",
            json!({ "steps": 2, "delayMs": 1 }),
        ))
        .await;
    assert_eq!(next.output(), Some(&json!({ "counted": 2 })));
    remote.close().await.unwrap();

    // Once closed, calls fail with a message instead of hanging.
    let closed = runtime
        .call(ToolCall::new(
            "late",
            "count-slowly",
            json!({ "steps": 1, "delayMs": 1 }),
        ))
        .await;
    assert_eq!(closed.error().unwrap().kind(), ErrorKind::Execution);
}
