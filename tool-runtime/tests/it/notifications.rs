//! Notifications through the public API: what a runtime built with
//! `notifications(true)` writes into its store's outbox for each change
//! people should hear of (and only for changes that happened), and a
//! dispatcher that delivers them to sinks: routes, retries with backoff,
//! dead letters sent again, per-sink time limits, order per call, many
//! dispatchers sharing one outbox.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::transform::{Phase, ToolTransform};
use tool_core::{BackgroundConfig, Tool, ToolContext, ToolError};
use tool_runtime::store::{
    DeliveryState, MemoryStore, Notification, NotificationKind, OutboxQuery, SqliteStore,
};
use tool_runtime::{
    CallOutcome, Decider, Decision, NotificationSink, Principal, RetryPolicy, Runtime,
    RuntimeError, SinkError, SinkLimits, ToolCall,
};

fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tool-runtime-test-{name}-"))
        .tempdir()
        .unwrap()
}

/// Refunds: two of finance above 1,000, one of anyone below; the card
/// number shown masked.
fn refund() -> Tool {
    Tool::builder("refund")
        .description("Refunds an order")
        .approval_policy(|input: &Value, _rc: &tool_core::RequestContext| {
            if input["amount"].as_u64().unwrap_or(0) > 1_000 {
                tool_core::ApprovalRequirement::approvals(2).from_group("finance")
            } else {
                tool_core::ApprovalRequirement::required()
            }
        })
        .transform(ToolTransform::new().display(Phase::Approval, |ctx| {
            let mut shown = ctx.payload.clone();
            shown["card"] = json!("•••• 4242");
            Some(shown)
        }))
        .execute(|input: Value, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
        .unwrap()
}

/// Asks a question (suspends), then answers with the resume data.
fn confirm() -> Tool {
    Tool::builder("confirm")
        .description("Asks before going on")
        .resume_schema(json!({ "type": "boolean" }))
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            match ctx.resume_data().cloned() {
                None => ctx.suspend(json!({ "question": "go on?" })),
                Some(answer) => Ok::<_, ToolError>(json!({ "answered": answer })),
            }
        })
        .build()
        .unwrap()
}

/// A background report that fails when asked to.
fn report() -> Tool {
    Tool::builder("report")
        .description("Builds a report in the background")
        .background(BackgroundConfig::new().timeout_ms(10_000))
        .execute(|input: Value, _ctx| async move {
            if input["fail"] == json!(true) {
                return Err(ToolError::new("the report's source is down"));
            }
            Ok::<_, ToolError>(json!("ready"))
        })
        .build()
        .unwrap()
}

fn runtime_on(store: impl tool_runtime::store::IntoStore, notifications: bool) -> Runtime {
    Runtime::builder()
        .tools([refund(), confirm(), report()])
        .store(store)
        .notifications(notifications)
        .approval_ttl(Duration::from_secs(3600))
        .build()
        .unwrap()
}

async fn decide_as(
    runtime: &Runtime,
    call_id: &str,
    principal: Principal,
    decision: Decision,
) -> CallOutcome {
    let digest = runtime
        .inbox()
        .stored(call_id)
        .await
        .unwrap()
        .unwrap()
        .digest();
    runtime
        .decide_as(call_id, decision, Decider::new(principal, digest))
        .await
        .unwrap()
}

/// The outbox's notifications of `call_id`, in order.
async fn notified(runtime: &Runtime, call_id: &str) -> Vec<Notification> {
    let entries = runtime
        .inbox()
        .outbox(OutboxQuery::all().call(call_id))
        .await
        .unwrap();
    entries
        .into_iter()
        .map(|entry| entry.notification)
        .collect()
}

fn kinds(notifications: &[Notification]) -> Vec<NotificationKind> {
    notifications.iter().map(|n| n.kind).collect()
}

