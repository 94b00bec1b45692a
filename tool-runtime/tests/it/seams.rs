//! The public API that transports and agent loops of other crates build on
//! (tool-mcp and tool-agent use nothing else): a call's watch, decisions
//! made for an agent run, the run records, the pending notices and the
//! display projections; and the call's envelope.

use std::time::Duration;

use serde_json::json;
use tool_core::transform::{CallValues, Phase, ToolTransform};
use tool_core::{AgentContext, Tool, ToolError};
use tool_runtime::store::StoredRun;
use tool_runtime::{CallOutcome, Decision, Notice, Payload, Runtime, RuntimeError, ToolCall};

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn a_watch_gets_its_own_calls_progress_and_logs_in_order_and_nothing_of_other_calls() {
    block_on(async {
        let import = Tool::builder("import")
            .description("Import rows")
            .execute(|input, ctx| async move {
                ctx.progress(1.0, Some(2.0), Some("half"));
                ctx.observe().info("rows read");
                ctx.progress(2.0, Some(2.0), None);
                Ok::<_, ToolError>(input)
            })
            .build()
            .unwrap();
        let runtime = Runtime::builder().tool(import).build().unwrap();
        let mut watch = runtime.watch("c1");
        let watched = tokio::spawn(runtime.call(ToolCall::new("c1", "import", json!({}))));
        runtime.call(ToolCall::new("c2", "import", json!({}))).await;
        assert!(watched.await.unwrap().output().is_some());
        let mut seen = Vec::new();
        while let Some(notice) = watch.try_next() {
            seen.push(match notice {
                Notice::Progress(progress) => format!("progress {}", progress.value),
                Notice::Log(record) => format!("log {}", record.message),
                other => panic!("unexpected notice {other:?}"),
            });
        }
        assert_eq!(seen, ["progress 1", "log rows read", "progress 2"]);
    });
}

/// `ctx.writer()`: custom chunks reach the call's watch and the runtime's
/// events in order with its progress and logs; a chunk that cannot be
/// serialized is the tool's error, never a panic.
#[test]
fn a_tools_custom_chunks_reach_its_watch_and_the_events_in_order() {
    block_on(async {
        let import = Tool::builder("import")
            .description("Import rows")
            .execute(|input, ctx| async move {
                ctx.progress(1.0, Some(2.0), None);
                ctx.writer().write(&json!({ "row": 1 }))?;
                ctx.observe().info("rows read");
                ctx.writer().write(&json!({ "row": 2 }))?;
                if input["bad"] == json!(true) {
                    let not_json = std::collections::BTreeMap::from([((1, 2), "pair keys")]);
                    ctx.writer().write(&not_json)?;
                }
                Ok::<_, ToolError>(json!("done"))
            })
            .build()
            .unwrap();
        let runtime = Runtime::builder().tool(import).build().unwrap();
        let mut watch = runtime.watch("c1");
        let mut events = runtime.events();
        let done = runtime.call(ToolCall::new("c1", "import", json!({}))).await;
        assert_eq!(done.output(), Some(&json!("done")));
        let describe = |notice: Notice| match notice {
            Notice::Progress(progress) => format!("progress {}", progress.value),
            Notice::Log(record) => format!("log {}", record.message),
            Notice::Custom(chunk) => format!("custom {chunk}"),
            other => panic!("unexpected notice {other:?}"),
        };
        let mut watched = Vec::new();
        while let Some(notice) = watch.try_next() {
            watched.push(describe(notice));
        }
        let expected = [
            "progress 1",
            r#"custom {"row":1}"#,
            "log rows read",
            r#"custom {"row":2}"#,
        ];
        assert_eq!(watched, expected);
        let mut customs = Vec::new();
        while let Some(event) = events.try_next() {
            if let tool_runtime::EventKind::Custom(chunk) = event.kind {
                customs.push(chunk);
            }
        }
        assert_eq!(customs, [json!({ "row": 1 }), json!({ "row": 2 })]);

        let bad = runtime
            .call(ToolCall::new("c2", "import", json!({ "bad": true })))
            .await;
        let CallOutcome::Failed { error } = bad else {
            panic!("the tool fails: {bad:?}")
        };
        assert!(
            error.message().contains("key must be a string"),
            "{error:?}"
        );
    });
}

