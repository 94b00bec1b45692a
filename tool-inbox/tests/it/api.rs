//! The inbox's HTTP API as an application's client uses it: through the
//! router, with real runtimes and their tools.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tool_core::transform::{Target, ToolTransform};
use tool_core::{RequestContext, Tool, ToolContext, ToolError};
use tool_inbox::{Authorized, BearerTokens, Inbox, Principal, TrustedHeader};
use tool_runtime::store::{AuditKind, AuditQuery, MemoryStore};
use tool_runtime::{
    CallOutcome, CallState, PendingCall, PendingKind, Runtime, RuntimeBuilder, ToolCall,
};
use tower::ServiceExt as _;

const TOKEN: &str = "ops-token";

/// A runtime with a tool needing approval (its `apiKey` hidden from
/// displays), one that suspends for a `{"confirm": bool}` answer, and a
/// declaration-only one; `runs` counts the executions of the first.
fn runtime(runs: Arc<AtomicUsize>) -> Runtime {
    runtime_with(runs, Runtime::builder())
}

/// [`runtime`]'s tools on `builder` (a store, policies).
fn runtime_with(runs: Arc<AtomicUsize>, builder: RuntimeBuilder) -> Runtime {
    let transfer = Tool::builder("transfer")
        .description("Moves money between accounts")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "amount": { "type": "integer", "minimum": 1, "maximum": 10000 },
                "apiKey": { "type": "string" }
            },
            "required": ["amount"]
        }))
        .editable(["amount"])
        .require_approval(true)
        .transform(ToolTransform::new().redact(Target::Display, &["apiKey"]))
        .execute(move |input: Value, _ctx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(json!({ "moved": input["amount"] })) }
        })
        .build()
        .unwrap();
    let confirm = Tool::builder("confirm")
        .description("Asks before it goes on")
        .resume_schema(json!({
            "type": "object",
            "properties": { "confirm": { "type": "boolean" } },
            "required": ["confirm"]
        }))
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            match ctx.resume_data() {
                None => ctx.suspend(json!({ "question": "go on?" })),
                Some(data) => Ok::<_, ToolError>(json!({ "answered": data["confirm"] })),
            }
        })
        .build()
        .unwrap();
    let lookup = Tool::builder("lookup")
        .description("Answered by the application")
        .output_schema(json!({ "type": "object", "properties": { "answer": { "type": "string" } }, "required": ["answer"] }))
        .build()
        .unwrap();
    builder.tools([transfer, confirm, lookup]).build().unwrap()
}

fn inbox(runtime: &Runtime) -> Router {
    tool_inbox::router(
        runtime.clone(),
        BearerTokens::new()
            .token("old-token", Principal::new("ops"))
            .token(TOKEN, Principal::new("ops")),
    )
}

async fn send(
    router: &Router,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let response = router.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (parts.status, parts.headers, json)
}

fn get(uri: &str, token: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap()
}

/// A decision's request to `uri` (`/api/items/{id}/{action}`): `body`
/// with the item's digest as `token` reads it (a made-up one for an item
/// it cannot read).
async fn decision(router: &Router, uri: &str, token: &str, mut body: Value) -> Request<Body> {
    let item = &uri[..uri.rfind('/').unwrap()];
    let (_, _, read) = send(router, get(item, token)).await;
    body["digest"] = read
        .get("digest")
        .cloned()
        .unwrap_or(json!("sha256:unknown"));
    post(uri, token, body)
}

