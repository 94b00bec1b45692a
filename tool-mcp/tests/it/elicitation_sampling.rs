//! Asking the client: approval and suspension over elicitation (an
//! `elicitation/create` request, or an `input_required` result on
//! 2026-07-28), a tool's own questions through `ctx.mcp()`, and the
//! client's model through sampling.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ElicitResult, ElicitationAction};
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{CallContext, Tool, ToolContext, ToolError, tool};
use tool_mcp::{
    ElicitFuture, Elicitation, Elicitor, McpContext, McpServer, McpToolContext as _, PENDING_META,
};
use tool_runtime::Runtime;

use common::client::*;
use common::*;

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

/// Lists the client's roots
#[tool]
pub async fn where_to_work(ctx: ToolContext) -> Result<String, ToolError> {
    let mcp = ctx.mcp().ok_or_else(|| ToolError::new("no MCP client"))?;
    let roots = mcp.roots().await?;
    let named = |root: &tool_mcp::Root| {
        format!(
            "{} ({})",
            root.uri,
            root.name.as_deref().unwrap_or("unnamed")
        )
    };
    Ok(roots.iter().map(named).collect::<Vec<_>>().join(", "))
}

/// A tool asks the client's roots (`ctx.mcp().roots()`): with a
/// `roots/list` request before 2026-07-28, in an `input_required` round on
/// 2026-07-28; a 2026-07-28 client that did not declare roots gets an
/// error naming them.
#[tokio::test]
async fn a_tool_asks_the_clients_roots_on_either_protocol() {
    let runtime = || Runtime::builder().tool(WhereToWorkTool).build().unwrap();
    for modern in [false, true] {
        let roots = TestClient {
            roots: true,
            ..TestClient::default()
        };
        let client = connect(runtime(), roots, modern).await;
        let listed = call(&client, "where_to_work", json!({})).await.unwrap();
        assert_eq!(
            text(&listed),
            "file:///work (Work)",
            "modern: {modern}: {listed:?}"
        );
    }
    let client = connect(
        runtime(),
        TestClient::answering(|_, _| accept(json!({}))),
        true,
    )
    .await;
    let refused = call(&client, "where_to_work", json!({})).await.unwrap_err();
    let ServiceError::McpError(error) = refused else {
        panic!("expected a JSON-RPC error, got {refused:?}")
    };
    assert_eq!(error.code.0, -32021, "{error:?}");
    assert!(
        error.data.unwrap()["requiredCapabilities"]
            .get("roots")
            .is_some()
    );
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
            runtime.inbox().waiting().await.unwrap().is_empty(),
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

    let stored = runtime.inbox().waiting().await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].call.head.call_id, call_id);
    let outcome = runtime.approve(&call_id).await.unwrap();
    assert_eq!(outcome.output(), Some(&json!("deleted /tmp/x")));
}