async fn every_change_is_notified(runtime: Runtime) {
    use NotificationKind::*;
    let finance = |name: &str| Principal::new(name).in_group("finance");

    // Two of finance: asked (what it needs, shown masked), a grant, the decision.
    let big = json!({ "order": "o-1", "amount": 5000, "card": "4242424242424242" });
    runtime
        .call(ToolCall::new("big", "refund", big).with_requester("agent-7"))
        .await;
    decide_as(&runtime, "big", finance("alice"), Decision::Approve).await;
    let done = decide_as(&runtime, "big", finance("bob"), Decision::Approve).await;
    assert!(done.output().is_some(), "{done:?}");
    let big = notified(&runtime, "big").await;
    // Every grant counted, the last one too, then the decision it completed.
    assert_eq!(
        kinds(&big),
        [ApprovalRequested, ApprovalGranted, ApprovalGranted, Decided]
    );
    let asked = &big[0].data;
    assert_eq!(
        asked["requirement"],
        json!({ "principals": 2, "group": "finance" })
    );
    assert_eq!(
        asked["input"]["card"], "•••• 4242",
        "values only as the display transform shows them"
    );
    assert_eq!(asked["requester"], "agent-7");
    assert!(asked["expiresAtMs"].as_u64().unwrap() > big[0].at_ms);
    assert_eq!(big[1].data["by"], "alice");
    assert_eq!(big[2].data["by"], "bob");
    assert_eq!(big[3].data["action"], "approve");
    assert_eq!(big[3].data["by"], "bob");
    assert_eq!(big[3].data["approvedBy"], json!(["alice", "bob"]));
    assert!(
        big.iter()
            .all(|n| n.tool_id == "refund" && n.id.starts_with("ntf_"))
    );

    // A decline, with its reason; a second decision changes nothing, so
    // nothing more is notified.
    runtime
        .call(ToolCall::new(
            "small",
            "refund",
            json!({ "order": "o-2", "amount": 50, "card": "1" }),
        ))
        .await;
    let declined = Decision::Decline(Some("duplicate order".into()));
    decide_as(&runtime, "small", Principal::new("carol"), declined).await;
    let again = runtime.approve("small").await;
    assert!(
        matches!(again, Ok(CallOutcome::Declined { .. })),
        "the recorded outcome: {again:?}"
    );
    let small = notified(&runtime, "small").await;
    assert_eq!(kinds(&small), [ApprovalRequested, Decided]);
    assert_eq!(
        (&small[1].data["action"], &small[1].data["reason"]),
        (&json!("decline"), &json!("duplicate order"))
    );

    // Suspended with what it asks and the schema of the answer; resumed.
    runtime
        .call(ToolCall::new("ask", "confirm", json!({})))
        .await;
    let resumed = runtime.resume("ask", json!(true)).await.unwrap();
    assert_eq!(resumed.output(), Some(&json!({ "answered": true })));
    let ask = notified(&runtime, "ask").await;
    assert_eq!(kinds(&ask), [Suspended, Resumed]);
    assert_eq!(ask[0].data["payload"], json!({ "question": "go on?" }));
    assert_eq!(ask[0].data["resumeSchema"], json!({ "type": "boolean" }));

    // Background tasks: completed, failed.
    for (id, fail) in [("task-ok", false), ("task-bad", true)] {
        runtime
            .call(ToolCall::new(id, "report", json!({ "fail": fail })))
            .await;
        let _ = runtime.wait(id).await;
    }
    assert_eq!(kinds(&notified(&runtime, "task-ok").await), [TaskCompleted]);
    let bad = notified(&runtime, "task-bad").await;
    assert_eq!(kinds(&bad), [TaskFailed]);
    assert!(
        bad[0].data["error"].to_string().contains("source is down"),
        "{bad:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_people_hear_of_is_notified_once_on_memory_and_sqlite() {
    every_change_is_notified(runtime_on(MemoryStore::new(), true)).await;
    let tmp = temp_dir("notified");
    every_change_is_notified(runtime_on(
        SqliteStore::open(tmp.path().join("s.sqlite")).unwrap(),
        true,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_approval_is_notified_and_a_runtime_without_notifications_writes_none() {
    let store = Arc::new(MemoryStore::new());
    let runtime = Runtime::builder()
        .tool(refund())
        .store(Arc::clone(&store))
        .notifications(true)
        .approval_ttl(Duration::from_millis(1))
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new(
            "late",
            "refund",
            json!({ "amount": 5, "card": "1" }),
        ))
        .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        runtime.inbox().waiting().await.unwrap().is_empty(),
        "expired on the way"
    );
    let late = notified(&runtime, "late").await;
    assert_eq!(
        kinds(&late),
        [
            NotificationKind::ApprovalRequested,
            NotificationKind::Expired
        ]
    );

    let quiet = runtime_on(MemoryStore::new(), false);
    quiet
        .call(ToolCall::new(
            "q",
            "refund",
            json!({ "amount": 5, "card": "1" }),
        ))
        .await;
    quiet.approve("q").await.unwrap();
    assert!(
        quiet
            .inbox()
            .outbox(OutboxQuery::all())
            .await
            .unwrap()
            .is_empty()
    );
}

/// A sink that keeps what it is given, failing as told first.
#[derive(Clone)]
struct Recorder {
    name: &'static str,
    got: Arc<Mutex<Vec<Notification>>>,
    /// Failures before it takes one: retryable, then permanent when set.
    failures_left: Arc<AtomicU32>,
    permanent: bool,
    /// How long it takes to answer.
    delay: Duration,
}

impl Recorder {
    fn new(name: &'static str) -> Self {
        Recorder {
            name,
            got: Arc::default(),
            failures_left: Arc::default(),
            permanent: false,
            delay: Duration::ZERO,
        }
    }

    fn got(&self) -> Vec<Notification> {
        self.got.lock().unwrap().clone()
    }
}

impl NotificationSink for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
        tokio::time::sleep(self.delay).await;
        let failing = self
            .failures_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(match self.permanent {
                true => SinkError::permanent("HTTP 410 Gone"),
                false => SinkError::retry("HTTP 503"),
            });
        }
        self.got.lock().unwrap().push(notification.clone());
        Ok(())
    }
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_attempts(3)
        .backoff_between(Duration::from_millis(10), Duration::from_millis(20))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_name_the_sinks_and_failures_are_retried_then_dead_then_sent_again() {
    let runtime = runtime_on(MemoryStore::new(), true);
    let (chat, mail) = (Recorder::new("chat"), Recorder::new("mail"));
    chat.failures_left.store(1, Ordering::SeqCst);
    let dispatcher = runtime
        .dispatcher()
        .sink(chat.clone())
        .sink(mail.clone())
        // Mail hears of requests only; chat of everything.
        .route(|n: &Notification| match n.kind {
            NotificationKind::ApprovalRequested => vec!["chat".into(), "mail".into()],
            _ => vec!["chat".into()],
        })
        .retry(quick_retries())
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new(
            "r1",
            "refund",
            json!({ "amount": 5, "card": "1" }),
        ))
        .await;
    let first = dispatcher.dispatch_once().await.unwrap();
    assert_eq!((first.claimed, first.retried), (1, 1), "{first:?}");
    assert_eq!(mail.got().len(), 1, "mail took it");
    let entry = &runtime.inbox().outbox(OutboxQuery::all()).await.unwrap()[0];
    assert_eq!(
        (entry.delivered_to.clone(), entry.last_error.as_deref()),
        (vec!["mail".to_owned()], Some("chat: HTTP 503"))
    );
    // Not due before its backoff.
    assert_eq!(dispatcher.dispatch_once().await.unwrap().claimed, 0);
    tokio::time::sleep(Duration::from_millis(25)).await;
    let second = dispatcher.dispatch_once().await.unwrap();
    assert_eq!(second.delivered, 1, "{second:?}");
    assert_eq!(
        (chat.got().len(), mail.got().len()),
        (1, 1),
        "mail is not sent it again"
    );

    // A refusal: dead at once, visible, sent again on request.
    let gone = Recorder {
        permanent: true,
        ..Recorder::new("gone")
    };
    gone.failures_left.store(1, Ordering::SeqCst);
    let dispatcher = runtime
        .dispatcher()
        .sink(gone.clone())
        .retry(quick_retries())
        .build()
        .unwrap();
    runtime.decline("r1", None).await.unwrap();
    assert_eq!(dispatcher.dispatch_once().await.unwrap().dead, 1);
    let dead = runtime
        .inbox()
        .outbox(OutboxQuery::all().state("dead"))
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].notification.kind, NotificationKind::Decided);
    assert_eq!(dead[0].last_error.as_deref(), Some("gone: HTTP 410 Gone"));
    assert!(
        runtime
            .inbox()
            .redeliver(dead[0].notification.seq)
            .await
            .unwrap()
    );
    assert_eq!(dispatcher.dispatch_once().await.unwrap().delivered, 1);
    assert_eq!(
        gone.got()[0].id,
        dead[0].notification.id,
        "the same id on every attempt"
    );

    // Retryable failures as many times as attempts: dead.
    let flaky = Recorder::new("flaky");
    flaky.failures_left.store(10, Ordering::SeqCst);
    let dispatcher = runtime
        .dispatcher()
        .sink(flaky.clone())
        .retry(quick_retries())
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new(
            "r2",
            "refund",
            json!({ "amount": 5, "card": "1" }),
        ))
        .await;
    let mut reports = Vec::new();
    for _ in 0..3 {
        reports.push(dispatcher.dispatch_once().await.unwrap());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        reports
            .iter()
            .map(|r| (r.retried, r.dead))
            .collect::<Vec<_>>(),
        [(1, 0), (1, 0), (0, 1)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_hangs_stalls_only_itself_and_a_call_s_notifications_go_out_in_order() {
    let runtime = runtime_on(MemoryStore::new(), true);
    let hangs = Recorder {
        delay: Duration::from_secs(3600),
        ..Recorder::new("hangs")
    };
    let quick = Recorder::new("quick");
    let dispatcher = runtime
        .dispatcher()
        .sink_with(
            hangs,
            SinkLimits::default().timeout(Duration::from_millis(200)),
        )
        .sink(quick.clone())
        .retry(quick_retries())
        .build()
        .unwrap();
    for n in 0..5 {
        let id = format!("h{n}");
        runtime
            .call(ToolCall::new(
                id,
                "refund",
                json!({ "amount": 5, "card": "1" }),
            ))
            .await;
    }
    let started = std::time::Instant::now();
    let report = dispatcher.dispatch_once().await.unwrap();
    assert_eq!((report.claimed, report.retried), (5, 5), "{report:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by the sink's time limit: {:?}",
        started.elapsed()
    );
    assert_eq!(quick.got().len(), 5, "the other sink delivered every one");
    let entry = &runtime.inbox().outbox(OutboxQuery::all()).await.unwrap()[0];
    assert!(
        entry
            .last_error
            .as_deref()
            .unwrap()
            .contains("hangs: no answer within"),
        "{entry:?}"
    );

    // A call's notifications reach a sink in the order of its changes,
    // however many dispatchers run at once.
    let ordered = runtime_on(Arc::new(MemoryStore::new()), true);
    let seen = Recorder::new("seen");
    let dispatchers: Vec<_> = (0..3)
        .map(|_| {
            ordered
                .dispatcher()
                .sink(seen.clone())
                .poll_every(Duration::from_millis(5))
                .build()
                .unwrap()
        })
        .collect();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let running: Vec<_> = dispatchers
        .into_iter()
        .map(|d| {
            let mut stopped = stopped.clone();
            tokio::spawn(d.run_until(async move {
                let _ = stopped.wait_for(|s| *s).await;
            }))
        })
        .collect();
    for n in 0..10 {
        let id = format!("o{n}");
        ordered
            .call(ToolCall::new(
                &id,
                "refund",
                json!({ "amount": 5000, "card": "1" }),
            ))
            .await;
        decide_as(
            &ordered,
            &id,
            Principal::new("ann").in_group("finance"),
            Decision::Approve,
        )
        .await;
        decide_as(
            &ordered,
            &id,
            Principal::new("ben").in_group("finance"),
            Decision::Approve,
        )
        .await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.got().len() < 40 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.send(true).unwrap();
    for run in running {
        run.await.unwrap();
    }
    let got = seen.got();
    assert_eq!(got.len(), 40, "each once");
    let mut by_call: HashMap<&str, Vec<NotificationKind>> = HashMap::new();
    for n in &got {
        by_call.entry(n.call_id.as_str()).or_default().push(n.kind);
    }
    use NotificationKind::*;
    let in_order = [ApprovalRequested, ApprovalGranted, ApprovalGranted, Decided];
    assert!(by_call.values().all(|k| *k == in_order), "{by_call:?}");
    let outbox = ordered.inbox().outbox(OutboxQuery::all()).await.unwrap();
    assert!(
        outbox
            .iter()
            .all(|e| matches!(e.state, DeliveryState::Delivered { .. }) && e.attempts == 1)
    );
}

#[tokio::test]
async fn a_dispatcher_that_could_not_work_is_refused_when_built() {
    let runtime = runtime_on(MemoryStore::new(), true);
    let refused = |built: Result<tool_runtime::Dispatcher, RuntimeError>| match built {
        Err(RuntimeError::Dispatcher { reason }) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(refused(runtime.dispatcher().build()).contains("no sink"));
    let twice = runtime
        .dispatcher()
        .sink(Recorder::new("a"))
        .sink(Recorder::new("a"))
        .build();
    assert!(refused(twice).contains("two sinks are named \"a\""));
    let slow = runtime
        .dispatcher()
        .lease(Duration::from_secs(5))
        .sink_with(
            Recorder::new("slow"),
            SinkLimits::default().timeout(Duration::from_secs(5)),
        );
    assert!(refused(slow.build()).contains("as long as the lease"));
    let no_turns = runtime
        .dispatcher()
        .sink_with(Recorder::new("n"), SinkLimits::default().concurrency(0));
    assert!(refused(no_turns.build()).contains("concurrency"));
    let never = runtime
        .dispatcher()
        .sink(Recorder::new("n"))
        .retry(RetryPolicy::default().max_attempts(0));
    assert!(refused(never.build()).contains("retry policy"));
    // A route to a sink it does not have: that notification is dead, named.
    let misrouted = runtime
        .dispatcher()
        .sink(Recorder::new("n"))
        .route(|_| vec!["elsewhere".into()])
        .build()
        .unwrap();
    runtime
        .call(ToolCall::new(
            "m",
            "refund",
            json!({ "amount": 5, "card": "1" }),
        ))
        .await;
    assert_eq!(misrouted.dispatch_once().await.unwrap().dead, 1);
    let dead = &runtime
        .inbox()
        .outbox(OutboxQuery::all().state("dead"))
        .await
        .unwrap()[0];
    assert_eq!(
        dead.last_error.as_deref(),
        Some("elsewhere: the route names no such sink")
    );
}

/// Hangs on the notifications of one call, takes the others at once.
struct HangsOn(&'static str, Recorder);

impl NotificationSink for HangsOn {
    fn name(&self) -> &str {
        "hangs-on"
    }

    async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
        if notification.call_id == self.0 {
            std::future::pending::<()>().await;
        }
        self.1.deliver(notification).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_dispatcher_goes_on_delivering_while_one_notification_hangs() {
    let runtime = runtime_on(MemoryStore::new(), true);
    let taken = Recorder::new("taken");
    let dispatcher = runtime
        .dispatcher()
        .sink_with(
            HangsOn("stuck", taken.clone()),
            SinkLimits::default().timeout(Duration::from_secs(30)),
        )
        .concurrency(4)
        .poll_every(Duration::from_millis(5))
        .build()
        .unwrap();
    let running = tokio::spawn(dispatcher.run());
    runtime
        .call(ToolCall::new(
            "stuck",
            "refund",
            json!({ "amount": 5, "card": "1" }),
        ))
        .await;
    for n in 0..20 {
        runtime
            .call(ToolCall::new(
                format!("free{n}"),
                "refund",
                json!({ "amount": 5, "card": "1" }),
            ))
            .await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while taken.got().len() < 20 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        taken.got().len(),
        20,
        "every other call's notification, while one hangs for 30 s"
    );
    let stuck = runtime
        .inbox()
        .outbox(OutboxQuery::all().call("stuck"))
        .await
        .unwrap();
    assert!(
        matches!(stuck[0].state, DeliveryState::Sending { .. }),
        "{stuck:?}"
    );
    running.abort();
}