fn post(uri: &str, token: &str, body: Value) -> Request<Body> {
    Request::post(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn lists_items_through_display_transforms_and_takes_each_decision() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(Arc::clone(&runs));
    for (id, amount) in [("t1", 10), ("t2", 20), ("t3", 30)] {
        let call = ToolCall::new(
            id,
            "transfer",
            json!({ "amount": amount, "apiKey": "sk-secret" }),
        );
        assert!(matches!(
            runtime.call(call).await,
            CallOutcome::ApprovalRequired { .. }
        ));
    }
    assert!(matches!(
        runtime
            .call(ToolCall::new("s1", "confirm", json!({})))
            .await,
        CallOutcome::Suspended { .. }
    ));
    assert!(matches!(
        runtime.call(ToolCall::new("l1", "lookup", json!({}))).await,
        CallOutcome::AwaitingOutput { .. }
    ));
    let router = inbox(&runtime);

    let (status, headers, page) = send(&router, get("/api/items", TOKEN)).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["callId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["l1", "s1", "t1", "t2", "t3"]);
    let t1 = &page["items"][2];
    assert_eq!(
        t1["input"],
        json!({ "amount": 10 }),
        "the redacted apiKey is not shown"
    );
    assert_eq!(t1["tool"]["description"], "Moves money between accounts");
    assert!(!page.to_string().contains("sk-secret"));
    assert_eq!(page["items"][1]["payload"], json!({ "question": "go on?" }));
    assert_eq!(
        page["items"][1]["resumeSchema"]["required"],
        json!(["confirm"])
    );
    assert!(
        headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");

    // Pages follow `next`; filters by tool and kind.
    let (_, _, first) = send(&router, get("/api/items?tool=transfer&limit=2", TOKEN)).await;
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["next"], "t2");
    let (_, _, second) = send(
        &router,
        get("/api/items?tool=transfer&limit=2&after=t2", TOKEN),
    )
    .await;
    assert_eq!(second["items"][0]["callId"], "t3");
    assert_eq!(second["next"], Value::Null);
    let (_, _, suspended) = send(&router, get("/api/items?kind=suspended", TOKEN)).await;
    assert_eq!(suspended["items"].as_array().unwrap().len(), 1);

    // Approve: the tool runs once; the item is gone.
    let (status, _, answer) = send(
        &router,
        decision(&router, "/api/items/t1/approve", TOKEN, json!({})).await,
    )
    .await;
    assert_eq!(
        (status, &answer["status"]),
        (StatusCode::OK, &json!("completed"))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let (status, _, _) = send(&router, get("/api/items/t1", TOKEN)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, again) = send(
        &router,
        decision(&router, "/api/items/t1/approve", TOKEN, json!({})).await,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(
        (&again["error"]["code"], &again["error"]["recorded"]),
        (&json!("already_decided"), &json!("completed")),
        "a late decision is told what was recorded"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Decline with a reason: the model reads it; the tool never runs.
    let (status, _, answer) = send(
        &router,
        decision(
            &router,
            "/api/items/t2/decline",
            TOKEN,
            json!({ "reason": "too much" }),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, &answer["status"]),
        (StatusCode::OK, &json!("declined"))
    );
    let declined = runtime.inbox().stored("t2").await.unwrap().unwrap();
    let CallState::Settled { outcome, .. } = declined.state else {
        panic!("{declined:?}")
    };
    assert_eq!(
        CallOutcome::from(outcome),
        CallOutcome::Declined {
            reason: Some("too much".into())
        }
    );

    // Respond instead of running: the person's answer is the result.
    let (status, _, answer) = send(
        &router,
        decision(
            &router,
            "/api/items/t3/respond",
            TOKEN,
            json!({ "output": { "moved": 0 } }),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, &answer["status"]),
        (StatusCode::OK, &json!("completed")),
        "{answer}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Resume: invalid data is the person's error (422, located), the call
    // stays suspended; valid data resumes it.
    let (status, _, refused) = send(
        &router,
        decision(
            &router,
            "/api/items/s1/resume",
            TOKEN,
            json!({ "data": { "confirm": "yes" } }),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_value");
    assert!(refused["error"]["modelError"].is_object(), "{refused}");
    assert!(
        runtime
            .inbox()
            .stored("s1")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
    let (status, _, answer) = send(
        &router,
        decision(
            &router,
            "/api/items/s1/resume",
            TOKEN,
            json!({ "data": { "confirm": true } }),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, &answer["status"]),
        (StatusCode::OK, &json!("completed"))
    );

    // A declaration-only call gets its output checked against the schema.
    let (status, _, refused) = send(
        &router,
        decision(
            &router,
            "/api/items/l1/respond",
            TOKEN,
            json!({ "output": { "answer": 42 } }),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let (status, _, _) = send(
        &router,
        decision(
            &router,
            "/api/items/l1/respond",
            TOKEN,
            json!({ "output": { "answer": "42" } }),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, _, empty) = send(&router, get("/api/items", TOKEN)).await;
    assert_eq!(empty["items"], json!([]));
}

#[tokio::test]
async fn refuses_missing_wrong_and_foreign_requests() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    runtime
        .call(ToolCall::new("t1", "transfer", json!({ "amount": 1 })))
        .await;
    let router = inbox(&runtime);

    let (status, headers, body) = send(
        &router,
        Request::get("/api/items").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer");
    assert_eq!(
        headers[header::X_CONTENT_TYPE_OPTIONS],
        "nosniff",
        "refusals carry the headers too"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Authorization")
    );
    let (status, _, body) = send(&router, get("/api/items", "not-a-token")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        !body.to_string().contains("not-a-token"),
        "a credential is never echoed"
    );
    // Both tokens of a rotation are valid.
    assert_eq!(
        send(&router, get("/api/items", "old-token")).await.0,
        StatusCode::OK
    );

    let mut foreign = get("/api/items", TOKEN);
    foreign
        .headers_mut()
        .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
    foreign
        .headers_mut()
        .insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(send(&router, foreign).await.0, StatusCode::FORBIDDEN);
    let mut own = decision(&router, "/api/items/t1/decline", TOKEN, json!({})).await;
    own.headers_mut()
        .insert(header::ORIGIN, "http://127.0.0.1:8080".parse().unwrap());
    own.headers_mut()
        .insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(send(&router, own).await.0, StatusCode::OK);

    let (status, _, body) = send(&router, get("/api/items?limit=1000", TOKEN)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("between 1 and 100")
    );
    let (status, _, _) = send(&router, get("/api/items?colour=red", TOKEN)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn bodies_and_reasons_are_bounded() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    runtime
        .call(ToolCall::new("t1", "transfer", json!({ "amount": 1 })))
        .await;
    let router = Inbox::new(
        runtime.clone(),
        BearerTokens::new().token(TOKEN, Principal::new("ops")),
    )
    .max_body_bytes(1024)
    .max_reason_chars(10)
    .router();
    let big = json!({ "reason": "x".repeat(2048) });
    assert_eq!(
        send(
            &router,
            decision(&router, "/api/items/t1/decline", TOKEN, big).await
        )
        .await
        .0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let long = json!({ "reason": "x".repeat(11) });
    assert_eq!(
        send(
            &router,
            decision(&router, "/api/items/t1/decline", TOKEN, long).await
        )
        .await
        .0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let unknown = json!({ "reason": "ok", "approver": "me" });
    assert_eq!(
        send(
            &router,
            decision(&router, "/api/items/t1/decline", TOKEN, unknown).await
        )
        .await
        .0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert!(
        runtime
            .inbox()
            .stored("t1")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending(),
        "nothing was decided"
    );
}

#[tokio::test]
async fn each_principal_sees_and_decides_only_its_own_items() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(Arc::clone(&runs));
    for (id, team) in [("a1", "red"), ("b1", "blue")] {
        let call = ToolCall::new(id, "transfer", json!({ "amount": 1 }))
            .with_request_context(RequestContext::new().with("team", team));
        runtime.call(call).await;
    }
    let auth = Authorized::new(
        BearerTokens::new()
            .token("red-token", Principal::new("red"))
            .token("blue-token", Principal::new("blue")),
        |principal, item, _action| {
            item.head
                .request_context
                .get("team")
                .and_then(Value::as_str)
                == Some(principal.id())
        },
    );
    let router = tool_inbox::router(runtime.clone(), auth);
    for (token, own, foreign) in [("red-token", "a1", "b1"), ("blue-token", "b1", "a1")] {
        let (_, _, page) = send(&router, get("/api/items", token)).await;
        let ids: Vec<&str> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["callId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [own]);
        let (status, _, read) = send(&router, get(&format!("/api/items/{foreign}"), token)).await;
        let (missing_status, _, missing) =
            send(&router, get("/api/items/no-such-call", token)).await;
        assert_eq!(
            (status, missing_status),
            (StatusCode::NOT_FOUND, StatusCode::NOT_FOUND)
        );
        assert_eq!(
            read["error"]["code"], missing["error"]["code"],
            "a foreign item looks missing"
        );
        let (status, _, _) = send(
            &router,
            decision(
                &router,
                &format!("/api/items/{foreign}/approve"),
                token,
                json!({}),
            )
            .await,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "no foreign decision ran anything"
    );
    let (status, _, _) = send(
        &router,
        decision(&router, "/api/items/a1/approve", "red-token", json!({})).await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_trusted_header_is_believed_only_from_the_proxy() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    let proxy = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    let router = tool_inbox::router(
        runtime,
        TrustedHeader::new("x-forwarded-user")
            .peer(proxy)
            .secret("x-proxy-secret", "s3cret"),
    );
    let request = |peer: IpAddr, secret: Option<&str>| {
        let mut request = Request::get("/api/items").header("x-forwarded-user", "alice");
        if let Some(secret) = secret {
            request = request.header("x-proxy-secret", secret);
        }
        let mut request = request.body(Body::empty()).unwrap();
        request
            .extensions_mut()
            .insert(ConnectInfo(SocketAddr::new(peer, 4000)));
        request
    };
    let direct = IpAddr::V4(Ipv4Addr::new(192, 168, 1, 9));
    let (status, _, body) = send(&router, request(direct, None)).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a direct request naming itself is refused"
    );
    assert!(body["error"]["message"].as_str().unwrap().contains("proxy"));
    assert_eq!(
        send(&router, request(direct, Some("wrong"))).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(&router, request(direct, Some("s3cret"))).await.0,
        StatusCode::OK
    );
    assert_eq!(send(&router, request(proxy, None)).await.0, StatusCode::OK);
}

#[tokio::test]
async fn an_agents_call_id_travels_percent_encoded() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    let call = ToolCall::new("run-7/call-1", "transfer", json!({ "amount": 3 }));
    runtime.call(call).await;
    let router = inbox(&runtime);
    let (status, _, item) = send(&router, get("/api/items/run-7%2Fcall-1", TOKEN)).await;
    assert_eq!(
        (status, &item["callId"]),
        (StatusCode::OK, &json!("run-7/call-1"))
    );
    let (status, _, _) = send(
        &router,
        decision(
            &router,
            "/api/items/run-7%2Fcall-1/approve",
            TOKEN,
            json!({}),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !runtime
            .inbox()
            .stored("run-7/call-1")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
}

#[tokio::test]
async fn decisions_name_their_item_by_digest_and_the_audit_trail_records_who() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    runtime
        .call(ToolCall::new(
            "t1",
            "transfer",
            json!({ "amount": 7, "apiKey": "sk-secret" }),
        ))
        .await;
    runtime
        .call(ToolCall::new("s1", "confirm", json!({})))
        .await;
    let auth = Authorized::new(
        BearerTokens::new()
            .token(TOKEN, Principal::new("ops"))
            .token("viewer-token", Principal::new("viewer")),
        |principal, _item, action| principal.id() == "ops" || action == tool_inbox::Action::Read,
    );
    let router = tool_inbox::router(runtime.clone(), auth);

    // A made-up digest changes nothing.
    let forged = post(
        "/api/items/t1/approve",
        TOKEN,
        json!({ "digest": "sha256:00" }),
    );
    let (status, _, body) = send(&router, forged).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::CONFLICT, &json!("stale_digest"))
    );
    // A principal who may read but not approve is refused, and logged.
    let (status, _, _) = send(
        &router,
        decision(&router, "/api/items/t1/approve", "viewer-token", json!({})).await,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = send(
        &router,
        decision(&router, "/api/items/t1/approve", TOKEN, json!({})).await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    // A resume sent with the digest of a suspension that was answered (and
    // asked again) since is refused: the call is not what was read.
    let (_, _, read) = send(&router, get("/api/items/s1", TOKEN)).await;
    let first_digest = read["digest"].clone();
    let answer = json!({ "digest": first_digest, "data": { "confirm": true } });
    let (status, _, _) = send(&router, post("/api/items/s1/resume", TOKEN, answer.clone())).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = send(&router, post("/api/items/s1/resume", TOKEN, answer)).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "settled: decided already: {body}"
    );
    assert_eq!(body["error"]["code"], "already_decided");

    let (status, _, trail) = send(&router, get("/api/items/t1/audit", TOKEN)).await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<(String, String, Option<String>)> = trail["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let who = e["principal"].as_str().map(str::to_owned);
            (
                e["kind"].as_str().unwrap().to_owned(),
                e["action"].as_str().unwrap().to_owned(),
                who,
            )
        })
        .collect();
    let expected = [
        ("requested", "approval", None),
        ("refused", "approve", Some("ops")),
        ("refused", "approve", Some("viewer")),
        ("decided", "approve", Some("ops")),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|(k, a, w)| (k.to_string(), a.to_string(), w.map(str::to_owned)))
        .collect();
    assert_eq!(lines, expected);
    assert!(
        !trail.to_string().contains("sk-secret"),
        "values only as displayed"
    );
    let refused_reason = &trail["entries"][1]["reason"];
    assert_eq!(refused_reason, "stale or foreign digest");
}

#[tokio::test]
async fn an_approval_with_edits_changes_only_the_editable_fields() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(Arc::clone(&runs));
    let input = json!({ "amount": 900, "apiKey": "sk-secret" });
    runtime.call(ToolCall::new("t1", "transfer", input)).await;
    let router = inbox(&runtime);
    let (_, _, item) = send(&router, get("/api/items/t1", TOKEN)).await;
    assert_eq!(
        item["editSchema"]["properties"],
        json!({ "amount": { "type": "integer", "minimum": 1, "maximum": 10000 } })
    );

    let outside = json!({ "edit": { "apiKey": "sk-other" } });
    let (status, _, refused) = send(
        &router,
        decision(&router, "/api/items/t1/edit", TOKEN, outside).await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("apiKey"),
        "{refused}"
    );
    let invalid = json!({ "edit": { "amount": 0 } });
    let (status, _, refused) = send(
        &router,
        decision(&router, "/api/items/t1/edit", TOKEN, invalid).await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(
        refused["error"]["modelError"]["validationErrors"]["fields"]["amount"].is_object(),
        "{refused}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "a refused edit runs nothing"
    );

    let capped = json!({ "edit": { "amount": 500 } });
    let (status, _, answer) = send(
        &router,
        decision(&router, "/api/items/t1/edit", TOKEN, capped).await,
    )
    .await;
    assert_eq!(
        (status, &answer["status"]),
        (StatusCode::OK, &json!("completed")),
        "{answer}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let settled = runtime.inbox().stored("t1").await.unwrap().unwrap();
    assert_eq!(
        settled.call.input,
        json!({ "amount": 500, "apiKey": "sk-secret" })
    );
    let (_, _, trail) = send(&router, get("/api/items/t1/audit", TOKEN)).await;
    let decided = trail["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "decided")
        .unwrap()
        .clone();
    assert_eq!(
        decided["detail"],
        json!({ "before": { "amount": 900 }, "after": { "amount": 500 } })
    );
}

#[tokio::test]
async fn the_list_filters_by_agent_run_thread_resource_and_requester() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    let agent = |run: &str, resource: &str| {
        tool_core::AgentContext::new("support", run)
            .with_thread("thread-1")
            .with_resource(resource)
    };
    let calls = [
        ToolCall::new("a1", "transfer", json!({ "amount": 1 })).with_agent(agent("run-1", "ann")),
        ToolCall::new("a2", "transfer", json!({ "amount": 2 })).with_agent(agent("run-2", "bob")),
        ToolCall::new("a3", "transfer", json!({ "amount": 3 })).with_requester("carol"),
    ];
    for call in calls {
        runtime.call(call).await;
    }
    let router = inbox(&runtime);
    let ids = |page: Value| -> Vec<String> {
        let items = page["items"].as_array().unwrap();
        items
            .iter()
            .map(|i| i["callId"].as_str().unwrap().to_owned())
            .collect()
    };
    for (query, expected) in [
        ("run=run-1", vec!["a1"]),
        ("thread=thread-1", vec!["a1", "a2"]),
        ("resource=bob", vec!["a2"]),
        ("requester=carol", vec!["a3"]),
        ("run=run-9", vec![]),
        // A search over tool id, requester and call id, ignoring case.
        ("q=CAROL", vec!["a3"]),
        ("q=a2", vec!["a2"]),
        ("q=TRANS", vec!["a1", "a2", "a3"]),
        ("q=trans&resource=ann", vec!["a1"]),
        ("q=nobody", vec![]),
    ] {
        let (status, _, page) = send(&router, get(&format!("/api/items?{query}"), TOKEN)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ids(page), expected, "{query}");
    }
    let (_, _, item) = send(&router, get("/api/items/a3", TOKEN)).await;
    assert_eq!(item["requester"], "carol");
    let long = "x".repeat(201);
    let (status, _, refused) = send(&router, get(&format!("/api/items?q={long}"), TOKEN)).await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (StatusCode::UNPROCESSABLE_ENTITY, &json!("invalid_query"))
    );
}

#[tokio::test]
async fn the_list_filters_by_how_long_items_have_waited() {
    let store = Arc::new(MemoryStore::new());
    let builder = Runtime::builder().store(Arc::clone(&store));
    let runtime = runtime_with(Arc::new(AtomicUsize::new(0)), builder);
    let now_ms = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    // Asked for two hours ago (stored then, as a runtime would have).
    let mut old = PendingCall::new(
        "old",
        "transfer",
        PendingKind::Approval,
        json!({ "amount": 1 }),
    );
    old.asked_at_ms = Some(now_ms - 2 * 3_600_000);
    tool_runtime::store::CallStore::insert(&*store, old)
        .await
        .unwrap();
    runtime
        .call(ToolCall::new("new", "transfer", json!({ "amount": 2 })))
        .await;
    let router = inbox(&runtime);
    for (query, expected) in [
        ("older_than=3600", vec!["old"]),
        ("newer_than=3600", vec!["new"]),
        ("older_than=60&newer_than=10800", vec!["old"]),
        ("older_than=10800", vec![]),
        ("", vec!["new", "old"]),
    ] {
        let (status, _, page) = send(&router, get(&format!("/api/items?{query}"), TOKEN)).await;
        assert_eq!(status, StatusCode::OK, "{query}");
        let ids: Vec<_> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["callId"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ids, expected, "{query}");
    }
    let (_, _, item) = send(&router, get("/api/items/new", TOKEN)).await;
    let asked = item["askedAtMs"].as_u64().unwrap();
    assert!(asked >= now_ms && asked < now_ms + 60_000, "{item}");
    let (status, _, refused) = send(&router, get("/api/items?older_than=soon", TOKEN)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
}

#[tokio::test]
async fn a_call_needing_two_approvers_runs_at_the_second_principals_approval() {
    let runs = Arc::new(AtomicUsize::new(0));
    let builder = Runtime::builder().tool_approvals_required("transfer", 2);
    let runtime = runtime_with(Arc::clone(&runs), builder);
    runtime
        .call(ToolCall::new("t1", "transfer", json!({ "amount": 7 })))
        .await;
    let router = tool_inbox::router(
        runtime.clone(),
        BearerTokens::new()
            .token("ann-token", Principal::new("ann"))
            .token("bob-token", Principal::new("bob")),
    );
    let approve = "/api/items/t1/approve";
    for _ in 0..2 {
        let request = decision(&router, approve, "ann-token", json!({})).await;
        let (status, _, answer) = send(&router, request).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["status"], "approval_required", "{answer}");
        assert_eq!(
            answer["approvals"],
            json!({ "required": 2, "granted": ["ann"] }),
            "ann counts once"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "one approval is not enough");
    let (_, _, item) = send(&router, get("/api/items/t1", "bob-token")).await;
    assert_eq!(
        item["approvals"],
        json!({ "required": 2, "granted": ["ann"] })
    );
    let edit = decision(
        &router,
        "/api/items/t1/edit",
        "bob-token",
        json!({ "edit": { "amount": 8 } }),
    )
    .await;
    // Bob's edit makes a new version: it counts as his grant of it, and
    // ann's grant of the earlier one no longer counts.
    let (status, _, edited) = send(&router, edit).await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["status"], "approval_required", "{edited}");
    let (_, _, item) = send(&router, get("/api/items/t1", "ann-token")).await;
    assert_eq!(item["input"]["amount"], 8, "{item}");
    assert_eq!(
        item["approvals"],
        json!({ "required": 2, "granted": ["bob"] })
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "one grant of the new version"
    );
    let request = decision(&router, approve, "ann-token", json!({})).await;
    let (status, _, answer) = send(&router, request).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::OK, Some("completed")),
        "{answer}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let (_, _, trail) = send(&router, get("/api/items/t1/audit", "ann-token")).await;
    let kinds: Vec<_> = trail["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
                e["principal"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("requested", "approval", None),
            ("granted", "approve", Some("ann")),
            ("decided", "edit", Some("bob")),
            ("granted", "approve", Some("bob")),
            ("granted", "approve", Some("ann")),
            ("decided", "approve", Some("ann")),
        ]
    );
}

#[tokio::test]
async fn pages_of_one_principals_items_span_the_store_in_order() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    for n in 0..230 {
        let team = if n % 2 == 0 { "red" } else { "blue" };
        let call = ToolCall::new(format!("c{n:03}"), "transfer", json!({ "amount": 1 }))
            .with_request_context(RequestContext::new().with("team", team));
        runtime.call(call).await;
    }
    let auth = Authorized::new(
        BearerTokens::new().token("red-token", Principal::new("red")),
        |principal, item, _action| {
            item.head
                .request_context
                .get("team")
                .and_then(Value::as_str)
                == Some(principal.id())
        },
    );
    let router = tool_inbox::router(runtime, auth);
    let mut seen: Vec<String> = Vec::new();
    let mut uri = "/api/items?limit=100".to_owned();
    loop {
        let (status, _, page) = send(&router, get(&uri, "red-token")).await;
        assert_eq!(status, StatusCode::OK);
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 100);
        seen.extend(
            items
                .iter()
                .map(|i| i["callId"].as_str().unwrap().to_owned()),
        );
        match page["next"].as_str() {
            Some(next) => uri = format!("/api/items?limit=100&after={next}"),
            None => break,
        }
    }
    let expected: Vec<String> = (0..230).step_by(2).map(|n| format!("c{n:03}")).collect();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn foreign_origins_write_nothing_and_the_log_exports_as_json_lines_per_principal() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    for (id, team) in [("r1", "red"), ("b1", "blue")] {
        let call = ToolCall::new(
            id,
            "transfer",
            json!({ "amount": 1, "apiKey": "sk-secret" }),
        )
        .with_request_context(RequestContext::new().with("team", team));
        runtime.call(call).await;
    }
    let auth = Authorized::new(
        BearerTokens::new()
            .token("red-token", Principal::new("red"))
            .token("blue-token", Principal::new("blue")),
        |principal, item, _action| {
            item.head
                .request_context
                .get("team")
                .and_then(Value::as_str)
                == Some(principal.id())
        },
    );
    let router = tool_inbox::router(runtime.clone(), auth);
    let mut forged = decision(&router, "/api/items/r1/approve", "red-token", json!({})).await;
    forged
        .headers_mut()
        .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
    forged
        .headers_mut()
        .insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(send(&router, forged).await.0, StatusCode::FORBIDDEN);
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
    let (status, _, _) = send(
        &router,
        decision(
            &router,
            "/api/items/r1/decline",
            "red-token",
            json!({ "reason": "no" }),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let response = router
        .clone()
        .oneshot(get("/api/audit", "red-token"))
        .await
        .unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "application/x-ndjson"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let lines: Vec<Value> = std::str::from_utf8(&body)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let seen: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["callId"].as_str().unwrap(),
                l["kind"].as_str().unwrap(),
                l["action"].as_str().unwrap(),
            )
        })
        .collect();
    // The forged request was refused before authentication: counted,
    // never stored.
    assert_eq!(
        seen,
        [
            ("r1", "requested", "approval"),
            ("r1", "decided", "decline")
        ],
        "red's calls only"
    );
    assert!(!std::str::from_utf8(&body).unwrap().contains("sk-secret"));
    let after = lines[0]["seq"].as_u64().unwrap();
    let (status, _, _) = send(
        &router,
        get(&format!("/api/audit?after={after}&limit=5000"), "red-token"),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "a bounded export");
}

/// Nothing unauthenticated writes anything: 200 forged decisions from a
/// foreign `Origin` (with and without a credential) and 200 without one
/// leave the audit log as it was.
#[tokio::test]
async fn refused_requests_before_authentication_store_nothing() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    runtime
        .call(ToolCall::new("t1", "transfer", json!({ "amount": 1 })))
        .await;
    let router = inbox(&runtime);
    let log = || async { runtime.inbox().audit(AuditQuery::all()).await.unwrap() };
    let before = log().await;
    let long_action = format!("/api/items/t1/{}", "a".repeat(60_000));
    for n in 0..200 {
        let uri = if n % 2 == 0 {
            "/api/items/t1/approve"
        } else {
            long_action.as_str()
        };
        let token = if n % 4 < 2 { TOKEN } else { "no-such-token" };
        let mut forged = post(uri, token, json!({ "digest": "sha256:x" }));
        forged
            .headers_mut()
            .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        forged
            .headers_mut()
            .insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(send(&router, forged).await.0, StatusCode::FORBIDDEN);
        let unauthenticated = Request::post("/api/items/t1/approve")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({ "digest": "sha256:x" }).to_string()))
            .unwrap();
        assert_eq!(
            send(&router, unauthenticated).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(log().await, before, "nothing was written");
    assert!(
        runtime
            .inbox()
            .stored("t1")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
}

/// The `Bearer` scheme is case-insensitive (RFC 7235).
#[tokio::test]
async fn a_lowercase_bearer_scheme_is_accepted() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    let router = inbox(&runtime);
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let request = Request::get("/api/items")
            .header(header::AUTHORIZATION, format!("{scheme} {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        assert_eq!(send(&router, request).await.0, StatusCode::OK, "{scheme}");
    }
    let basic = Request::get("/api/items")
        .header(header::AUTHORIZATION, format!("Basic {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&router, basic).await.0, StatusCode::UNAUTHORIZED);
}

/// A decision after another took effect gets 409 `already_decided` with
/// what became of the call, and the attempt is in the audit log.
#[tokio::test]
async fn a_late_decision_is_told_what_was_recorded_and_is_logged() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    runtime
        .call(ToolCall::new("t1", "transfer", json!({ "amount": 5 })))
        .await;
    let router = tool_inbox::router(
        runtime.clone(),
        BearerTokens::new()
            .token("ann-token", Principal::new("ann"))
            .token("bob-token", Principal::new("bob")),
    );
    // Bob reads the item, then Ann's approval lands first.
    let (_, _, read) = send(&router, get("/api/items/t1", "bob-token")).await;
    let first = decision(&router, "/api/items/t1/approve", "ann-token", json!({})).await;
    assert_eq!(send(&router, first).await.0, StatusCode::OK);
    let late = post(
        "/api/items/t1/approve",
        "bob-token",
        json!({ "digest": read["digest"] }),
    );
    let (status, _, body) = send(&router, late).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "already_decided");
    assert_eq!(body["error"]["recorded"], "completed");
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("t1"))
        .await
        .unwrap();
    let refused: Vec<_> = log
        .iter()
        .filter(|entry| entry.kind == tool_runtime::store::AuditKind::Refused)
        .collect();
    assert_eq!(refused.len(), 1, "{log:?}");
    assert_eq!(refused[0].principal.as_deref(), Some("bob"));
    assert_eq!(refused[0].reason.as_deref(), Some("already decided"));
}

/// An edit starts from the raw values of the editable fields, which only a
/// principal who may edit gets (beside the display projection); the server
/// refuses an edit that sends a field's displayed value back as its new
/// value (422 naming the field), as a form filled from the display would.
#[tokio::test]
async fn edits_start_from_raw_values_and_a_projected_value_is_refused() {
    let mail = Tool::builder("mail")
        .description("Sends an email")
        .input_schema(json!({
            "type": "object",
            "properties": { "subject": { "type": "string" }, "body": { "type": "string" } },
            "required": ["subject", "body"]
        }))
        .editable(["subject", "body"])
        .require_approval(true)
        .transform(
            ToolTransform::new().display(tool_core::transform::Phase::Approval, |ctx| {
                let mut shown = ctx.payload.clone();
                if let Some(Value::String(body)) = shown.get_mut("body") {
                    *body = format!("{}…", body.chars().take(10).collect::<String>());
                }
                Some(shown)
            }),
        )
        .execute(|input: Value, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(mail).build().unwrap();
    let body = "Dear team, the March figures are attached.";
    runtime
        .call(ToolCall::new(
            "m1",
            "mail",
            json!({ "subject": "Figures", "body": body }),
        ))
        .await;
    let router = tool_inbox::router(
        runtime.clone(),
        Authorized::new(
            BearerTokens::new()
                .token("editor-token", Principal::new("editor"))
                .token("viewer-token", Principal::new("viewer")),
            |principal, _item, action| {
                action != tool_inbox::Action::Edit || principal.id() == "editor"
            },
        ),
    );
    let (_, _, seen) = send(&router, get("/api/items/m1", "viewer-token")).await;
    assert_eq!(seen["input"]["body"], "Dear team,…");
    assert!(seen.get("editValues").is_none_or(Value::is_null), "{seen}");
    assert!(seen.get("editSchema").is_none_or(Value::is_null), "{seen}");
    let (_, _, item) = send(&router, get("/api/items/m1", "editor-token")).await;
    assert_eq!(
        item["editValues"],
        json!({ "subject": "Figures", "body": body })
    );

    // A form filled from the display sends the shortened body back.
    let projected = json!({ "digest": item["digest"], "edit": { "subject": "March figures", "body": "Dear team,…" } });
    let (status, _, refused) = send(
        &router,
        post("/api/items/m1/edit", "editor-token", projected),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "projected_value");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`body`"),
        "{refused}"
    );
    assert!(
        runtime
            .inbox()
            .stored("m1")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );

    // Only the touched field: the body runs whole.
    let touched = json!({ "digest": item["digest"], "edit": { "subject": "March figures" } });
    let (status, _, _) = send(&router, post("/api/items/m1/edit", "editor-token", touched)).await;
    assert_eq!(status, StatusCode::OK);
    let stored = runtime.inbox().stored("m1").await.unwrap().unwrap();
    let CallState::Settled { outcome, .. } = stored.state else {
        panic!("{stored:?}")
    };
    assert_eq!(
        CallOutcome::from(outcome).output(),
        Some(&json!({ "subject": "March figures", "body": body }))
    );
}

/// An item lists the decisions its reader may take: under separation of
/// duties a call's requester may decline it, nothing else; another
/// principal may take them all; the server refuses what is not listed.
#[tokio::test]
async fn an_item_lists_the_decisions_its_reader_may_take() {
    let runtime = runtime_with(
        Arc::new(AtomicUsize::new(0)),
        Runtime::builder().forbid_self_approval(true),
    );
    runtime
        .call(ToolCall::new("t1", "transfer", json!({ "amount": 5 })).with_requester("ann"))
        .await;
    let router = tool_inbox::router(
        runtime.clone(),
        BearerTokens::new()
            .token("ann-token", Principal::new("ann"))
            .token("bob-token", Principal::new("bob")),
    );
    let (_, _, own) = send(&router, get("/api/items/t1", "ann-token")).await;
    assert_eq!(own["actions"], json!(["decline"]), "{own}");
    let (_, _, other) = send(&router, get("/api/items/t1", "bob-token")).await;
    assert_eq!(
        other["actions"],
        json!(["approve", "edit", "decline", "respond"]),
        "{other}"
    );
    let approve = decision(&router, "/api/items/t1/approve", "ann-token", json!({})).await;
    let (status, _, refused) = send(&router, approve).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["error"]["code"], "self_approval");
}

#[tokio::test]
async fn a_batch_takes_each_decision_on_its_own_digest_and_audits_each() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(Arc::clone(&runs));
    for id in ["b1", "b2", "b3"] {
        runtime
            .call(ToolCall::new(id, "transfer", json!({ "amount": 5 })))
            .await;
    }
    let router = inbox(&runtime);
    let digest = |id: &str| {
        let router = router.clone();
        let id = id.to_owned();
        async move {
            let (_, _, item) = send(&router, get(&format!("/api/items/{id}"), TOKEN)).await;
            item["digest"].clone()
        }
    };
    let items = json!([
        { "callId": "b1", "digest": digest("b1").await },
        { "callId": "b2", "digest": "sha256:stale" },
        { "callId": "missing", "digest": "sha256:x" },
    ]);
    let (status, _, answer) = send(
        &router,
        post(
            "/api/batch",
            TOKEN,
            json!({ "action": "approve", "items": items }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results[0], json!({ "callId": "b1", "status": "completed" }));
    assert_eq!(
        (&results[1]["httpStatus"], &results[1]["error"]["code"]),
        (&json!(409), &json!("stale_digest")),
        "one item's refusal leaves the others alone"
    );
    assert_eq!(results[2]["error"]["code"], "not_found");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only b1 ran");

    // A decline of two, with one reason, each in the audit log.
    let items = json!([
        { "callId": "b2", "digest": digest("b2").await },
        { "callId": "b3", "digest": digest("b3").await },
    ]);
    let (_, _, answer) = send(
        &router,
        post(
            "/api/batch",
            TOKEN,
            json!({ "action": "decline", "reason": "not today", "items": items }),
        ),
    )
    .await;
    assert_eq!(
        answer["results"],
        json!([
            { "callId": "b2", "status": "declined" },
            { "callId": "b3", "status": "declined" },
        ])
    );
    for id in ["b2", "b3"] {
        let log = runtime
            .inbox()
            .audit(AuditQuery::all().call(id))
            .await
            .unwrap();
        let decided = log.iter().find(|e| e.kind == AuditKind::Decided).unwrap();
        assert_eq!(
            (decided.principal.as_deref(), decided.reason.as_deref()),
            (Some("ops"), Some("not today"))
        );
    }

    // Only approve and decline; 1 to max_page items.
    for body in [
        json!({ "action": "resume", "items": [{ "callId": "b1", "digest": "d" }] }),
        json!({ "action": "approve", "items": [] }),
    ] {
        let (status, _, refused) = send(&router, post("/api/batch", TOKEN, body)).await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (StatusCode::UNPROCESSABLE_ENTITY, &json!("invalid_body"))
        );
    }
    let many: Vec<Value> = (0..101)
        .map(|n| json!({ "callId": format!("x{n}"), "digest": "d" }))
        .collect();
    let (status, _, _) = send(
        &router,
        post(
            "/api/batch",
            TOKEN,
            json!({ "action": "approve", "items": many }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_dismissed_item_leaves_only_its_readers_list_and_stays_decidable() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    for id in ["d1", "d2"] {
        runtime
            .call(ToolCall::new(id, "transfer", json!({ "amount": 5 })))
            .await;
    }
    let router = tool_inbox::router(
        runtime.clone(),
        BearerTokens::new()
            .token("ann", Principal::new("ann"))
            .token("ben", Principal::new("ben")),
    );
    let ids = |page: Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["callId"].as_str().unwrap().to_owned())
            .collect()
    };
    let dismiss = decision(&router, "/api/items/d1/dismiss", "ann", json!({})).await;
    let (status, _, answer) = send(&router, dismiss).await;
    assert_eq!(
        (status, answer),
        (
            StatusCode::OK,
            json!({ "callId": "d1", "status": "dismissed" })
        )
    );
    let (_, _, ann) = send(&router, get("/api/items", "ann")).await;
    assert_eq!(ids(ann), ["d2"], "hidden for ann");
    let (_, _, ben) = send(&router, get("/api/items", "ben")).await;
    assert_eq!(ids(ben), ["d1", "d2"], "not for ben");
    // On the record, and still decidable.
    let log = runtime
        .inbox()
        .audit(AuditQuery::all().call("d1"))
        .await
        .unwrap();
    assert!(log.iter().any(|e| e.kind == AuditKind::Noted
        && e.action == "dismiss"
        && e.principal.as_deref() == Some("ann")));
    let stale = post(
        "/api/items/d2/dismiss",
        "ann",
        json!({ "digest": "sha256:old" }),
    );
    let (status, _, refused) = send(&router, stale).await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (StatusCode::CONFLICT, &json!("stale_digest"))
    );
    let approve = decision(&router, "/api/items/d1/approve", "ann", json!({})).await;
    assert_eq!(send(&router, approve).await.0, StatusCode::OK);
}

#[tokio::test]
async fn an_item_shows_the_last_messages_before_its_call_bounded() {
    let runtime = runtime(Arc::new(AtomicUsize::new(0)));
    let said: Vec<Value> = (0..10)
        .map(|n| json!({ "role": "user", "text": format!("message {n}") }))
        .collect();
    let calls = [
        ToolCall::new("m1", "transfer", json!({ "amount": 3 })).with_messages(said),
        ToolCall::new("m2", "transfer", json!({ "amount": 3 }))
            .with_messages(vec![json!({ "role": "user", "text": "x".repeat(40_000) })]),
        ToolCall::new("m3", "transfer", json!({ "amount": 3 })),
    ];
    for call in calls {
        runtime.call(call).await;
    }
    let router = inbox(&runtime);
    let context = |id: &str| {
        let router = router.clone();
        let id = id.to_owned();
        async move {
            let (_, _, item) = send(&router, get(&format!("/api/items/{id}"), TOKEN)).await;
            item["context"].as_array().unwrap().clone()
        }
    };
    let texts: Vec<Value> = context("m1")
        .await
        .iter()
        .map(|m| m["text"].clone())
        .collect();
    let expected: Vec<Value> = (4..10).map(|n| json!(format!("message {n}"))).collect();
    assert_eq!(texts, expected, "the last six, newest last");
    let long = context("m2").await;
    assert_eq!(long.len(), 1);
    assert_eq!(
        long[0]["text"].as_str().unwrap().chars().count(),
        2_001,
        "an excerpt of a message too large to show whole"
    );
    assert!(context("m3").await.is_empty(), "a direct call has none");
}

#[tokio::test]
async fn the_list_sorts_by_age_and_by_expiry_and_pages_in_that_order() {
    let runtime = runtime_with(
        Arc::new(AtomicUsize::new(0)),
        Runtime::builder().tool_approval_ttl("transfer", std::time::Duration::from_secs(3600)),
    );
    // Asked in the reverse of their ids' order; the suspended one never expires.
    for (id, tool) in [("z1", "transfer"), ("y2", "confirm"), ("x3", "transfer")] {
        runtime
            .call(ToolCall::new(id, tool, json!({ "amount": 1 })))
            .await;
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let router = inbox(&runtime);
    let ids = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["callId"].as_str().unwrap().to_owned())
            .collect()
    };
    for (sort, expected) in [
        ("id", ["x3", "y2", "z1"]),
        ("age", ["z1", "y2", "x3"]),
        ("expiry", ["z1", "x3", "y2"]),
    ] {
        let (status, _, page) = send(&router, get(&format!("/api/items?sort={sort}"), TOKEN)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ids(&page), expected, "{sort}");
        // One at a time, each page from the last one's `next`.
        let mut paged = Vec::new();
        let mut uri = format!("/api/items?sort={sort}&limit=1");
        loop {
            let (_, _, page) = send(&router, get(&uri, TOKEN)).await;
            paged.extend(ids(&page));
            let Some(next) = page["next"].as_str() else {
                break;
            };
            uri = format!("/api/items?sort={sort}&limit=1&after={}", urlencoding(next));
        }
        assert_eq!(paged, expected, "{sort}, a page at a time");
    }
    let (status, _, refused) = send(&router, get("/api/items?sort=age&after=z1", TOKEN)).await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (StatusCode::UNPROCESSABLE_ENTITY, &json!("invalid_query"))
    );
}

/// `text` percent-encoded for a query string.
fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