#[tokio::test]
async fn an_input_required_retry_is_accepted_after_a_restart_and_on_another_instance() {
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("tool-runtime-mcp-state-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
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
    assert_eq!(on_file().inbox().waiting().await.unwrap().len(), 1);

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
    assert!(on_file().inbox().waiting().await.unwrap().is_empty());
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
        assert!(runtime.inbox().waiting().await.unwrap().is_empty());
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

    // A client before 2026-07-28 that cannot show forms: the tool gets no
    // MCP context. (On 2026-07-28 it always gets one: see
    // `a_2026_client_without_the_capability_gets_an_error_naming_it`.)
    let client = connect(runtime(), TestClient::default(), false).await;
    let result = call(&client, "pick-seat", json!({ "flight": "AF123" }))
        .await
        .unwrap();
    assert_eq!(text(&result), "AF123: nobody to ask, seat unassigned");
}

// --- asking on 2026-07-28: input_required rounds (SEP-2322) -----------------

/// The first point: a foreground tool that elicits or samples works
/// with a 2026-07-28 client that declared the capability. rmcp's client
/// answers each `input_required` result through its handler and retries.
#[tokio::test]
async fn a_running_tool_asks_its_2026_client_through_input_required_rounds() {
    let client_handler = TestClient::answering(|message, _schema| {
        assert_eq!(message, "Which seat on AF123?");
        accept(json!({ "seat": "12A", "window": true }))
    });
    let asked = Arc::clone(&client_handler.asked);
    let client = connect(runtime(), client_handler, true).await;
    let picked = call(&client, "pick-seat", json!({ "flight": "AF123" }))
        .await
        .unwrap();
    assert_eq!(text(&picked), "AF123: seat 12A (window)");
    assert_eq!(asked.lock().unwrap().len(), 1);

    let sampling = TestClient {
        sampling: true,
        ..TestClient::default()
    };
    let runtime = Runtime::builder().tool(AskModelTool).build().unwrap();
    let client = connect(runtime, sampling, true).await;
    let answered = call(&client, "ask_model", json!({ "question": "ready?" }))
        .await
        .unwrap();
    assert_eq!(text(&answered), "echo: ready?", "{answered:?}");
}

/// The "where a client truly lacks the capability": the error says
/// what is missing (`requiredCapabilities`) and on which protocol, not that
/// the client cannot be asked at all.
#[tokio::test]
async fn a_2026_client_without_the_capability_gets_an_error_naming_it() {
    let cases = [
        (
            runtime(),
            "pick-seat",
            json!({ "flight": "AF123" }),
            "elicitation",
            "form elicitation",
        ),
        (
            Runtime::builder().tool(AskModelTool).build().unwrap(),
            "ask_model",
            json!({ "question": "ready?" }),
            "sampling",
            "sampling",
        ),
    ];
    for (runtime, tool, arguments, capability, named) in cases {
        let client = connect(runtime, TestClient::default(), true).await;
        let refused = call(&client, tool, arguments).await.unwrap_err();
        let ServiceError::McpError(error) = refused else {
            panic!("expected a JSON-RPC error, got {refused:?}")
        };
        assert_eq!(error.code.0, -32021, "{error:?}");
        let required = &error.data.as_ref().unwrap()["requiredCapabilities"];
        assert!(required.get(capability).is_some(), "{tool}: {required}");
        assert!(
            error.message.contains(named) && error.message.contains("protocol 2026-07-28"),
            "{tool}: {}",
            error.message
        );
    }
}

/// Before 2026-07-28 too, a tool that asks for what its client did not
/// declare learns what is missing and on which protocol (a tool's error,
/// as it always was on these protocols).
#[tokio::test]
async fn a_client_before_2026_without_the_capability_is_named_in_the_tools_error() {
    let runtime = Runtime::builder().tool(AskModelTool).build().unwrap();
    let forms_only = TestClient::answering(|_, _| accept(json!({})));
    let client = connect(runtime, forms_only, false).await;
    let result = call(&client, "ask_model", json!({ "question": "ready?" }))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains(
            "the client did not declare sampling (`sampling`) in its capabilities (protocol 2025-11-25)"
        ),
        "{}",
        text(&result)
    );
}

/// A tool that asks who travels, then a seat and its model's tip at once,
/// counting its runs.
fn plan_trip(runs: Arc<AtomicUsize>) -> Tool {
    let form = |property: &str| {
        json!({
            "type": "object",
            "properties": { property: { "type": "string" } },
            "required": [property]
        })
    };
    Tool::builder("plan-trip")
        .description("Plans a trip, asking who travels, a seat and a tip")
        .execute(move |input, ctx| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let mcp = ctx.mcp().ok_or_else(|| ToolError::new("no MCP client"))?;
                let who = mcp.with_key("who");
                let name = match who.elicit("Who travels?", form("name")).await? {
                    Elicitation::Accepted(content) => content["name"].as_str().unwrap().to_owned(),
                    _ => "nobody".to_owned(),
                };
                let city = input["city"].as_str().unwrap_or("nowhere").to_owned();
                let (seat, tip) = tokio::join!(
                    mcp.elicit(format!("Which seat for {name}?"), form("seat")),
                    mcp.sample(format!("A tip for {city}"), 50)
                );
                let seat = match seat? {
                    Elicitation::Accepted(content) => content["seat"].as_str().unwrap().to_owned(),
                    _ => "any".to_owned(),
                };
                Ok::<_, ToolError>(json!(format!("{name} in {city}: seat {seat}, {}", tip?)))
            }
        })
        .build()
        .unwrap()
}

