//! Slack's interactivity endpoint through the router: a signed button press
//! decides as the mapped principal; a forged, stale or unmapped press does
//! not, and is said so (the unmapped one on the record).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tool_core::{Tool, ToolError};
use tool_inbox::slack::{
    APPROVE_ACTION_ID, DECLINE_ACTION_ID, SlackActions, button_value, signature,
};
use tool_inbox::{BearerTokens, Inbox, Principal};
use tool_runtime::store::{AuditKind, AuditQuery};
use tool_runtime::{Runtime, ToolCall};
use tower::ServiceExt as _;

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

fn setup(runs: Arc<AtomicUsize>) -> (Runtime, Router) {
    let refund = Tool::builder("refund")
        .description("Refunds an order")
        .require_approval(true)
        .execute(move |input: Value, _ctx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(input) }
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(refund).build().unwrap();
    let slack = SlackActions::new(SECRET, |user| {
        (user.id == "U2CERLKJA" && user.team_id.as_deref() == Some("T1DC2JH3J"))
            .then(|| Principal::new("alice"))
    });
    let router = Inbox::new(runtime.clone(), BearerTokens::new())
        .slack_actions(slack)
        .router();
    (runtime, router)
}

/// A `block_actions` form as Slack posts it, pressed by `user`.
fn pressed(user: &str, action_id: &str, value: &str) -> String {
    let payload = json!({
        "type": "block_actions",
        "user": { "id": user, "username": "roadrunner", "team_id": "T1DC2JH3J" },
        "team": { "id": "T1DC2JH3J" },
        "actions": [{ "action_id": action_id, "value": value, "type": "button" }],
    });
    serde_urlencoded::to_string([("payload", payload.to_string())]).unwrap()
}

/// The request with Slack's headers, signed with `secret` at `timestamp`.
fn signed(body: &str, secret: &str, timestamp: u64) -> Request<Body> {
    Request::post("/slack/actions")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp.to_string())
        .header(
            "x-slack-signature",
            signature(secret, timestamp, body.as_bytes()),
        )
        .body(Body::from(body.to_owned()))
        .unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

async fn send(router: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_signed_press_decides_as_the_mapped_principal_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (runtime, router) = setup(Arc::clone(&runs));
    runtime
        .call(ToolCall::new("r1", "refund", json!({ "amount": 5 })))
        .await;
    let digest = runtime
        .inbox()
        .stored("r1")
        .await
        .unwrap()
        .unwrap()
        .digest();
    let body = pressed(
        "U2CERLKJA",
        APPROVE_ACTION_ID,
        &button_value("r1", digest.as_str()),
    );
    let (status, answer) = send(&router, signed(&body, SECRET, now())).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["decision"]["status"], "completed", "{answer}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("r1"))
        .await
        .unwrap();
    let decided = log.iter().find(|e| e.kind == AuditKind::Decided).unwrap();
    assert_eq!(decided.principal.as_deref(), Some("alice"));
    // The same press again (Slack retries; a replay within the window): decided already.
    let (status, answer) = send(&router, signed(&body, SECRET, now())).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_forged_stale_or_unmapped_press_decides_nothing() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (runtime, router) = setup(Arc::clone(&runs));
    runtime
        .call(ToolCall::new("r2", "refund", json!({ "amount": 5 })))
        .await;
    let digest = runtime
        .inbox()
        .stored("r2")
        .await
        .unwrap()
        .unwrap()
        .digest();
    let value = button_value("r2", digest.as_str());
    let body = pressed("U2CERLKJA", DECLINE_ACTION_ID, &value);

    let (status, answer) = send(&router, signed(&body, "another-secret", now())).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
    let (status, answer) = send(&router, signed(&body, SECRET, now() - 3600)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
    assert!(
        answer["text"].as_str().unwrap().contains("window"),
        "{answer}"
    );
    let mut unsigned = signed(&body, SECRET, now());
    unsigned.headers_mut().remove("x-slack-signature");
    assert_eq!(send(&router, unsigned).await.0, StatusCode::UNAUTHORIZED);

    let stranger = pressed("U999", APPROVE_ACTION_ID, &value);
    let (status, answer) = send(&router, signed(&stranger, SECRET, now())).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("r2"))
        .await
        .unwrap();
    assert!(
        log.iter()
            .any(|e| e.kind == AuditKind::Refused && e.reason.as_deref().unwrap().contains("U999")),
        "{log:?}"
    );

    let garbled = signed("payload=%7Bnot-json", SECRET, now());
    assert_eq!(send(&router, garbled).await.0, StatusCode::BAD_REQUEST);
    let stale = pressed(
        "U2CERLKJA",
        APPROVE_ACTION_ID,
        &button_value("r2", "sha256:00"),
    );
    assert_eq!(
        send(&router, signed(&stale, SECRET, now())).await.0,
        StatusCode::CONFLICT
    );

    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(
        runtime
            .inbox()
            .stored("r2")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
    // The mapped user's decline goes through.
    let (status, answer) = send(&router, signed(&body, SECRET, now())).await;
    assert_eq!(
        (status, answer["decision"]["status"].as_str()),
        (StatusCode::OK, Some("declined")),
        "{answer}"
    );
}
