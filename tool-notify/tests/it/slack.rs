//! Slack, end to end on 127.0.0.1: the sink posts a request as Block Kit
//! (with the inbox's renderer: Approve and Decline buttons) to a stand-in
//! of Slack's incoming webhook; a press of the button it got, signed as
//! Slack signs (the documented scheme), reaches the inbox's interactivity
//! endpoint and decides as the mapped principal. And what Slack's answers
//! mean for a notification.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value, json};
use tool_inbox::slack::SlackActions;
use tool_inbox::{BearerTokens, Inbox, Principal};
use tool_notify::slack::SlackSink;
use tool_runtime::store::OutboxQuery;

use crate::{approval_runtime, ask_refund, refund_input};

const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

/// A stand-in for Slack's incoming webhook: keeps each payload, answers
/// with `status` and Slack's body for it.
async fn incoming_webhook(
    status: StatusCode,
    body: &'static str,
) -> (String, Arc<Mutex<Vec<Value>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new()
        .route(
            "/services/T000/B000/XXXX",
            post(
                move |State(got): State<Arc<Mutex<Vec<Value>>>>, body_in: String| async move {
                    got.lock()
                        .unwrap()
                        .push(serde_json::from_str(&body_in).unwrap_or(Value::Null));
                    (status, body)
                },
            ),
        )
        .with_state(Arc::clone(&got));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/services/T000/B000/XXXX"), got)
}

/// The inbox of `runtime`, serving Slack's presses, on 127.0.0.1.
async fn inbox(runtime: &tool_runtime::Runtime) -> SocketAddr {
    let slack = SlackActions::new(SIGNING_SECRET, |user| {
        (user.id == "U2CERLKJA").then(|| Principal::new("alice"))
    });
    let app = Inbox::new(runtime.clone(), BearerTokens::new())
        .slack_actions(slack)
        .router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    address
}

/// What Slack posts when `user` presses `button` (an element of a message
/// it was sent), signed as Slack signs: `v0=` HMAC-SHA256 of
/// `v0:{timestamp}:{body}`.
async fn press(inbox: SocketAddr, user: &str, button: &Value) -> (u16, Value) {
    let payload = json!({
        "type": "block_actions",
        "user": { "id": user, "team_id": "T1DC2JH3J" },
        "actions": [{ "action_id": button["action_id"], "value": button["value"], "type": "button" }],
    });
    let body = serde_urlencoded::to_string([("payload", payload.to_string())]).unwrap();
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let signature = tool_inbox::slack::signature(SIGNING_SECRET, timestamp, body.as_bytes());
    let response = reqwest::Client::new()
        .post(format!("http://{inbox}/slack/actions"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp.to_string())
        .header("x-slack-signature", signature)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_posted_to_slack_is_approved_by_its_button() {
    let runtime = approval_runtime();
    let (hook, got) = incoming_webhook(StatusCode::OK, "ok").await;
    let sink = SlackSink::new("slack", &hook)
        .unwrap()
        .render(tool_inbox::slack::message);
    let dispatcher = runtime.dispatcher().sink(sink).build().unwrap();
    ask_refund(&runtime, "r1", refund_input()).await;
    assert_eq!(dispatcher.dispatch_once().await.unwrap().delivered, 1);

    let message = got.lock().unwrap()[0].clone();
    assert_eq!(message["text"], "Approval needed: refund (call r1)");
    let input = message["blocks"][1]["text"]["text"].as_str().unwrap();
    assert!(
        input.contains("&lt;b&gt;urgent&lt;/b&gt; &amp;"),
        "escaped for mrkdwn: {input}"
    );
    let buttons = message["blocks"][2]["elements"].as_array().unwrap().clone();
    assert_eq!(buttons.len(), 2);

    let inbox = inbox(&runtime).await;
    // Someone the application does not map: refused, nothing decided.
    let (status, _) = press(inbox, "U999", &buttons[0]).await;
    assert_eq!(status, 403);
    let (status, answer) = press(inbox, "U2CERLKJA", &buttons[0]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"]["status"], "completed", "{answer}");
    let decided = runtime
        .inbox()
        .outbox(OutboxQuery::all().call("r1"))
        .await
        .unwrap();
    assert_eq!(decided.last().unwrap().notification.data["by"], "alice");

    // The decision's notification goes to Slack too, as one line.
    assert_eq!(dispatcher.dispatch_once().await.unwrap().delivered, 1);
    assert_eq!(
        got.lock().unwrap()[1]["text"],
        "Approved by alice: refund (call r1)"
    );
}

#[tokio::test]
async fn slack_s_answers_decide_retry_or_dead_and_the_default_message_is_text() {
    let runtime = approval_runtime();
    let (limited, _) = incoming_webhook(StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    let dispatcher = runtime
        .dispatcher()
        .sink(SlackSink::new("slack", &limited).unwrap())
        .build()
        .unwrap();
    ask_refund(&runtime, "r2", refund_input()).await;
    assert_eq!(dispatcher.dispatch_once().await.unwrap().retried, 1);

    let other = approval_runtime();
    let (invalid, got) = incoming_webhook(StatusCode::BAD_REQUEST, "invalid_payload").await;
    let dispatcher = other
        .dispatcher()
        .sink(SlackSink::new("slack", &invalid).unwrap())
        .build()
        .unwrap();
    ask_refund(&other, "r3", refund_input()).await;
    assert_eq!(dispatcher.dispatch_once().await.unwrap().dead, 1);
    let dead = &other
        .inbox()
        .outbox(OutboxQuery::all().state("dead"))
        .await
        .unwrap()[0];
    assert!(
        dead.last_error
            .as_deref()
            .unwrap()
            .contains("invalid_payload"),
        "{dead:?}"
    );
    // What the default renderer posted: the subject and the facts.
    let message = got.lock().unwrap()[0].clone();
    assert_eq!(message["text"], "Approval needed: refund (call r3)");
    assert!(
        message["blocks"][0]["text"]["text"]
            .as_str()
            .unwrap()
            .contains("A-17"),
        "{message}"
    );
}