#[test]
fn a_decision_for_an_agent_runs_the_call_with_that_agent_and_wins_once() {
    block_on(async {
        let delete = Tool::builder("delete-file")
            .description("Delete a file")
            .require_approval(true)
            .execute(|_input, ctx| async move {
                let agent = ctx.agent().map(|agent| agent.agent_id.clone());
                Ok::<_, ToolError>(json!({ "agent": agent }))
            })
            .build()
            .unwrap();
        let runtime = Runtime::builder().tool(delete).build().unwrap();
        runtime
            .call(ToolCall::new("c1", "delete-file", json!({})))
            .await;
        let mut extensions = tool_core::Extensions::new();
        extensions.insert(AgentContext::new("support", "run-1"));
        let first = runtime
            .decide("c1", Decision::Approve, extensions.clone())
            .await
            .unwrap();
        assert_eq!(first.output(), Some(&json!({ "agent": "support" })));
        // The second decision finds the recorded outcome.
        let again = runtime
            .decide("c1", Decision::Decline(Some("too late".into())), extensions)
            .await
            .unwrap();
        assert_eq!(again, first);
        let unknown = runtime
            .decide(
                "nope",
                Decision::Resume(json!({})),
                tool_core::Extensions::new(),
            )
            .await;
        assert!(
            matches!(unknown, Err(RuntimeError::UnknownCall { .. })),
            "{unknown:?}"
        );
    });
}

#[test]
fn runs_are_saved_compare_and_set_and_shared_by_runtimes_on_one_store() {
    block_on(async {
        let store = std::sync::Arc::new(tool_runtime::store::MemoryStore::new());
        let one = Runtime::builder().store(store.clone()).build().unwrap();
        let two = Runtime::builder().store(store).build().unwrap();
        assert_eq!(one.runs().load("r1").await.unwrap(), None);
        let first = one.runs().save("r1", None, false, json!({ "n": 1 })).await;
        assert_eq!(first.unwrap(), Some(1));
        // Creating it again loses: it exists.
        let again = two.runs().save("r1", None, false, json!({ "n": 9 })).await;
        assert_eq!(again.unwrap(), None);
        assert_eq!(
            two.runs()
                .save("r1", Some(1), true, json!({ "n": 2 }))
                .await
                .unwrap(),
            Some(2)
        );
        assert_eq!(
            one.runs().load("r1").await.unwrap(),
            Some(StoredRun::new("r1", 2, true, json!({ "n": 2 })))
        );
    });
}

#[test]
fn the_settled_retention_is_the_builders() {
    let runtime = Runtime::builder()
        .settled_retention(Duration::from_secs(90))
        .build()
        .unwrap();
    assert_eq!(runtime.retention().age, Duration::from_secs(90));
    let default = Runtime::builder().build().unwrap();
    assert_eq!(default.retention().age, Duration::from_secs(24 * 60 * 60));
}

#[test]
fn the_notices_of_a_pending_call_are_those_its_outcome_gives() {
    let approval = CallOutcome::ApprovalRequired {
        call_id: "c1".into(),
        input: json!({}),
        resume_schema: None,
    };
    assert_eq!(
        approval.pending_notice("transfer", "no user is here"),
        Some(CallOutcome::approval_notice(
            "transfer",
            "c1",
            "no user is here"
        ))
    );
    let schema = json!({ "type": "object" });
    let suspended = CallOutcome::Suspended {
        call_id: "c2".into(),
        input: json!({}),
        payload: json!({ "question": "Which seat?" }),
        resume_schema: Some(schema.clone()),
    };
    let text = CallOutcome::suspension_notice(
        "book",
        "c2",
        &json!({ "question": "Which seat?" }),
        Some(&schema),
        "no user is here",
    );
    assert_eq!(
        suspended.pending_notice("book", "no user is here"),
        Some(text.clone())
    );
    assert!(text.contains(r#"{"question":"Which seat?"}"#), "{text}");
    assert!(
        text.contains(r#"data matching the schema {"type":"object"}"#),
        "{text}"
    );
}

#[tokio::test]
async fn payload_projections_follow_the_tools_transforms() {
    let tool = Tool::builder("login")
        .description("Log in")
        .transform(
            ToolTransform::new()
                .display(Phase::Input, |ctx| {
                    Some(json!({ "user": ctx.payload["user"] }))
                })
                .display(Phase::InputDelta, |_ctx| None),
        )
        .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("ok")) })
        .build()
        .unwrap();
    let raw = json!({ "user": "ada", "password": "hunter2" });
    let none = CallValues::default();
    let shown = Payload::of(Some(&tool), "c1", "login", Phase::Input, &raw, none).await;
    assert_eq!(shown.display, json!({ "user": "ada" }));
    assert_eq!(shown.transcript, raw, "no transcript transform: raw");
    // A phase without a display transformer is not shown raw once the tool
    // has display transforms.
    let output = Payload::of(
        Some(&tool),
        "c1",
        "login",
        Phase::Output,
        &json!("ok"),
        none,
    )
    .await;
    assert_ne!(output.display, json!("ok"));
    assert_eq!(
        Payload::delta_display(Some(&tool), "c1", "login", "{\"pass"),
        None
    );
    assert_eq!(
        Payload::delta_display(None, "c1", "login", "{\"pass"),
        Some(json!("{\"pass"))
    );
}

