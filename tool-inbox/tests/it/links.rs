//! Decision links through the router: a link from a notification opens a
//! confirmation page that never decides; its button decides once, as the
//! link's principal, on the version it was made for, before it expires;
//! every use is in the audit log.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tool_core::transform::{Target, ToolTransform};
use tool_core::{Tool, ToolError};
use tool_inbox::{BearerTokens, DecisionLinks, Inbox, LinkAction, Principal};
use tool_runtime::store::{AuditKind, AuditQuery, NotificationKind, OutboxQuery};
use tool_runtime::{CallState, Digest, Runtime, ToolCall};
use tower::ServiceExt as _;

const KEY: [u8; 32] = [42; 32];

/// Refunds: two of finance above 1,000; the card hidden from displays.
fn runtime(runs: Arc<AtomicUsize>) -> Runtime {
    let refund = Tool::builder("refund")
        .description("Refunds an order")
        .approval_policy(|input: &Value, _rc: &tool_core::RequestContext| {
            if input["amount"].as_u64().unwrap_or(0) > 1_000 {
                tool_core::ApprovalRequirement::approvals(2).from_group("finance")
            } else {
                tool_core::ApprovalRequirement::required()
            }
        })
        .transform(ToolTransform::new().redact(Target::Display, &["card"]))
        .execute(move |input: Value, _ctx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(json!({ "refunded": input["amount"] })) }
        })
        .build()
        .unwrap();
    Runtime::builder()
        .tool(refund)
        .notifications(true)
        .build()
        .unwrap()
}

fn links() -> DecisionLinks {
    DecisionLinks::new(KEY, "http://inbox.test").unwrap()
}

fn inbox(runtime: &Runtime, links: DecisionLinks) -> Router {
    Inbox::new(
        runtime.clone(),
        BearerTokens::new().token("bob-token", Principal::new("bob").in_group("finance")),
    )
    .decision_links(links)
    .router()
}

/// The path of a link (the router is served at its root).
fn path(link: &str) -> &str {
    link.strip_prefix("http://inbox.test").unwrap()
}

/// The link the notification of `call_id`'s request makes possible: its
/// digest from the notification, as a sink would.
async fn link_for(
    runtime: &Runtime,
    call_id: &str,
    principal: &Principal,
    action: LinkAction,
    valid_for: Duration,
) -> String {
    let outbox = runtime
        .inbox()
        .outbox(OutboxQuery::all().call(call_id))
        .await
        .unwrap();
    let asked = &outbox[0].notification;
    assert_eq!(asked.kind, NotificationKind::ApprovalRequested);
    let digest = Digest::new(asked.data["digest"].as_str().unwrap());
    links().link(call_id, &digest, principal, action, valid_for)
}

async fn send(router: &Router, request: Request<Body>) -> (StatusCode, String, Option<String>) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let policy = response
        .headers()
        .get(header::CONTENT_SECURITY_POLICY)
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned(), policy)
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

fn post(path: &str, form: &str) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(form.to_owned()))
        .unwrap()
}

