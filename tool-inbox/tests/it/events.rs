//! The inbox's live stream: items already waiting, new ones (from this
//! runtime at once, from another instance sharing the store by polling)
//! and decided ones, each principal seeing only its own.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tool_core::{RequestContext, Tool, ToolError};
use tool_inbox::{Authorized, BearerTokens, Inbox, Principal};
use tool_runtime::{Runtime, ToolCall};
use tower::ServiceExt as _;

/// One `event:`/`data:` pair of a stream.
#[derive(Debug, PartialEq)]
struct SseEvent {
    event: String,
    data: Value,
}

/// An open event stream, read event by event.
struct EventStream {
    body: Body,
    buffer: String,
}

impl EventStream {
    async fn open(router: &Router, token: &str) -> Result<EventStream, StatusCode> {
        let request = Request::get("/api/events")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        if response.status() != StatusCode::OK {
            return Err(response.status());
        }
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        Ok(EventStream {
            body: response.into_body(),
            buffer: String::new(),
        })
    }

    /// The next event (keep-alive comments skipped), waiting at most 10 s.
    async fn next(&mut self) -> SseEvent {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let field = |name: &str| {
                        block
                            .lines()
                            .find_map(|l| l.strip_prefix(name))
                            .map(str::to_owned)
                    };
                    if let (Some(event), Some(data)) = (field("event: "), field("data: ")) {
                        return SseEvent {
                            event,
                            data: serde_json::from_str(&data).unwrap(),
                        };
                    }
                    continue;
                }
                let frame = self
                    .body
                    .frame()
                    .await
                    .expect("the stream stays open")
                    .unwrap();
                if let Ok(data) = frame.into_data() {
                    self.buffer.push_str(std::str::from_utf8(&data).unwrap());
                }
            }
        })
        .await
        .expect("an event within 10 s")
    }
}