#[test]
fn the_envelope_carries_the_agent_as_an_extension_and_the_requester_to_the_policy() {
    block_on(async {
        let report = Tool::builder("report")
            .description("Reports who runs it")
            .execute(|_input, ctx| async move {
                let run = ctx.agent().map(|agent| agent.run_id.clone());
                let by_extension = ctx.extension::<AgentContext>().map(|a| a.run_id.clone());
                Ok::<_, ToolError>(json!({ "run": run, "extension": by_extension }))
            })
            .build()
            .unwrap();
        let runtime = Runtime::builder()
            .tool(report)
            .approval_policy(|check| check.requester == Some("intern"))
            .build()
            .unwrap();
        let call = ToolCall::new("c1", "report", json!({}))
            .with_agent(AgentContext::new("support", "run-3"))
            .with_requester("lead");
        assert_eq!(call.head.requester.as_deref(), Some("lead"));
        let outcome = runtime.call(call).await;
        assert_eq!(
            outcome.output(),
            Some(&json!({ "run": "run-3", "extension": "run-3" }))
        );
        let asked = runtime
            .call(ToolCall::new("c2", "report", json!({})).with_requester("intern"))
            .await;
        assert!(
            matches!(asked, CallOutcome::ApprovalRequired { .. }),
            "{asked:?}"
        );
        // Streamed input carries the same envelope.
        let mut stream = runtime
            .begin("c3", "report", Vec::new())
            .with_requester("intern");
        stream.push("{}");
        assert!(matches!(
            stream.finish().await,
            CallOutcome::ApprovalRequired { .. }
        ));
    });
}

#[test]
fn the_assembler_shapes_each_calls_head_and_a_cut_off_call_never_runs() {
    use tool_core::decode::ToolCallEvent;
    use tool_core::provider::Provider;
    use tool_runtime::{Assembled, ToolCallAssembler};

    block_on(async {
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = ran.clone();
        let search = Tool::builder("search")
            .description("Searches")
            .execute(move |input, ctx| {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok::<_, ToolError>(json!({ "q": input["q"], "call": ctx.call_id() }))
                }
            })
            .build()
            .unwrap();
        let runtime = Runtime::builder().tool(search).build().unwrap();
        let mut calls =
            ToolCallAssembler::new(&runtime, Provider::OpenAiChat).with_head(|mut head| {
                head.call_id = format!("run-1/{}", head.call_id);
                head
            });
        let start = |id: &str| ToolCallEvent::Start {
            call_id: id.into(),
            tool_name: "search".into(),
        };
        assert!(matches!(
            calls.apply(start("a")),
            Some(Assembled::Started { .. })
        ));
        assert!(matches!(
            calls.apply(start("b")),
            Some(Assembled::Started { .. })
        ));
        let delta = ToolCallEvent::InputDelta {
            call_id: "a".into(),
            delta: r#"{"q":"ru"#.into(),
        };
        assert!(matches!(calls.apply(delta), Some(Assembled::Delta { .. })));
        assert_eq!(calls.partial("a"), Some(&json!({ "q": "ru" })));
        let end = ToolCallEvent::InputEnd {
            call_id: "a".into(),
            input: json!({ "q": "rust" }),
        };
        let Some(Assembled::Complete(call)) = calls.apply(end) else {
            panic!("complete")
        };
        assert_eq!(
            (call.call_id.as_str(), call.stream.call_id()),
            ("a", "run-1/a")
        );
        let outcome = call.stream.finish_with(call.input).await;
        assert_eq!(
            outcome.output(),
            Some(&json!({ "q": "rust", "call": "run-1/a" }))
        );
        let cut = ToolCallEvent::Incomplete {
            call_id: "b".into(),
            tool_name: "search".into(),
            partial_text: r#"{"q":"#.into(),
            reason: "the response ended".into(),
        };
        let Some(Assembled::CutOff {
            error,
            partial_text,
            ..
        }) = calls.apply(cut)
        else {
            panic!("cut off")
        };
        assert_eq!(error.kind(), tool_core::ErrorKind::InvalidJson);
        assert!(
            error
                .message()
                .contains("was cut off before its arguments were complete"),
            "{}",
            error.message()
        );
        assert_eq!(partial_text, r#"{"q":"#);
        // An end for a call that is no longer open changes nothing.
        let late = ToolCallEvent::InputEnd {
            call_id: "b".into(),
            input: json!({}),
        };
        assert!(calls.apply(late).is_none());
        assert_eq!(
            ran.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "only the complete call ran"
        );
    });
}
