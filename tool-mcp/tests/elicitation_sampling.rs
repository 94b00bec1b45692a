//! Asking the client: approval and suspension over elicitation (an
//! `elicitation/create` request, or an `input_required` result on
//! 2026-07-28), a tool's own questions through `ctx.mcp()`, and the
//! client's model through sampling.

mod common;

use std::sync::Arc;

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
