//! Bad requests through the ingress: each is answered at once with a
//! client error saying what was wrong, nothing is stored, and the service
//! goes on answering good calls.

use std::time::Duration;

use serde_json::json;
use tool_restate::{CallRequest, RestateClient, RestateError, RestateTools};
use tool_runtime::{CallOutcome, Runtime};

use crate::server::Restate;

fn tools(ingress: &str) -> RestateTools {
    RestateTools::new(ingress, || {
        Runtime::builder().tool(crate::tools::pay_echo())
    })
    .expect("tools")
}

/// Posts `body` to `handler` of the call `key`: the status and the body.
async fn post(
    http: &reqwest::Client,
    ingress: &str,
    key: &str,
    handler: &str,
    body: &str,
) -> (u16, String) {
    let response = tokio::time::timeout(
        Duration::from_secs(20),
        http.post(format!("{ingress}/ToolCalls/{key}/{handler}"))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send(),
    )
    .await
    .expect("answered, not hung")
    .expect("the ingress");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn bad_requests_are_refused_with_a_reason_and_nothing_is_stored() {
    let Some(server) = Restate::start().await else {
        return;
    };
    server.serve(&tools(&server.ingress)).await;
    let http = reqwest::Client::new();
    let client = RestateClient::new(&server.ingress);

    for (key, handler, body) in [
        ("m1", "call", "{not json"),
        ("m2", "call", r#"{"toolId": 5, "input": {}}"#),
        ("m3", "call", r#"{"input": {}}"#),
        ("m4", "decide", r#"{"decision": "maybe"}"#),
    ] {
        let (status, text) = post(&http, &server.ingress, key, handler, body).await;
        assert!(
            (400..500).contains(&status),
            "{handler} {body}: {status} {text}"
        );
        assert!(!text.is_empty(), "{handler} {body}: a reason");
        assert_eq!(
            client.get(key).await.expect("get"),
            None,
            "{key} not stored"
        );
    }

    // Arguments nested deeper than any store keeps: refused before it is stored.
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let refused = client.call("m5", CallRequest::new("pay", deep)).await;
    match &refused {
        Ok(CallOutcome::Failed { error }) => {
            assert!(error.message().contains("deep"), "{error:?}")
        }
        Err(RestateError::Refused { status, .. }) => assert!((400..500).contains(status)),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(client.get("m5").await.expect("get"), None);

    // A call id with characters a path escapes, and the service still answers.
    let odd = "a/b c?d";
    let waiting = client
        .call(odd, CallRequest::new("pay", json!({ "amount": 1 })))
        .await
        .expect("call");
    assert!(
        matches!(waiting, CallOutcome::ApprovalRequired { .. }),
        "{waiting:?}"
    );
    assert!(client.get(odd).await.expect("get").is_some());
}