/// SEP-2322's rounds, driven by hand: each question without an answer ends
/// the call with an `input_required` result (questions asked at once in one
/// round), the retry runs the tool again from the start with the answers,
/// those of the earlier rounds carried by a signed `requestState`; a
/// tampered state, or an answer of the wrong shape, is an error naming it;
/// answers nobody asked for are ignored.
#[tokio::test]
async fn a_2026_tool_runs_again_each_round_with_the_answers_its_state_carries() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = Runtime::builder()
        .tool(plan_trip(Arc::clone(&runs)))
        .build()
        .unwrap();
    let client_handler = TestClient {
        sampling: true,
        ..TestClient::answering(|_, _| accept(json!({})))
    };
    let client = connect(runtime, client_handler, true).await;
    let request = |responses: Value, state: Option<&str>| {
        let mut params = CallToolRequestParams::new("plan-trip")
            .with_arguments(json!({ "city": "Lisbon" }).as_object().unwrap().clone());
        if let Value::Object(responses) = responses {
            params = params.with_input_responses(responses.into_iter().collect());
        }
        if let Some(state) = state {
            params = params.with_request_state(state.to_owned());
        }
        params
    };
    let asked = |response: CallToolResponse| match response {
        CallToolResponse::InputRequired(asked) => {
            let requests = serde_json::to_value(asked.input_requests.unwrap()).unwrap();
            (requests, asked.request_state.expect("a request state"))
        }
        other => panic!("expected input_required, got {other:?}"),
    };

    // Round 1: who travels.
    let (requests, first) = asked(
        client
            .call_tool_once(request(Value::Null, None))
            .await
            .unwrap(),
    );
    assert_eq!(requests.as_object().unwrap().len(), 1, "{requests}");
    assert_eq!(requests["who"]["method"], "elicitation/create");
    assert_eq!(requests["who"]["params"]["message"], "Who travels?");

    // Round 2: the seat and the tip, asked at once.
    let who = json!({ "who": { "action": "accept", "content": { "name": "Ada" } } });
    let (requests, second) = asked(
        client
            .call_tool_once(request(who.clone(), Some(&first)))
            .await
            .unwrap(),
    );
    assert_eq!(requests.as_object().unwrap().len(), 2, "{requests}");
    assert_eq!(
        requests["elicit-1"]["params"]["message"],
        "Which seat for Ada?"
    );
    assert_eq!(requests["sample-2"]["method"], "sampling/createMessage");
    assert_ne!(second, first);

    // A tampered state is refused before the tool runs.
    let tampered = format!("{second}-TAMPERED");
    let refused = client
        .call_tool_once(request(json!({}), Some(&tampered)))
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = refused else {
        panic!("expected a JSON-RPC error, got {refused:?}")
    };
    assert_eq!(error.code.0, -32602, "{error:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // Round 3: the answers of round 2 only (`who` travels in the state),
    // with one nobody asked for.
    let answers = json!({
        "elicit-1": { "action": "accept", "content": { "seat": "12A" } },
        "sample-2": {
            "role": "assistant",
            "content": { "type": "text", "text": "eat pasteis" },
            "model": "test-model"
        },
        "unasked": { "action": "accept", "content": {} }
    });
    let done = client
        .call_tool_once(request(answers, Some(&second)))
        .await
        .unwrap();
    let CallToolResponse::Complete(done) = done else {
        panic!("expected a result, got {done:?}")
    };
    assert_eq!(text(&done), "Ada in Lisbon: seat 12A, eat pasteis");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "the tool ran once per round"
    );

    // An answer of the wrong shape: an error naming its key and the shape.
    let refused = client
        .call_tool_once(request(json!({ "who": 12345 }), None))
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = refused else {
        panic!("expected a JSON-RPC error, got {refused:?}")
    };
    assert_eq!(error.code.0, -32602, "{error:?}");
    assert!(
        error.message.contains("inputResponses[\"who\"]")
            && error.message.contains("an elicitation result"),
        "{}",
        error.message
    );
}

/// The same rounds over streamable HTTP, with raw requests as a 2026-07-28
/// client sends them (`_meta` on each request, no session).
#[tokio::test]
async fn a_2026_tool_asks_over_streamable_http_and_its_retry_completes() {
    let server = McpServer::new(runtime())
        .serve_http(tool_mcp::HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .await
        .unwrap();
    let (addr, host) = (server.local_addr(), server.local_addr().to_string());
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "pick-seat"),
    ];
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } }
    });
    let first = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "pick-seat", "arguments": { "flight": "AF123" }, "_meta": meta }
    });
    let (status, _, message) = common::http::post(addr, &host, &headers, first).await;
    assert!(status.contains("200"), "{status}");
    let result = &message.expect("a response")["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let question = &result["inputRequests"]["elicit-1"];
    assert_eq!(question["method"], "elicitation/create", "{result}");
    assert_eq!(question["params"]["message"], "Which seat on AF123?");
    let retry = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {
            "name": "pick-seat",
            "arguments": { "flight": "AF123" },
            "inputResponses": {
                "elicit-1": { "action": "accept", "content": { "seat": "3C", "window": false } }
            },
            "requestState": result["requestState"],
            "_meta": meta
        }
    });
    let (status, _, message) = common::http::post(addr, &host, &headers, retry).await;
    assert!(status.contains("200"), "{status}");
    let result = &message.expect("a response")["result"];
    assert_eq!(
        result["content"][0]["text"], "AF123: seat 3C (aisle)",
        "{result}"
    );
    server.shutdown();
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
    assert_eq!(runtime.inbox().waiting().await.unwrap().len(), 1);
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
