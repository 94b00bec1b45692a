//! The webhook sink against a real receiver verifying with the crate's
//! verifier: delivery, rotation, what each answer means (alone and through
//! a runtime's dispatcher), bounded waits and reads, replays, and the
//! setups refused.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::HeaderMap;
use serde_json::json;
use standardwebhooks::Webhook;
use tool_notify::NotifyError;
use tool_notify::webhook::{Verifier, VerifyError, WebhookSink};
use tool_runtime::store::{DeliveryState, Notification, NotificationKind, OutboxQuery};
use tool_runtime::{NotificationSink, RetryPolicy, SinkLimits};

use crate::receiver::{Answer, Receiver};
use crate::{approval_runtime, ask_refund, refund_input};

const NEW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

fn notification() -> Notification {
    Notification::new(
        NotificationKind::ApprovalRequested,
        "c1",
        "refund",
        json!({ "input": refund_input(), "requirement": { "principals": 1 } }),
    )
}

fn sink(name: &str, url: &str, secrets: &[&str]) -> WebhookSink {
    WebhookSink::new(name, url, secrets).unwrap()
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .try_into()
        .unwrap()
}

/// The headers a sink sends, for a request signed with `secret` at
/// `timestamp`.
fn signed_headers(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> HeaderMap {
    let signature = Webhook::new(secret)
        .unwrap()
        .sign(id, timestamp, body)
        .unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("webhook-id", id.parse().unwrap());
    headers.insert("webhook-timestamp", timestamp.into());
    headers.insert("webhook-signature", signature.parse().unwrap());
    headers
}

#[tokio::test]
async fn a_delivered_notification_is_signed_and_verifies() {
    let receiver = Receiver::start(&[NEW_SECRET], []).await;
    let sent = notification();

    sink("ops", &receiver.url, &[NEW_SECRET])
        .deliver(&sent)
        .await
        .unwrap();

    let received = receiver.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.verified, Ok(sent.clone()));
    assert_eq!(request.headers["webhook-id"], sent.id.as_str());
    assert_eq!(request.headers["content-type"], "application/json");
    let timestamp: i64 = request.headers["webhook-timestamp"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((unix_now() - timestamp).abs() <= 2, "{timestamp}");
    assert!(
        request.headers["webhook-signature"]
            .to_str()
            .unwrap()
            .starts_with("v1,")
    );
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["type"], "approval.requested");
    assert_eq!(body["callId"], "c1");
    assert_eq!(body["data"]["input"]["amount"], 1200);
}

#[tokio::test]
async fn a_rotating_sink_verifies_with_the_old_or_the_new_secret() {
    let knows_old = Receiver::start(&[OLD_SECRET], []).await;
    let knows_new = Receiver::start(&[NEW_SECRET], []).await;
    let sent = notification();

    for receiver in [&knows_old, &knows_new] {
        sink("ops", &receiver.url, &[NEW_SECRET, OLD_SECRET])
            .deliver(&sent)
            .await
            .unwrap();
        let received = receiver.received();
        assert_eq!(received[0].verified, Ok(sent.clone()));
        let signatures = received[0].headers["webhook-signature"].to_str().unwrap();
        assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
    }

    // Once the old secret is dropped, a receiver knowing only it refuses.
    let refused = sink("ops", &knows_old.url, &[NEW_SECRET])
        .deliver(&notification())
        .await
        .unwrap_err();
    assert!(!refused.retryable());
    assert_eq!(refused.to_string(), "HTTP 401 Unauthorized");
    assert_eq!(
        knows_old.received()[1].verified,
        Err(VerifyError::Signature)
    );
}