fn tool() -> Tool {
    Tool::builder("transfer")
        .description("Moves money")
        .require_approval(true)
        .execute(|_input: Value, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
        .build()
        .unwrap()
}

fn call(id: &str, team: &str) -> ToolCall {
    ToolCall::new(id, "transfer", json!({ "amount": 1 }))
        .with_request_context(RequestContext::new().with("team", team))
}

fn teams(runtime: &Runtime) -> Inbox<impl tool_inbox::Authenticate> {
    let auth = Authorized::new(
        BearerTokens::new()
            .token("red", Principal::new("red"))
            .token("blue", Principal::new("blue")),
        |principal, item, _action| {
            item.head
                .request_context
                .get("team")
                .and_then(Value::as_str)
                == Some(principal.id())
        },
    );
    Inbox::new(runtime.clone(), auth)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_sends_waiting_new_and_settled_items_of_its_principal_only() {
    let runtime = Runtime::builder().tool(tool()).build().unwrap();
    runtime.call(call("r1", "red")).await;
    runtime.call(call("b1", "blue")).await;
    // A long interval: what follows shows up through this runtime's events.
    let router = teams(&runtime)
        .poll_interval(Duration::from_secs(3600))
        .router();

    let mut red = EventStream::open(&router, "red").await.unwrap();
    let mut blue = EventStream::open(&router, "blue").await.unwrap();
    let first = red.next().await;
    assert_eq!(
        (first.event.as_str(), &first.data["callId"]),
        ("item", &json!("r1"))
    );
    assert_eq!(first.data["tool"]["id"], "transfer");
    // The first page ends with who reads and where the list goes on.
    let ready = red.next().await;
    assert_eq!(
        (ready.event.as_str(), &ready.data),
        ("ready", &json!({ "principal": "red", "next": null }))
    );
    assert_eq!(blue.next().await.data["callId"], "b1");
    assert_eq!(blue.next().await.event, "ready");

    runtime.call(call("r2", "red")).await;
    runtime.call(call("b2", "blue")).await;
    assert_eq!(
        red.next().await.data["callId"],
        "r2",
        "blue's b2 is not sent to red"
    );
    runtime.approve("r1").await.unwrap();
    let settled = red.next().await;
    // Approved without a decider: no audit entry says by whom.
    assert_eq!(
        (settled.event.as_str(), &settled.data),
        (
            "settled",
            &json!({ "callId": "r1", "action": null, "by": null, "reason": null })
        )
    );
    assert_eq!(blue.next().await.data["callId"], "b2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_of_another_instance_show_up_by_polling_the_shared_store() {
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("tool-inbox-events-")
        .tempdir()
        .unwrap();
    let path = tmp.path().join("calls.sqlite");
    let serving = Runtime::builder()
        .tool(tool())
        .sqlite_store(&path)
        .build()
        .unwrap();
    let other = Runtime::builder()
        .tool(tool())
        .sqlite_store(&path)
        .build()
        .unwrap();
    let router = teams(&serving)
        .poll_interval(Duration::from_millis(50))
        .router();
    let mut red = EventStream::open(&router, "red").await.unwrap();
    assert_eq!(red.next().await.event, "ready");

    // Through the audit log's request entry.
    other.call(call("elsewhere", "red")).await;
    assert_eq!(red.next().await.data["callId"], "elsewhere");
    // No entry names a decision without a decider: the full read sees it.
    other.approve("elsewhere").await.unwrap();
    assert_eq!(red.next().await.data["callId"], "elsewhere");
    tmp.close().unwrap();
}

#[tokio::test]
async fn each_principal_holds_a_bounded_number_of_streams() {
    let runtime = Runtime::builder().tool(tool()).build().unwrap();
    let router = teams(&runtime).max_streams_per_principal(2).router();
    let first = EventStream::open(&router, "red").await.unwrap();
    let _second = EventStream::open(&router, "red").await.unwrap();
    assert_eq!(
        EventStream::open(&router, "red").await.err(),
        Some(StatusCode::TOO_MANY_REQUESTS)
    );
    assert!(
        EventStream::open(&router, "blue").await.is_ok(),
        "the cap is per principal"
    );
    drop(first);
    assert!(
        EventStream::open(&router, "red").await.is_ok(),
        "a closed stream frees its place"
    );
}

#[tokio::test]
async fn the_inbox_holds_a_bounded_number_of_streams_in_all() {
    let runtime = Runtime::builder().tool(tool()).build().unwrap();
    let router = teams(&runtime)
        .max_streams_per_principal(2)
        .max_streams(3)
        .router();
    let _red = [
        EventStream::open(&router, "red").await.unwrap(),
        EventStream::open(&router, "red").await.unwrap(),
    ];
    let blue = EventStream::open(&router, "blue").await.unwrap();
    assert_eq!(
        EventStream::open(&router, "blue").await.err(),
        Some(StatusCode::TOO_MANY_REQUESTS),
        "three in all"
    );
    drop(blue);
    assert!(EventStream::open(&router, "blue").await.is_ok());
}

/// An inbox where `alice` and `bob` read and decide everything.
fn two_approvers(runtime: &Runtime) -> Inbox<impl tool_inbox::Authenticate> {
    let auth = Authorized::new(
        BearerTokens::new()
            .token("alice", Principal::new("alice"))
            .token("bob", Principal::new("bob")),
        |_principal, _item, _action| true,
    );
    Inbox::new(runtime.clone(), auth)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_starts_with_one_page_then_sends_grants_and_who_decided() {
    let runtime = Runtime::builder()
        .tool(tool())
        .tool_approvals_required("transfer", 2)
        .build()
        .unwrap();
    for n in 0..60 {
        runtime.call(call(&format!("c{n:02}"), "red")).await;
    }
    let router = two_approvers(&runtime)
        .poll_interval(Duration::from_millis(50))
        .router();
    let mut alice = EventStream::open(&router, "alice").await.unwrap();
    let mut first_page = Vec::new();
    loop {
        let event = alice.next().await;
        if event.event != "item" {
            assert_eq!(
                (event.event.as_str(), &event.data),
                ("ready", &json!({ "principal": "alice", "next": "c49" }))
            );
            break;
        }
        first_page.push(event.data["callId"].as_str().unwrap().to_owned());
    }
    let expected: Vec<String> = (0..50).map(|n| format!("c{n:02}")).collect();
    assert_eq!(first_page, expected, "one page of 50, in the list's order");

    // One of two approvals: every stream sees the count change.
    let decide = |who: &str| {
        let runtime = runtime.clone();
        let who = who.to_owned();
        async move {
            let stored = runtime.inbox().stored("c00").await.unwrap().unwrap();
            let decider = tool_runtime::Decider::new(Principal::new(&who), stored.digest());
            runtime
                .decide_as("c00", tool_runtime::Decision::Approve, decider)
                .await
                .unwrap();
        }
    };
    decide("alice").await;
    let changed = alice.next().await;
    assert_eq!(
        (changed.event.as_str(), &changed.data["callId"]),
        ("changed", &json!("c00"))
    );
    assert_eq!(changed.data["approvals"]["granted"], json!(["alice"]));
    decide("bob").await;
    let settled = alice.next().await;
    assert_eq!(
        (settled.event.as_str(), &settled.data),
        (
            "settled",
            &json!({ "callId": "c00", "action": "approve", "by": "bob", "reason": null })
        )
    );

    // A dismissal hides the item from every stream of its reader.
    let digest = runtime
        .inbox()
        .stored("c01")
        .await
        .unwrap()
        .unwrap()
        .digest();
    let dismiss = Request::post("/api/items/c01/dismiss")
        .header(header::AUTHORIZATION, "Bearer alice")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({ "digest": digest.as_str() }).to_string()))
        .unwrap();
    let answer = router.clone().oneshot(dismiss).await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let dismissed = alice.next().await;
    assert_eq!(
        (dismissed.event.as_str(), &dismissed.data),
        ("dismissed", &json!({ "callId": "c01" }))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_item_settles_with_the_reason() {
    let runtime = Runtime::builder()
        .tool(tool())
        .approval_ttl(Duration::from_millis(300))
        .build()
        .unwrap();
    runtime.call(call("soon", "red")).await;
    let router = two_approvers(&runtime)
        .poll_interval(Duration::from_millis(50))
        .router();
    let mut bob = EventStream::open(&router, "bob").await.unwrap();
    assert_eq!(bob.next().await.data["callId"], "soon");
    assert_eq!(bob.next().await.event, "ready");
    let settled = bob.next().await;
    assert_eq!(
        (settled.event.as_str(), &settled.data),
        (
            "settled",
            &json!({ "callId": "soon", "action": "expire", "by": null, "reason": "expired" })
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_in_a_new_version_is_sent_changed_with_its_new_digest() {
    let transfer = Tool::builder("transfer")
        .description("Moves money")
        .input_schema(json!({
            "type": "object",
            "properties": { "amount": { "type": "integer" } },
            "required": ["amount"]
        }))
        .editable(["amount"])
        .require_approval(true)
        .execute(|_input: Value, _ctx| async move { Ok::<_, ToolError>(json!("moved")) })
        .build()
        .unwrap();
    let runtime = Runtime::builder()
        .tool(transfer)
        .tool_approvals_required("transfer", 2)
        .build()
        .unwrap();
    runtime.call(call("v1", "red")).await;
    let router = two_approvers(&runtime)
        .poll_interval(Duration::from_millis(50))
        .router();
    let mut bob = EventStream::open(&router, "bob").await.unwrap();
    let first = bob.next().await;
    assert_eq!(bob.next().await.event, "ready");
    // Alice edits it: a new version, which needs its approvals again.
    let stored = runtime.inbox().stored("v1").await.unwrap().unwrap();
    let decider = tool_runtime::Decider::new(Principal::new("alice"), stored.digest());
    runtime
        .decide_as(
            "v1",
            tool_runtime::Decision::Edit(json!({ "amount": 9 })),
            decider,
        )
        .await
        .unwrap();
    let changed = bob.next().await;
    assert_eq!(
        (changed.event.as_str(), &changed.data["input"]["amount"]),
        ("changed", &json!(9))
    );
    assert_ne!(
        changed.data["digest"], first.data["digest"],
        "a new version, which a decision must name"
    );
}
