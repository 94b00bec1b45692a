//! `tools/list` and `tools/call` against rmcp's client, for both protocol
//! eras: declarations, results, failures; and `McpError`.

use crate::common;

use rmcp::ServiceError;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{Tool, tool};
use tool_mcp::McpServer;
use tool_runtime::Runtime;

use common::client::*;
use common::*;

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
        json!({ "ui/icon": "sun", "tool-runtime/strict": true })
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
    assert_eq!(letters["_meta"], json!({ "tool-runtime/strict": false }));
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

        // to_model_output: text and image content, and the raw output
        // nowhere (it may hold what the model output leaves out).
        let result = call(&client, "draw", json!({ "title": "sales" }))
            .await
            .unwrap();
        assert_eq!(result.structured_content, None);
        let sent = serde_json::to_string(&result).unwrap();
        assert!(!sent.contains("chart of sales"), "{sent}");
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
async fn a_declaration_only_tool_is_neither_listed_nor_served() {
    // Runs in the application's UI: no execute function.
    let pick = Tool::builder("pick-color")
        .description("Ask the user to pick a color")
        .build()
        .unwrap();
    let runtime = Runtime::builder()
        .tool(WeatherTool)
        .tool(pick)
        .build()
        .unwrap();
    let server = McpServer::new(runtime.clone());
    let declared: Vec<_> = server.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(declared, ["weather-tool"]);
    for modern in [false, true] {
        let client = connect(runtime.clone(), TestClient::default(), modern).await;
        let listed = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["weather-tool"], "modern: {modern}");
        let refused = call(&client, "pick-color", json!({})).await.unwrap_err();
        let ServiceError::McpError(error) = refused else {
            panic!("expected a JSON-RPC error, got {refused:?}")
        };
        assert_eq!(error.code.0, -32602);
        assert_eq!(
            error.message,
            "Tool \"pick-color\" not found. Available tools: weather-tool."
        );
    }
    assert!(
        runtime.inbox().waiting().await.unwrap().is_empty(),
        "no call was stored"
    );
}

#[test]
fn tools_can_be_built_for_the_server_without_serving() {
    let tool = Tool::from(WeatherTool);
    let server = McpServer::new(Runtime::builder().tool(tool).build().unwrap());
    assert_eq!(server.tools()[0].name, "weather-tool");
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

#[tokio::test]
async fn a_tool_that_maps_its_output_serves_it_structured_only_when_the_server_opts_it_in() {
    for modern in [false, true] {
        let plain = connect(runtime(), TestClient::default(), modern).await;
        let tools = plain.list_all_tools().await.unwrap();
        let draw = tools.iter().find(|t| t.name == "draw").unwrap();
        assert!(draw.output_schema.is_none(), "modern: {modern}");

        let server = McpServer::builder(runtime())
            .structured_output("draw")
            .build();
        let opted_in = connect_to(server, TestClient::default(), modern).await;
        let tools = opted_in.list_all_tools().await.unwrap();
        let draw = tools.iter().find(|t| t.name == "draw").unwrap();
        assert!(draw.output_schema.is_some(), "modern: {modern}");
        let result = call(&opted_in, "draw", json!({ "title": "sales" }))
            .await
            .unwrap();
        let chart = json!("chart of sales");
        let structured = if modern {
            chart
        } else {
            json!({ "result": chart })
        };
        assert_eq!(
            result.structured_content,
            Some(structured),
            "modern: {modern}"
        );
    }
}

/// A remote tool whose results carry no `structuredContent` (this server's
/// `draw`, which maps its output): `McpClient` gives the content as the
/// output (content blocks as JSON, not all being text) and as the model
/// output (content parts).
#[tokio::test]
async fn mcp_client_takes_the_content_of_a_result_without_structured_content() {
    use tool_core::{ContentPart, ModelOutput};
    use tool_runtime::{CallOutcome, ToolCall};
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(McpServer::new(runtime()).serve(server_end));
    let client = tool_mcp::McpClient::connect(client_end).await.unwrap();
    let remote = client.tools().await.unwrap();
    let draw = remote.into_iter().find(|t| t.id() == "draw").unwrap();
    let local = Runtime::builder().tool(draw).build().unwrap();
    let outcome = local
        .call(ToolCall::new("c1", "draw", json!({ "title": "sales" })))
        .await;
    let CallOutcome::Completed {
        output,
        model_output,
        ..
    } = outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        output,
        json!([
            { "type": "text", "text": "the chart" },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }
        ])
    );
    assert_eq!(
        model_output,
        Some(ModelOutput::Content(vec![
            ContentPart::text("the chart"),
            ContentPart::ImageData {
                data: "iVBORw0KGgo=".into(),
                media_type: "image/png".into()
            },
        ]))
    );
}

#[tokio::test]
async fn a_server_serves_only_the_tools_it_is_told_to_and_the_rest_are_not_callable() {
    let runtime = runtime();
    // The read-only tools, by their MCP annotation; and a subset by id.
    let read_only = McpServer::builder(runtime.clone())
        .serve_only(|tool| {
            tool.definition()
                .mcp
                .as_ref()
                .is_some_and(|mcp| mcp.annotations.read_only_hint == Some(true))
        })
        .build();
    let by_id = McpServer::builder(runtime.clone())
        .serve_tools(["letters"])
        .build();
    for (server, served) in [(read_only, "weather-tool"), (by_id, "letters")] {
        for modern in [false, true] {
            let client = connect_to(server.clone(), TestClient::default(), modern).await;
            let listed = client.list_all_tools().await.unwrap();
            let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
            assert_eq!(names, [served], "modern: {modern}");
            let refused = call(&client, "delete-file", json!({ "path": "/etc" }))
                .await
                .unwrap_err();
            let ServiceError::McpError(error) = refused else {
                panic!("expected a JSON-RPC error, got {refused:?}")
            };
            assert_eq!(error.code.0, -32602);
            assert_eq!(
                error.message,
                format!("Tool \"delete-file\" not found. Available tools: {served}.")
            );
        }
    }
    assert!(
        runtime.inbox().waiting().await.unwrap().is_empty(),
        "the refused call was never made"
    );
}
