//! A tool's transforms in every phase a UI sees, through the runtime's
//! events: `ToolTransform::redact` hides a field from the input, the
//! approval request, the suspension's payload, the resume data and the
//! output, while the tool and the model get the raw values; transformers,
//! sync or async, see what the call gave in its other phases; an async
//! transformer that panics, gives nothing or overruns its time limit shows
//! the "payload unavailable" notice.

use std::time::Duration;

use serde_json::{Value, json};
use tool_core::transform::{Phase, Target, ToolTransform, TransformContext};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::{CallOutcome, EventKind, Events, Runtime, ToolCall};

/// Needs approval, then asks for a confirmation, then pays; every payload
/// carries a `token` that UIs must not show.
fn pay() -> Tool {
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .suspend_schema(json!({ "type": "object" }))
        .resume_schema(json!({ "type": "object" }))
        .transform(ToolTransform::new().redact(Target::Display, &["token"]))
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            let Some(data) = ctx.resume_data() else {
                return ctx.suspend(json!({ "question": "sure?", "token": "suspend-secret" }));
            };
            Ok::<_, ToolError>(json!({
                "paid": input["amount"],
                "token": "output-secret",
                "seen": [input["token"], data["token"]],
            }))
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redacted_field_is_hidden_in_every_phase_a_ui_sees_and_raw_for_the_tool() {
    let runtime = Runtime::builder().tool(pay()).build().unwrap();
    let mut events = runtime.events();
    let call = ToolCall::new("c1", "pay", json!({ "amount": 5, "token": "input-secret" }));
    assert!(matches!(
        runtime.call(call).await,
        CallOutcome::ApprovalRequired { .. }
    ));
    assert!(matches!(
        runtime.approve("c1").await.unwrap(),
        CallOutcome::Suspended { .. }
    ));
    let done = runtime
        .resume("c1", json!({ "ok": true, "token": "resume-secret" }))
        .await
        .unwrap();
    // Raw for the tool and the model.
    assert_eq!(
        done.output(),
        Some(
            &json!({ "paid": 5, "token": "output-secret", "seen": ["input-secret", "resume-secret"] })
        )
    );
    let mut shown = Vec::new();
    while let Some(event) = events.try_next() {
        let (phase, payload) = match event.kind {
            EventKind::InputAvailable { payload } => ("input", payload),
            EventKind::ApprovalRequired { payload, .. } => ("approval", payload),
            EventKind::Suspended { payload, .. } => ("suspend", payload),
            EventKind::Resumed { payload } => ("resume", payload),
            EventKind::Output { payload } => ("output", payload),
            _ => continue,
        };
        shown.push((phase, payload.display));
    }
    assert_eq!(
        shown,
        [
            ("input", json!({ "amount": 5 })),
            ("approval", json!({ "amount": 5 })),
            ("resume", json!({ "approved": true })),
            ("suspend", json!({ "question": "sure?" })),
            ("resume", json!({ "ok": true })),
            (
                "output",
                json!({ "paid": 5, "seen": ["input-secret", "resume-secret"] })
            ),
        ]
    );
}

/// What a transformer saw: its phase's payload and the call's values.
fn seen(ctx: &TransformContext<'_>) -> Value {
    let known = &ctx.known;
    json!({
        "payload": ctx.payload,
        "input": known.input,
        "output": known.output,
        "error": known.error,
        "suspend": known.suspend_payload,
        "resume": known.resume_data,
    })
}

/// `pay`'s steps with a transform per whole phase for `target`, each async
/// (answering after a yield) and showing what it saw.
fn pay_seeing(target: Target) -> Tool {
    let mut transform = ToolTransform::new();
    for phase in Phase::WHOLE {
        transform = transform.with_async(target, phase, |ctx| {
            let seen = seen(ctx);
            async move {
                tokio::task::yield_now().await;
                Some(seen)
            }
        });
    }
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .suspend_schema(json!({ "type": "object" }))
        .resume_schema(json!({ "type": "object" }))
        .transform(transform)
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            if input["fail"] == true {
                return Err(ToolError::new("card declined"));
            }
            let Some(data) = ctx.resume_data() else {
                return ctx.suspend(json!({ "question": "sure?" }));
            };
            Ok::<_, ToolError>(json!({ "paid": input["amount"], "ok": data["ok"] }))
        })
        .build()
        .unwrap()
}

/// The `(phase, display, transcript)` of the events sent so far.
fn shown(events: &mut Events) -> Vec<(&'static str, Value, Value)> {
    let mut shown = Vec::new();
    while let Some(event) = events.try_next() {
        let (phase, payload) = match event.kind {
            EventKind::InputAvailable { payload } => ("input", payload),
            EventKind::ApprovalRequired { payload, .. } => ("approval", payload),
            EventKind::Suspended { payload, .. } => ("suspend", payload),
            EventKind::Resumed { payload } => ("resume", payload),
            EventKind::Output { payload } => ("output", payload),
            EventKind::Error { payload } => ("error", payload),
            _ => continue,
        };
        shown.push((phase, payload.display, payload.transcript));
    }
    shown
}