#[tokio::test]
async fn a_server_error_is_tried_again_then_delivered_by_the_dispatcher() {
    let receiver = Receiver::start(&[NEW_SECRET], [Answer::Status(500)]).await;
    let runtime = approval_runtime();
    ask_refund(&runtime, "c1", refund_input()).await;
    let quick = RetryPolicy::default()
        .backoff_between(Duration::from_millis(10), Duration::from_millis(10));
    let dispatcher = runtime
        .dispatcher()
        .sink(sink("ops", &receiver.url, &[NEW_SECRET]))
        .retry(quick)
        .build()
        .unwrap();

    let first = dispatcher.dispatch_once().await.unwrap();
    assert_eq!((first.claimed, first.retried), (1, 1), "{first:?}");
    let waiting = runtime.inbox().outbox(OutboxQuery::all()).await.unwrap();
    assert_eq!(
        waiting[0].last_error.as_deref(),
        Some("ops: HTTP 500 Internal Server Error")
    );

    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = dispatcher.dispatch_once().await.unwrap();
    assert_eq!((second.claimed, second.delivered), (1, 1), "{second:?}");

    let entries = runtime.inbox().outbox(OutboxQuery::all()).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert!(matches!(entries[0].state, DeliveryState::Delivered { .. }));
    assert_eq!(entries[0].attempts, 2);
    assert_eq!(entries[0].delivered_to, ["ops"]);
    // Both attempts carried the same notification, and both verified.
    let verified = receiver.verified();
    assert_eq!(verified.len(), 2);
    assert_eq!(verified[0], verified[1]);
    assert_eq!(verified[0].id, entries[0].notification.id);
    assert_eq!(verified[0].kind, NotificationKind::ApprovalRequested);
    assert_eq!(verified[0].data["input"]["amount"], 1200);
}

#[tokio::test]
async fn gone_makes_the_notification_dead_at_once() {
    let receiver = Receiver::start(&[NEW_SECRET], [Answer::Status(410)]).await;
    let runtime = approval_runtime();
    ask_refund(&runtime, "c1", refund_input()).await;
    let dispatcher = runtime
        .dispatcher()
        .sink(sink("ops", &receiver.url, &[NEW_SECRET]))
        .build()
        .unwrap();

    let report = dispatcher.dispatch_once().await.unwrap();
    assert_eq!((report.claimed, report.dead), (1, 1), "{report:?}");

    let dead = runtime
        .inbox()
        .outbox(OutboxQuery::all().state("dead"))
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].notification.call_id, "c1");
    assert_eq!(dead[0].attempts, 1);
    assert_eq!(dead[0].last_error.as_deref(), Some("ops: HTTP 410 Gone"));
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn a_redirect_is_a_permanent_failure_and_not_followed() {
    let receiver = Receiver::start(&[NEW_SECRET], [Answer::Redirect]).await;

    let refused = sink("ops", &receiver.url, &[NEW_SECRET])
        .deliver(&notification())
        .await
        .unwrap_err();

    assert!(!refused.retryable());
    assert_eq!(
        refused.to_string(),
        "HTTP 302 Found to /moved: redirects are not followed"
    );
    assert_eq!(receiver.moved_hits(), 0);
}

#[tokio::test]
async fn a_hanging_receiver_times_out_and_another_sink_still_delivers() {
    let hanging = Receiver::start(&[NEW_SECRET], [Answer::Hang]).await;
    let answering = Receiver::start(&[NEW_SECRET], []).await;
    let runtime = approval_runtime();
    ask_refund(&runtime, "c1", refund_input()).await;
    // The sink's own timeout is well inside the dispatcher's limit for it,
    // so that the sink's message is the one recorded.
    let slow = sink("slow", &hanging.url, &[NEW_SECRET]).timeout(Duration::from_millis(300));
    let dispatcher = runtime
        .dispatcher()
        .sink_with(slow, SinkLimits::default().timeout(Duration::from_secs(5)))
        .sink(sink("fast", &answering.url, &[NEW_SECRET]))
        .build()
        .unwrap();

    let started = Instant::now();
    let report = dispatcher.dispatch_once().await.unwrap();
    let took = started.elapsed();

    assert_eq!((report.claimed, report.retried), (1, 1), "{report:?}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let entries = runtime.inbox().outbox(OutboxQuery::all()).await.unwrap();
    assert_eq!(entries[0].delivered_to, ["fast"]);
    assert_eq!(
        entries[0].last_error.as_deref(),
        Some("slow: no answer within 300ms")
    );
    assert_eq!(answering.verified().len(), 1);
    assert_eq!(hanging.verified().len(), 1);
}

#[tokio::test]
async fn a_huge_error_body_is_neither_read_whole_nor_waited_for() {
    const TEN_MIB: usize = 10 * 1024 * 1024;
    let receiver = Receiver::start(
        &[NEW_SECRET],
        [Answer::SlowBody {
            status: 503,
            bytes: TEN_MIB,
        }],
    )
    .await;
    // A timeout far beyond the body's 3.2 s: it is not what ends the read.
    let sink = sink("ops", &receiver.url, &[NEW_SECRET]).timeout(Duration::from_secs(30));

    let started = Instant::now();
    let failed = sink.deliver(&notification()).await.unwrap_err();
    let took = started.elapsed();

    assert!(failed.retryable());
    let message = failed.to_string();
    assert!(
        message.starts_with("HTTP 503 Service Unavailable: xxxx"),
        "{message:.80}"
    );
    assert_eq!(
        message.len(),
        "HTTP 503 Service Unavailable: ".len() + 1024,
        "the excerpt is the first KiB"
    );
    assert!(took < Duration::from_secs(2), "took {took:?}");
    // The connection was closed, not drained: the server stopped streaming
    // (0.5 s more of it would be 1.6 MiB; measured: one 64 KiB chunk).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let streamed = receiver.streamed_bytes();
    assert!(
        streamed <= 256 * 1024,
        "the server streamed {streamed} bytes"
    );
}

#[tokio::test]
async fn no_connection_is_tried_again_without_the_url() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/hook?token=s3cr3t");

    let failed = sink("ops", &url, &[NEW_SECRET])
        .deliver(&notification())
        .await
        .unwrap_err();

    assert!(failed.retryable());
    let message = failed.to_string();
    assert!(message.contains("error sending request"), "{message}");
    assert!(!message.contains("s3cr3t"), "{message}");
}