#[tokio::test]
async fn opening_a_link_never_decides_and_its_button_decides_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(Arc::clone(&runs));
    let router = inbox(&runtime, links());
    runtime
        .call(ToolCall::new(
            "r1",
            "refund",
            json!({ "amount": 300, "card": "4242-secret" }),
        ))
        .await;
    let alice = Principal::new("alice");
    let link = link_for(
        &runtime,
        "r1",
        &alice,
        LinkAction::Approve,
        Duration::from_secs(600),
    )
    .await;

    // Opened (by a mail scanner, a chat preview, the person): a page, no decision.
    for _ in 0..3 {
        let (status, page, policy) = send(&router, get(path(&link))).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(
            page.contains("Approve this call?") && page.contains("alice"),
            "{page}"
        );
        assert!(page.contains("<form method=\"post\">"), "{page}");
        assert!(
            !page.contains("4242-secret"),
            "values only as displayed: {page}"
        );
        assert!(policy.unwrap().contains("form-action 'self'"));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(
        runtime
            .inbox()
            .stored("r1")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );

    // Confirmed: decided as alice.
    let (status, page, _) = send(&router, post(path(&link), "")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("completed"), "{page}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("r1"))
        .await
        .unwrap();
    let decided = log.iter().find(|e| e.kind == AuditKind::Decided).unwrap();
    assert_eq!(decided.principal.as_deref(), Some("alice"));

    // Twice: refused, and said so; nothing runs again.
    let (status, page, _) = send(&router, post(path(&link), "")).await;
    assert!(
        matches!(status, StatusCode::GONE | StatusCode::CONFLICT),
        "{status} {page}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("r1"))
        .await
        .unwrap();
    assert!(
        log.iter()
            .any(|e| e.kind == AuditKind::Refused && e.principal.as_deref() == Some("alice")),
        "{log:?}"
    );
}

#[tokio::test]
async fn a_link_is_refused_to_someone_else_after_expiry_for_another_version_and_when_forged() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(Arc::clone(&runs));
    let router = inbox(&runtime, links());
    let finance = |name: &str| Principal::new(name).in_group("finance");
    for id in ["a", "b", "c"] {
        runtime
            .call(ToolCall::new(
                id,
                "refund",
                json!({ "amount": 5000, "card": "1" }),
            ))
            .await;
    }

    // Bob signed in holds alice's link: refused, audited.
    let alices = link_for(
        &runtime,
        "a",
        &finance("alice"),
        LinkAction::Approve,
        Duration::from_secs(600),
    )
    .await;
    let as_bob = Request::post(path(&alices))
        .header(header::AUTHORIZATION, "Bearer bob-token")
        .body(Body::empty())
        .unwrap();
    let (status, page, _) = send(&router, as_bob).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("a"))
        .await
        .unwrap();
    assert!(
        log.iter().any(|e| e.kind == AuditKind::Refused
            && e.reason.as_deref() == Some("a link of alice used by bob")),
        "{log:?}"
    );
    // Alice's own use counts as one grant of the two it needs.
    let (status, page, _) = send(&router, post(path(&alices), "")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("waits for the others"), "{page}");
    assert_eq!(
        runtime.inbox().approvals("a").await.unwrap().granted,
        ["alice"]
    );

    // Expired: refused, audited.
    let expired = link_for(
        &runtime,
        "b",
        &finance("carol"),
        LinkAction::Approve,
        Duration::ZERO,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (status, page, _) = send(&router, get(path(&expired))).await;
    assert_eq!(status, StatusCode::GONE, "{page}");
    assert!(page.contains("expired"), "{page}");
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("b"))
        .await
        .unwrap();
    assert!(
        log.iter()
            .any(|e| e.kind == AuditKind::Refused && e.reason.as_deref() == Some("link expired"))
    );

    // Another version: the call was declined meanwhile by someone else.
    let stale = link_for(
        &runtime,
        "c",
        &finance("dan"),
        LinkAction::Approve,
        Duration::from_secs(600),
    )
    .await;
    runtime.decline("c", Some("duplicate")).await.unwrap();
    let (status, page, _) = send(&router, post(path(&stale), "")).await;
    assert_eq!(status, StatusCode::GONE, "{page}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // Forged, foreign, cut short, huge: not a link.
    let other_key = DecisionLinks::new([7u8; 32], "http://inbox.test").unwrap();
    let digest = runtime.inbox().stored("b").await.unwrap().unwrap().digest();
    let foreign = other_key.link(
        "b",
        &digest,
        &finance("eve"),
        LinkAction::Approve,
        Duration::from_secs(60),
    );
    let cut = &alices[..alices.len() - 5];
    let huge = format!("/links/{}", "x".repeat(10_000));
    for bad in [path(&foreign), path(cut), huge.as_str(), "/links/%00"] {
        let (status, page, _) = send(&router, post(bad, "")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{bad}: {page}");
    }
    assert!(
        runtime
            .inbox()
            .stored("b")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decline_link_carries_the_reason_and_concurrent_uses_decide_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(Arc::clone(&runs));
    let router = inbox(&runtime, links());
    runtime
        .call(ToolCall::new(
            "d",
            "refund",
            json!({ "amount": 10, "card": "1" }),
        ))
        .await;
    let link = link_for(
        &runtime,
        "d",
        &Principal::new("erin"),
        LinkAction::Decline,
        Duration::from_secs(600),
    )
    .await;
    let (status, page, _) = send(&router, get(path(&link))).await;
    assert!(
        status == StatusCode::OK && page.contains("name=\"reason\""),
        "{page}"
    );
    let uses: Vec<_> = (0..8)
        .map(|_| {
            let (router, path) = (router.clone(), path(&link).to_owned());
            tokio::spawn(async move { send(&router, post(&path, "reason=not+<b>ours</b>")).await })
        })
        .collect();
    let mut done = 0;
    for used in uses {
        let (status, page, _) = used.await.unwrap();
        if status == StatusCode::OK {
            done += 1;
            assert!(page.contains("declined"), "{page}");
        }
    }
    assert_eq!(done, 1, "one use decides");
    let stored = runtime.inbox().stored("d").await.unwrap().unwrap();
    let CallState::Settled { outcome, .. } = stored.state else {
        panic!("{stored:?}")
    };
    assert_eq!(
        serde_json::to_value(outcome).unwrap()["reason"],
        "not <b>ours</b>"
    );
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("d"))
        .await
        .unwrap();
    let refused = log.iter().filter(|e| e.kind == AuditKind::Refused).count();
    assert_eq!(refused, 7, "every other use is on the record: {log:?}");
}

#[tokio::test]
async fn a_link_that_requires_sign_in_decides_only_for_its_principal_signed_in() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    let router = inbox(&runtime, links().require_sign_in(true));
    runtime
        .call(ToolCall::new(
            "s",
            "refund",
            json!({ "amount": 10, "card": "1" }),
        ))
        .await;
    let bob = Principal::new("bob").in_group("finance");
    let link = link_for(
        &runtime,
        "s",
        &bob,
        LinkAction::Approve,
        Duration::from_secs(600),
    )
    .await;
    let (status, _, _) = send(&router, post(path(&link), "")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "nobody signed in");
    let signed_in = Request::post(path(&link))
        .header(header::AUTHORIZATION, "Bearer bob-token")
        .body(Body::empty())
        .unwrap();
    let (status, page, _) = send(&router, signed_in).await;
    assert_eq!(status, StatusCode::OK, "{page}");
}
