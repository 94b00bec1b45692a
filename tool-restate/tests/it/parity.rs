//! The same configuration answers the same `CallOutcome` through Restate
//! as through a `Runtime`: a tool's model-facing form (`to_model_output`),
//! its time limit, its error, and a call of an unknown tool.

use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{ModelOutput, Tool, ToolContext, ToolError};
use tool_restate::{CallRequest, RestateClient, RestateTools};
use tool_runtime::{Runtime, RuntimeBuilder, ToolCall};

use crate::server::Restate;

fn configure() -> RuntimeBuilder {
    let brief = Tool::builder("brief")
        .description("Answers at length, shown briefly")
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(json!({ "rows": input["rows"], "detail": "a long table" }))
        })
        .to_model_output(|output| ModelOutput::text(format!("{} rows", output["rows"])))
        .build()
        .expect("brief");
    let slow = Tool::builder("slow")
        .description("Takes too long")
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok::<_, ToolError>(json!("late"))
            },
        )
        .build()
        .expect("slow");
    let failing = Tool::builder("failing")
        .description("Fails")
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                Err::<Value, _>(ToolError::new("the ledger is closed"))
            },
        )
        .build()
        .expect("failing");
    Runtime::builder()
        .tools([brief, slow, failing])
        .tool_timeout("slow", Duration::from_millis(200))
}

#[tokio::test]
async fn the_same_configuration_answers_the_same_outcomes() {
    let Some(server) = Restate::start().await else {
        return;
    };
    server
        .serve(&RestateTools::new(&server.ingress, configure).expect("tools"))
        .await;
    let client = RestateClient::new(&server.ingress);
    let runtime = configure().build().expect("runtime");

    let cases = [
        ("brief", json!({ "rows": 3 })),
        ("slow", json!({})),
        ("failing", json!({})),
        ("missing", json!({})),
    ];
    for (n, (tool, input)) in cases.into_iter().enumerate() {
        let id = format!("p{n}");
        let here = runtime
            .call(ToolCall::new(id.as_str(), tool, input.clone()))
            .await;
        let there = client
            .call(&id, CallRequest::new(tool, input))
            .await
            .expect("call");
        assert_eq!(there, here, "{tool}");
    }
    // The model-facing form came through.
    let brief = client
        .call("p0", CallRequest::new("brief", json!({ "rows": 3 })))
        .await
        .expect("call");
    assert_eq!(
        brief.to_model_value(),
        json!({ "type": "text", "value": "3 rows" }),
        "{brief:?}"
    );
}