#[tokio::test]
async fn the_verifier_refuses_a_replay() {
    let receiver = Receiver::start(&[NEW_SECRET], []).await;
    let sent = notification();
    sink("ops", &receiver.url, &[NEW_SECRET])
        .deliver(&sent)
        .await
        .unwrap();
    let captured = receiver.received().remove(0);

    // The same request again, as whoever captured it would send it.
    let mut replay = reqwest::Client::new().post(&receiver.url);
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        replay = replay.header(name, captured.headers[name].clone());
    }
    let answer = replay.body(captured.body.clone()).send().await.unwrap();

    assert_eq!(answer.status(), 200, "acknowledged, not acted on again");
    assert_eq!(
        receiver.received()[1].verified,
        Err(VerifyError::Replayed {
            id: sent.id.clone()
        })
    );
    assert_eq!(receiver.verified(), [sent]);
}

#[test]
fn the_verifier_refuses_stale_forged_and_mismatched_requests() {
    let sent = notification();
    let body = serde_json::to_vec(&sent).unwrap();
    let verifier = Verifier::new([NEW_SECRET]).unwrap();
    let now = unix_now();

    let old = signed_headers(NEW_SECRET, &sent.id, now - 600, &body);
    assert!(matches!(
        verifier.verify(&old, &body),
        Err(VerifyError::Stale {
            age_secs: 600..,
            tolerance_secs: 300
        })
    ));
    let ahead = signed_headers(NEW_SECRET, &sent.id, now + 600, &body);
    assert!(matches!(
        verifier.verify(&ahead, &body),
        Err(VerifyError::Stale {
            age_secs: ..=-599,
            ..
        })
    ));
    let narrow = Verifier::new([NEW_SECRET])
        .unwrap()
        .tolerance(Duration::from_secs(10));
    let minute_old = signed_headers(NEW_SECRET, &sent.id, now - 60, &body);
    assert!(matches!(
        narrow.verify(&minute_old, &body),
        Err(VerifyError::Stale {
            tolerance_secs: 10,
            ..
        })
    ));

    let forged = signed_headers(OLD_SECRET, &sent.id, now, &body);
    assert_eq!(verifier.verify(&forged, &body), Err(VerifyError::Signature));
    let headers = signed_headers(NEW_SECRET, &sent.id, now, &body);
    let mut tampered = body.clone();
    tampered.extend_from_slice(b" ");
    assert_eq!(
        verifier.verify(&headers, &tampered),
        Err(VerifyError::Signature)
    );
    let other_id = signed_headers(NEW_SECRET, "ntf_other", now, &body);
    assert!(matches!(
        verifier.verify(&other_id, &body),
        Err(VerifyError::Body { .. })
    ));
    let not_json = signed_headers(NEW_SECRET, &sent.id, now, b"<html>");
    assert!(matches!(
        verifier.verify(&not_json, b"<html>"),
        Err(VerifyError::Body { .. })
    ));
    let mut unsigned = headers.clone();
    unsigned.remove("webhook-signature");
    assert_eq!(
        verifier.verify(&unsigned, &body),
        Err(VerifyError::Header {
            name: "webhook-signature",
            problem: "is missing"
        })
    );
    let mut long_id = headers.clone();
    long_id.insert("webhook-id", "n".repeat(300).parse().unwrap());
    assert!(matches!(
        verifier.verify(&long_id, &body),
        Err(VerifyError::Header {
            name: "webhook-id",
            ..
        })
    ));

    // None of the refused requests was remembered: the genuine one passes.
    assert_eq!(verifier.verify(&headers, &body), Ok(sent));
}

