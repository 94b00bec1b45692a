//! Notifications end to end, in one process on 127.0.0.1: a refund that
//! needs approval is notified to a signed webhook, by email and to Slack;
//! each receiver prints what it got (the webhook verified, the email's
//! subject and parts, Slack's Block Kit); a person presses Approve in
//! "Slack" (a request signed as Slack signs it) and the decision is
//! notified in turn. A decision link is printed too: what a message to
//! bob would carry (the inbox serving it stops with the example).
//!
//! ```sh
//! cargo run -p tool-notify --example notifications
//! ```
//!
//! The receivers stand in for the real ones: a webhook endpoint of yours,
//! an SMTP server, Slack's incoming webhook and its button presses.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tool_core::{Tool, ToolError};
use tool_inbox::slack::SlackActions;
use tool_inbox::{BearerTokens, DecisionLinks, Inbox, LinkAction, Principal};
use tool_notify::email::EmailSink;
use tool_notify::lettre::{AsyncSmtpTransport, Tokio1Executor};
use tool_notify::slack::SlackSink;
use tool_notify::webhook::{Verifier, WebhookSink};
use tool_runtime::store::OutboxQuery;
use tool_runtime::{Digest, Runtime, ToolCall};

const WEBHOOK_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SLACK_SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let refund = Tool::builder("refund")
        .description("Refunds an order")
        .require_approval(true)
        .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()?;
    let runtime = Runtime::builder()
        .tool(refund)
        .notifications(true)
        .build()?;

    // The receivers, and the inbox (decision links, Slack's presses).
    let webhook = serve(
        Router::new()
            .route("/hooks", post(webhook_received))
            .with_state(Arc::new(Verifier::new([WEBHOOK_SECRET])?)),
    )
    .await?;
    let slack = serve(Router::new().route("/services/T0/B0/X", post(slack_received))).await?;
    let smtp = smtp_receiver().await?;
    let inbox_address = reserve().await?;
    let links = DecisionLinks::new(
        [7u8; 32],
        format!("http://{}/inbox", inbox_address.local_addr()?),
    )?;
    let slack_actions = SlackActions::new(SLACK_SIGNING_SECRET, |user| {
        (user.id == "U0ALICE").then(|| Principal::new("alice").in_group("finance"))
    });
    let inbox = Inbox::new(runtime.clone(), BearerTokens::new())
        .decision_links(links.clone())
        .slack_actions(slack_actions)
        .router();
    let inbox_at = inbox_address.local_addr()?;
    let app = Router::new().nest("/inbox", inbox);
    tokio::spawn(async move {
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        let _ = axum::serve(inbox_address, service).await;
    });

    // The sinks, and a dispatcher delivering to all three.
    let webhook = WebhookSink::new(
        "webhook",
        &format!("http://{webhook}/hooks"),
        [WEBHOOK_SECRET],
    )?;
    let mailer = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(smtp)
        .build();
    let email = EmailSink::new(
        "email",
        mailer,
        "Approvals <approvals@example.com>".parse()?,
        |_| vec!["finance@example.com".parse().expect("an address")],
    )?;
    let slack = SlackSink::new("slack", &format!("http://{slack}/services/T0/B0/X"))?
        .render(tool_inbox::slack::message);
    let dispatcher = runtime
        .dispatcher()
        .sink(webhook)
        .sink(email)
        .sink(slack)
        .build()?;

    println!("== a refund of 1,200 asks for approval");
    runtime
        .call(ToolCall::new(
            "r-1",
            "refund",
            json!({ "order": "A-17", "amount": 1200 }),
        ))
        .await;
    let report = dispatcher.dispatch_once().await?;
    println!("   dispatcher: {} delivered", report.delivered);

    let asked = &runtime
        .inbox()
        .outbox(OutboxQuery::all().call("r-1"))
        .await?[0]
        .notification;
    let digest = Digest::new(asked.data["digest"].as_str().unwrap_or_default());
    let link = links.link(
        "r-1",
        &digest,
        &Principal::new("bob"),
        LinkAction::Decline,
        Duration::from_secs(3600),
    );
    println!(
        "== a decision link for bob (opens a confirmation page; the button decides):\n   {link}"
    );

    println!("== alice presses Approve in Slack");
    let button = json!({ "action_id": tool_inbox::slack::APPROVE_ACTION_ID, "value": tool_inbox::slack::button_value("r-1", digest.as_str()) });
    let answer = press(inbox_at, "U0ALICE", &button).await?;
    println!("   the inbox answered Slack: {}", answer["text"]);
    let report = dispatcher.dispatch_once().await?;
    println!("   dispatcher: {} delivered", report.delivered);
    Ok(())
}