/// The call's values a transformer saw (`seen`), by name; the rest null.
fn saw(payload: &Value, values: &[(&str, &Value)]) -> Value {
    let mut seen = json!({
        "payload": payload,
        "input": null, "output": null, "error": null, "suspend": null, "resume": null,
    });
    for (name, value) in values {
        seen[*name] = (*value).clone();
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_transformers_see_the_calls_values_in_every_phase() {
    for target in [Target::Display, Target::Transcript] {
        let runtime = Runtime::builder().tool(pay_seeing(target)).build().unwrap();
        let mut events = runtime.events();
        let input = json!({ "amount": 5 });
        let call = ToolCall::new("c1", "pay", input.clone());
        assert!(matches!(
            runtime.call(call).await,
            CallOutcome::ApprovalRequired { .. }
        ));
        runtime.approve("c1").await.unwrap();
        let data = json!({ "ok": true });
        let done = runtime.resume("c1", data.clone()).await.unwrap();
        let output = json!({ "paid": 5, "ok": true });
        assert_eq!(
            done.output(),
            Some(&output),
            "the caller gets the raw output"
        );
        let failing = json!({ "amount": 1, "fail": true });
        runtime
            .call(ToolCall::new("c2", "pay", failing.clone()))
            .await;
        runtime.approve("c2").await.unwrap();

        let approved = json!({ "approved": true });
        let question = json!({ "question": "sure?" });
        let (input_, failing_) = (("input", &input), ("input", &failing));
        let expected = [
            ("input", saw(&input, &[input_])),
            ("approval", saw(&input, &[input_])),
            ("resume", saw(&approved, &[input_, ("resume", &approved)])),
            ("suspend", saw(&question, &[input_, ("suspend", &question)])),
            (
                "resume",
                saw(&data, &[input_, ("suspend", &question), ("resume", &data)]),
            ),
            (
                "output",
                saw(
                    &output,
                    &[
                        input_,
                        ("output", &output),
                        ("suspend", &question),
                        ("resume", &data),
                    ],
                ),
            ),
            ("input", saw(&failing, &[failing_])),
            ("approval", saw(&failing, &[failing_])),
            ("resume", saw(&approved, &[failing_, ("resume", &approved)])),
        ];
        let mut got = shown(&mut events);
        let failed = got.pop().expect("the error event");
        let shown_to = |(phase, display, transcript): (&'static str, Value, Value)| match target {
            Target::Display => (phase, display),
            Target::Transcript => (phase, transcript),
        };
        assert_eq!(
            got.into_iter().map(shown_to).collect::<Vec<_>>(),
            expected,
            "{target:?}"
        );
        let (phase, failed) = shown_to(failed);
        assert_eq!(phase, "error");
        assert_eq!(failed["input"], failing, "{target:?}");
        assert_eq!(failed["error"]["message"], "card declined", "{target:?}");
        assert_eq!(failed["payload"], failed["error"]);
        assert_eq!(
            (&failed["output"], &failed["suspend"]),
            (&Value::Null, &Value::Null)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_delta_transformer_sees_the_fragment_and_an_async_one_suppresses_it() {
    let delta_tool = |transform: ToolTransform| {
        Tool::builder("search")
            .description("Searches")
            .transform(transform)
            .execute(|input: Value, _ctx| async move { Ok::<_, ToolError>(input) })
            .build()
            .unwrap()
    };
    let sync = delta_tool(ToolTransform::new().display(Phase::InputDelta, |ctx| {
        let seen = seen(ctx);
        Some(seen)
    }));
    let asynchronous = ToolTransform::new()
        .display_async(Phase::InputDelta, |ctx| {
            let payload = ctx.payload.clone();
            async move { Some(payload) }
        })
        .pass_through_others(Target::Display);
    let runtime = Runtime::builder().tool(sync).build().unwrap();
    let mut events = runtime.events();
    let mut stream = runtime.begin("c1", "search", Vec::new());
    stream.push(r#"{"q":"ru"#);
    stream.push(r#"st"}"#);
    assert_eq!(
        stream.finish().await.output(),
        Some(&json!({ "q": "rust" }))
    );
    let mut deltas = Vec::new();
    while let Some(event) = events.try_next() {
        if let EventKind::InputDelta { display } = event.kind {
            deltas.push(display);
        }
    }
    assert_eq!(
        deltas,
        [saw(&json!(r#"{"q":"ru"#), &[]), saw(&json!(r#"st"}"#), &[])]
    );

    let runtime = Runtime::builder()
        .tool(delta_tool(asynchronous))
        .build()
        .unwrap();
    let mut events = runtime.events();
    let mut stream = runtime.begin("c2", "search", Vec::new());
    stream.push(r#"{"q":"rust"}"#);
    assert_eq!(
        stream.finish().await.output(),
        Some(&json!({ "q": "rust" }))
    );
    let mut kinds = Vec::new();
    while let Some(event) = events.try_next() {
        match event.kind {
            EventKind::InputDelta { display } => kinds.push(("delta", display)),
            EventKind::InputAvailable { payload } => kinds.push(("input", payload.display)),
            _ => {}
        }
    }
    assert_eq!(
        kinds,
        [("input", json!({ "q": "rust" }))],
        "deltas shown as they stream cannot wait for an async transformer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_transformer_that_panics_gives_nothing_or_overruns_shows_the_notice() {
    let transform = ToolTransform::new()
        // Panics inside its future.
        .display_async(Phase::Input, |_ctx| async { panic!("transformer bug") })
        // Panics before returning its future.
        .display_async(
            Phase::Approval,
            |_ctx| -> std::future::Ready<Option<Value>> { panic!("transformer bug") },
        )
        .display_async(Phase::Suspend, |_ctx| async { None })
        .display_async(Phase::Output, |_ctx| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Some(json!("too late"))
        })
        // The transcript's transformer is its own: it still shows.
        .transcript_async(Phase::Output, |ctx| {
            let amount = ctx.known.input.map(|input| input["amount"].clone());
            async move { Some(json!({ "amount": amount })) }
        })
        .time_limit(Duration::from_millis(50));
    let tool = Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .suspend_schema(json!({ "type": "object" }))
        .resume_schema(json!({ "type": "object" }))
        .transform(transform)
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            if ctx.resume_data().is_none() {
                return ctx.suspend(json!({ "question": "sure?" }));
            }
            Ok::<_, ToolError>(json!({ "paid": input["amount"] }))
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let mut events = runtime.events();
    runtime
        .call(ToolCall::new("c1", "pay", json!({ "amount": 5 })))
        .await;
    runtime.approve("c1").await.unwrap();
    let started = std::time::Instant::now();
    let done = runtime.resume("c1", json!({ "ok": true })).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the call waited only the time limit"
    );
    assert_eq!(done.output(), Some(&json!({ "paid": 5 })));
    let unavailable =
        |phase: &str| json!({ "message": format!("Tool {phase} payload unavailable") });
    let displayed: Vec<_> = shown(&mut events)
        .into_iter()
        .map(|(phase, display, _)| (phase, display))
        .collect();
    assert_eq!(
        displayed,
        [
            ("input", unavailable("input-available")),
            ("approval", unavailable("approval")),
            ("resume", unavailable("resume")),
            ("suspend", unavailable("suspend")),
            ("resume", unavailable("resume")),
            ("output", unavailable("output-available")),
        ]
    );
    // The runtime goes on: the next call's transcript is projected as usual.
    let mut events = runtime.events();
    let _ = runtime
        .call(ToolCall::new("c2", "pay", json!({ "amount": 7 })))
        .await;
    runtime.approve("c2").await.unwrap();
    let done = runtime.resume("c2", json!({})).await.unwrap();
    assert_eq!(done.output(), Some(&json!({ "paid": 7 })));
    let output = shown(&mut events)
        .into_iter()
        .find(|(phase, ..)| *phase == "output")
        .expect("the output event");
    assert_eq!(
        output.2,
        json!({ "amount": 7 }),
        "the transcript used the input"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_through_others_shows_the_other_phases_raw_next_to_an_async_one() {
    let transform = ToolTransform::new()
        .display_async(Phase::Output, |ctx| {
            let city = ctx.known.input.map(|input| input["city"].clone());
            let temperature = ctx.payload["temperature"].clone();
            async move { Some(json!(format!("{temperature}° in {}", city?.as_str()?))) }
        })
        .pass_through_others(Target::Display);
    let tool = Tool::builder("weather")
        .description("Weather")
        .transform(transform)
        .execute(
            |_input: Value, _ctx| async move { Ok::<_, ToolError>(json!({ "temperature": 21 })) },
        )
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let mut events = runtime.events();
    let input = json!({ "city": "Paris" });
    let done = runtime
        .call(ToolCall::new("c1", "weather", input.clone()))
        .await;
    assert_eq!(done.output(), Some(&json!({ "temperature": 21 })));
    let displayed: Vec<_> = shown(&mut events)
        .into_iter()
        .map(|(phase, display, _)| (phase, display))
        .collect();
    assert_eq!(
        displayed,
        [("input", input), ("output", json!("21° in Paris"))]
    );
}