#[test]
fn the_verifier_remembers_a_bounded_number_of_ids() {
    let verifier = Verifier::new([NEW_SECRET]).unwrap().capacity(1);
    let now = unix_now();
    let request = |notification: &Notification| {
        let body = serde_json::to_vec(notification).unwrap();
        (
            signed_headers(NEW_SECRET, &notification.id, now, &body),
            body,
        )
    };
    let (first, second) = (notification(), notification());
    let (first_headers, first_body) = request(&first);
    let (second_headers, second_body) = request(&second);

    assert!(verifier.verify(&first_headers, &first_body).is_ok());
    assert_eq!(
        verifier.verify(&second_headers, &second_body),
        Err(VerifyError::Busy { capacity: 1 })
    );
    // Forgotten (its receiver failed to act on it), the first is taken again.
    verifier.forget(&first.id);
    assert_eq!(
        verifier.verify(&first_headers, &first_body),
        Ok(first.clone())
    );
    verifier.forget(&first.id);
    assert_eq!(
        verifier.verify(&second_headers, &second_body),
        Ok(second.clone())
    );
    assert_eq!(
        verifier.verify(&second_headers, &second_body),
        Err(VerifyError::Replayed { id: second.id })
    );
}

#[test]
fn misconfigured_sinks_and_verifiers_are_refused() {
    let url = "https://ops.example.com/hooks";
    let refused =
        |name: &str, url: &str, secrets: &[&str]| WebhookSink::new(name, url, secrets).unwrap_err();

    assert_eq!(refused("", url, &[NEW_SECRET]), NotifyError::EmptyName);
    assert_eq!(
        refused("ops", "ftp://ops.example.com/", &[NEW_SECRET]).to_string(),
        "the webhook URL has the scheme \"ftp\", not http or https"
    );
    assert_eq!(
        refused("ops", "ops.example.com/hooks", &[NEW_SECRET]).to_string(),
        "the webhook URL does not parse: relative URL without a base"
    );
    assert_eq!(refused("ops", url, &[]), NotifyError::NoSecret);
    assert_eq!(
        refused("ops", url, &[NEW_SECRET, "whsec_not base64!"]).to_string(),
        "secret 2 (counting from 1) is not base64 after whsec_"
    );
    assert_eq!(
        refused("ops", url, &["C2FVsBQIhrscChlQIMV+b5sSYspob7oD"]).to_string(),
        "secret 1 (counting from 1) does not start with whsec_"
    );
    assert_eq!(
        refused("ops", url, &["whsec_"]).to_string(),
        "secret 1 (counting from 1) has no key after whsec_"
    );
    let no_secret: [&str; 0] = [];
    assert_eq!(Verifier::new(no_secret).unwrap_err(), NotifyError::NoSecret);
    assert!(matches!(
        Verifier::new(["whsec_%%%"]).unwrap_err(),
        NotifyError::Secret { position: 1, .. }
    ));
    // Nothing secret in the sink's Debug either: the origin, not the path.
    let sink = sink("ops", "https://ops.example.com/hooks/t0ken", &[NEW_SECRET]);
    let debug = format!("{sink:?}");
    assert!(debug.contains("https://ops.example.com"), "{debug}");
    assert!(
        !debug.contains("t0ken") && !debug.contains("MfKQ"),
        "{debug}"
    );
}