/// Serves `app` on a free port of 127.0.0.1; its address.
async fn serve(app: Router) -> std::io::Result<SocketAddr> {
    let listener = reserve().await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(address)
}

async fn reserve() -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind("127.0.0.1:0").await
}

/// The webhook endpoint: verifies, prints.
async fn webhook_received(
    State(verifier): State<Arc<Verifier>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    match verifier.verify(&headers, &body) {
        Ok(notification) => {
            println!(
                "   [webhook] verified {} {} of call {}",
                notification.id,
                notification.kind.as_str(),
                notification.call_id
            );
            StatusCode::NO_CONTENT
        }
        Err(error) => {
            println!("   [webhook] refused: {error}");
            StatusCode::UNAUTHORIZED
        }
    }
}

/// Slack's incoming webhook: prints the message and its buttons.
async fn slack_received(body: String) -> &'static str {
    let message: Value = serde_json::from_str(&body).unwrap_or_default();
    let buttons: Vec<&str> = message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|block| block["elements"].as_array().into_iter().flatten())
        .filter_map(|element| element["text"]["text"].as_str())
        .collect();
    println!("   [slack] {} {buttons:?}", message["text"]);
    "ok"
}

/// An SMTP server that takes every message and prints its subject and
/// parts; its port.
async fn smtp_receiver() -> std::io::Result<u16> {
    let listener = reserve().await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(smtp_session(socket));
        }
    });
    Ok(port)
}

async fn smtp_session(socket: tokio::net::TcpStream) -> std::io::Result<()> {
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 example ESMTP\r\n").await?;
    let mut message: Option<Vec<String>> = None;
    while let Some(line) = lines.next_line().await? {
        if let Some(data) = message.as_mut() {
            if line != "." {
                data.push(line);
                continue;
            }
            let subject = data
                .iter()
                .find(|l| l.starts_with("Subject:"))
                .cloned()
                .unwrap_or_default();
            let parts: Vec<&str> = data
                .iter()
                .filter_map(|l| l.strip_prefix("Content-Type: "))
                .collect();
            println!("   [email] {subject} {parts:?}");
            message = None;
            write.write_all(b"250 queued\r\n").await?;
            continue;
        }
        let verb = line.split(' ').next().unwrap_or("").to_ascii_uppercase();
        let reply = match verb.as_str() {
            "DATA" => {
                message = Some(Vec::new());
                "354 go on"
            }
            "QUIT" => "221 bye",
            _ => "250 OK",
        };
        write.write_all(format!("{reply}\r\n").as_bytes()).await?;
        if verb == "QUIT" {
            return Ok(());
        }
    }
    Ok(())
}

/// A press of `button` by Slack user `user`, posted as Slack posts it.
async fn press(
    inbox: SocketAddr,
    user: &str,
    button: &Value,
) -> Result<Value, Box<dyn std::error::Error>> {
    let payload = json!({ "type": "block_actions", "user": { "id": user }, "actions": [button] });
    let body = serde_urlencoded::to_string([("payload", payload.to_string())])?;
    let timestamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let signature = tool_inbox::slack::signature(SLACK_SIGNING_SECRET, timestamp, body.as_bytes());
    let answer = reqwest::Client::new()
        .post(format!("http://{inbox}/inbox/slack/actions"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp.to_string())
        .header("x-slack-signature", signature)
        .body(body)
        .send()
        .await?;
    Ok(answer.json().await?)
}
