//! The call pipeline through the public API: tools, validation, approval,
//! suspend/resume.

use crate::common;

use std::sync::{Arc, Mutex};

use common::{asking_tool, echo_tool};
use serde_json::{Value, json};
use tool_core::{ErrorKind, ModelOutput, RequestContext, Tool, ToolContext, ToolError, tool};
use tool_runtime::{CallOutcome, PendingKind, Runtime, RuntimeError, ToolCall};

/// Where to look.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct WeatherInput {
    /// City name
    location: String,
}

/// Get the weather
#[tool(id = "weather-tool")]
pub async fn weather(WeatherInput { location }: WeatherInput) -> Result<String, ToolError> {
    Ok(format!("sunny in {location}"))
}

#[test]
fn runtime_is_clone_send_sync_and_clones_share_state() {
    fn assert_traits<T: Clone + Send + Sync + 'static>() {}
    assert_traits::<Runtime>();
    let (tool, _) = echo_tool("echo", |b| b.require_approval(true));
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let clone = runtime.clone();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            runtime.call(ToolCall::new("c1", "echo", json!({}))).await;
            assert_eq!(clone.inbox().waiting().await.unwrap().len(), 1);
            assert!(clone.approve("c1").await.unwrap().output().is_some());
        });
}

#[test]
fn two_tools_with_one_id_is_a_build_error() {
    let (a, _) = echo_tool("same", |b| b);
    let (b, _) = echo_tool("same", |b| b);
    let error = Runtime::builder().tool(a).tool(b).build().unwrap_err();
    assert!(
        error.to_string().contains("duplicate tool id \"same\""),
        "{error}"
    );
}

#[tokio::test]
async fn unknown_tool_fails_with_the_reference_text() {
    let (echo, _) = echo_tool("echo", |b| b);
    let runtime = Runtime::builder()
        .tool(echo)
        .tool(WeatherTool)
        .build()
        .unwrap();
    let outcome = runtime.call(ToolCall::new("c1", "wether", "{}")).await;
    let error = outcome.error().expect("failed");
    assert_eq!(error.kind(), ErrorKind::UnknownTool);
    assert_eq!(
        error.message(),
        r#"Tool "wether" not found. Available tools: echo, weather-tool."#
    );
}

#[tokio::test]
async fn macro_and_builder_tools_share_the_call_path() {
    let (echo, runs) = echo_tool("echo", |b| b);
    let runtime = Runtime::builder()
        .tool(echo)
        .tool(WeatherTool)
        .build()
        .unwrap();
    let outcome = runtime
        .call(ToolCall::new(
            "c1",
            "weather-tool",
            r#"{"location": "Paris"}"#,
        ))
        .await;
    assert_eq!(outcome.output(), Some(&json!("sunny in Paris")));
    let invalid = runtime
        .call(ToolCall::new("c2", "weather-tool", "{}"))
        .await;
    let message = invalid.error().unwrap().message().to_owned();
    assert!(
        message.starts_with("Tool input validation failed for weather-tool."),
        "{message}"
    );
    assert!(message.contains("- location: Required"), "{message}");
    let echoed = runtime
        .call(ToolCall::new("c3", "echo", r#"{"a": 1}"#))
        .await;
    assert_eq!(echoed.output(), Some(&json!({ "echo": { "a": 1 } })));
    assert_eq!(runs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn request_context_is_validated_before_the_gate_and_execute() {
    let (tool, runs) = echo_tool("scoped", |b| {
        b.require_approval(true).request_context_schema(json!({
            "type": "object",
            "properties": { "userId": { "type": "string" } },
            "required": ["userId"]
        }))
    });
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let outcome = runtime.call(ToolCall::new("c1", "scoped", "{}")).await;
    assert_eq!(
        outcome.error().unwrap().kind(),
        ErrorKind::RequestContextValidation
    );
    assert!(
        runtime.inbox().waiting().await.unwrap().is_empty(),
        "an invalid call is never stored"
    );

    let call = ToolCall::new("c2", "scoped", "{}")
        .with_request_context(RequestContext::new().with("userId", "u-1"));
    assert!(matches!(
        runtime.call(call).await,
        CallOutcome::ApprovalRequired { .. }
    ));
    let stored = runtime.inbox().waiting().await.unwrap();
    assert_eq!(stored[0].call.head.request_context["userId"], "u-1");
    runtime.approve("c2").await.unwrap();
    assert_eq!(runs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn to_model_output_is_attached_to_completed() {
    let (tool, _) = echo_tool("echo", |b| {
        b.to_model_output(|out| ModelOutput::text(out["echo"]["q"].to_string()))
    });
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let outcome = runtime
        .call(ToolCall::new("c1", "echo", json!({ "q": 7 })))
        .await;
    let CallOutcome::Completed {
        output,
        model_output,
        ..
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(output, &json!({ "echo": { "q": 7 } }));
    assert_eq!(model_output, &Some(ModelOutput::text("7")));
}

// ---- approval ----------------------------------------------------------

#[tokio::test]
async fn decline_never_executes_and_the_model_gets_the_reason() {
    let (tool, runs) = echo_tool("delete", |b| b.require_approval(true));
    let runtime = Runtime::builder().tool(tool).build().unwrap();

    let outcome = runtime
        .call(ToolCall::new("c1", "delete", json!({ "path": "/" })))
        .await;
    let CallOutcome::ApprovalRequired {
        call_id,
        input,
        resume_schema,
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(call_id, "c1");
    assert_eq!(input, &json!({ "path": "/" }));
    assert_eq!(
        resume_schema.as_ref().unwrap()["required"],
        json!(["approved"])
    );
    assert_eq!(
        outcome.to_model_value(),
        "Tool call is waiting for human approval."
    );

    let declined = runtime.decline("c1", None).await.unwrap();
    assert_eq!(declined, CallOutcome::Declined { reason: None });
    assert_eq!(
        declined.to_model_value(),
        "Tool call was not approved by the user"
    );

    runtime
        .call(ToolCall::new("c2", "delete", json!({ "path": "/etc" })))
        .await;
    let declined = runtime.decline("c2", Some("too dangerous")).await.unwrap();
    assert_eq!(declined.to_model_value(), "too dangerous");

    assert!(
        runs.lock().unwrap().is_empty(),
        "a declined call never runs"
    );
    // A late approval gets the recorded decline; the call never runs.
    assert_eq!(
        runtime.approve("c1").await.unwrap(),
        CallOutcome::Declined { reason: None }
    );
    assert!(runs.lock().unwrap().is_empty());
}

/// A decision asked again returns the recorded outcome (the durable-calls
/// issue: a client that lost the answer asks again safely); it used to be
/// an `UnknownCall` error.
#[tokio::test]
async fn approve_twice_returns_the_recorded_outcome_and_runs_once() {
    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    runtime
        .call(ToolCall::new("c1", "pay", json!({ "amount": 5 })))
        .await;
    assert!(
        runs.lock().unwrap().is_empty(),
        "nothing runs before approval"
    );

    let first = runtime.approve("c1").await.unwrap();
    assert_eq!(first.output(), Some(&json!({ "echo": { "amount": 5 } })));
    let second = runtime.approve("c1").await.unwrap();
    assert_eq!(second, first);
    assert_eq!(
        runtime.decline("c1", None).await.unwrap(),
        first,
        "too late to decline: the call settled"
    );
    assert_eq!(runs.lock().unwrap().len(), 1);

    // Concurrent approvals of one call: exactly one runs it; the other is
    // told it runs, or gets its recorded outcome.
    runtime
        .call(ToolCall::new("c2", "pay", json!({ "amount": 6 })))
        .await;
    let (a, b) = tokio::join!(runtime.approve("c2"), runtime.approve("c2"));
    for answer in [a, b] {
        match answer {
            Ok(outcome) => assert_eq!(outcome.output(), Some(&json!({ "echo": { "amount": 6 } }))),
            Err(error) => assert!(matches!(error, RuntimeError::Running { .. }), "{error}"),
        }
    }
    assert_eq!(runs.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn approving_an_unknown_or_other_call_id_is_an_error() {
    let (pay, pay_runs) = echo_tool("pay", |b| b.require_approval(true));
    let (ask, _) = asking_tool("ask");
    let runtime = Runtime::builder().tool(pay).tool(ask).build().unwrap();
    runtime.call(ToolCall::new("pay-1", "pay", json!({}))).await;
    runtime.call(ToolCall::new("ask-1", "ask", json!({}))).await;

    let unknown = runtime.approve("pay-2").await.unwrap_err();
    assert!(
        matches!(unknown, RuntimeError::UnknownCall { .. }),
        "{unknown}"
    );
    let suspended = runtime.approve("ask-1").await.unwrap_err();
    assert!(
        matches!(suspended, RuntimeError::NotAwaitingApproval { .. }),
        "{suspended}"
    );
    let not_suspended = runtime.resume("pay-1", json!(true)).await.unwrap_err();
    assert!(
        matches!(not_suspended, RuntimeError::NotSuspended { .. }),
        "{not_suspended}"
    );
    assert!(pay_runs.lock().unwrap().is_empty());
    // Both are still pending, untouched by the wrong calls.
    let kinds: Vec<_> = runtime
        .inbox()
        .waiting()
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.call.head.call_id, p.call.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ask-1".into(), PendingKind::Suspended),
            ("pay-1".into(), PendingKind::Approval)
        ]
    );
}

#[tokio::test]
async fn arguments_written_by_the_model_cannot_approve() {
    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    for (id, args) in [
        ("c1", r#"{"approved": true}"#),
        (
            "c2",
            r#"{"approved": true, "approval": "granted", "resumeData": {"approved": true}}"#,
        ),
    ] {
        let outcome = runtime.call(ToolCall::new(id, "pay", args)).await;
        assert!(
            matches!(outcome, CallOutcome::ApprovalRequired { .. }),
            "{outcome:?}"
        );
    }
    let rc = RequestContext::new().with("approved", true);
    let outcome = runtime
        .call(ToolCall::new("c3", "pay", r#"{"approved": true}"#).with_request_context(rc))
        .await;
    assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    assert!(runs.lock().unwrap().is_empty());
    assert_eq!(runtime.inbox().waiting().await.unwrap().len(), 3);
}

#[tokio::test]
async fn parallel_pending_approvals_of_one_tool_stay_apart() {
    let (tool, runs) = echo_tool("pay", |b| b.require_approval(true));
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let handles: Vec<_> = (0..10)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                runtime
                    .call(ToolCall::new(format!("c{i}"), "pay", json!({ "n": i })))
                    .await
            })
        })
        .collect();
    for handle in handles {
        assert!(matches!(
            handle.await.unwrap(),
            CallOutcome::ApprovalRequired { .. }
        ));
    }
    for i in (0..10).rev() {
        let id = format!("c{i}");
        if i % 3 == 0 {
            runtime.decline(&id, None).await.unwrap();
        } else {
            let outcome = runtime.approve(&id).await.unwrap();
            assert_eq!(outcome.output(), Some(&json!({ "echo": { "n": i } })));
        }
    }
    let mut ran: Vec<i64> = runs
        .lock()
        .unwrap()
        .iter()
        .map(|v| v["n"].as_i64().unwrap())
        .collect();
    ran.sort_unstable();
    assert_eq!(ran, [1, 2, 4, 5, 7, 8]);
}

#[tokio::test]
async fn approval_rules_flag_or_policy_tool_policy_authoritative_panic_means_required() {
    let (plain, _) = echo_tool("plain", |b| b);
    let (flagged, _) = echo_tool("flagged", |b| b.require_approval(true));
    let (own_policy_no, _) = echo_tool("own-no", |b| b.approval_policy(|_, _| false));
    let (own_policy_big, _) = echo_tool("own-big", |b| {
        b.approval_policy(|input, _| input["amount"].as_i64().unwrap_or(0) > 100)
    });
    let (own_policy_panics, _) = echo_tool("own-panics", |b| {
        b.approval_policy(|_, _| -> bool { panic!("policy bug") })
    });
    let tools = [
        plain,
        flagged,
        own_policy_no,
        own_policy_big,
        own_policy_panics,
    ];
    let needs = |runtime: Runtime, tool: &'static str, input: Value| async move {
        let outcome = runtime
            .call(ToolCall::new(format!("{tool}-{input}"), tool, input))
            .await;
        matches!(outcome, CallOutcome::ApprovalRequired { .. })
    };

    let none = Runtime::builder().tools(tools.clone()).build().unwrap();
    assert!(!needs(none.clone(), "plain", json!({})).await);
    assert!(needs(none.clone(), "flagged", json!({})).await);
    assert!(!needs(none.clone(), "own-no", json!({})).await);
    assert!(needs(none.clone(), "own-big", json!({ "amount": 500 })).await);
    assert!(!needs(none.clone(), "own-big", json!({ "amount": 5 })).await);
    assert!(needs(none.clone(), "own-panics", json!({})).await);

    let all = Runtime::builder()
        .tools(tools.clone())
        .require_approval(true)
        .build()
        .unwrap();
    assert!(needs(all.clone(), "plain", json!({})).await);
    assert!(
        !needs(all.clone(), "own-no", json!({})).await,
        "a tool's policy fn is authoritative"
    );

    let by_fn = Runtime::builder()
        .tools(tools.clone())
        .approval_policy(|check| check.input.get("danger").is_some())
        .build()
        .unwrap();
    assert!(!needs(by_fn.clone(), "plain", json!({})).await);
    assert!(needs(by_fn.clone(), "plain", json!({ "danger": 1 })).await);
    assert!(
        needs(by_fn.clone(), "flagged", json!({})).await,
        "flag OR policy"
    );

    let panicking = Runtime::builder()
        .tools(tools)
        .approval_policy(|_| -> bool { panic!("runtime policy bug") })
        .build()
        .unwrap();
    assert!(
        needs(panicking, "plain", json!({})).await,
        "a panicking policy means approval required"
    );
}

// ---- suspend / resume ---------------------------------------------------

#[tokio::test]
async fn suspend_stores_the_call_and_resume_reruns_with_data_and_payload() {
    let (ask, runs) = asking_tool("ask");
    let runtime = Runtime::builder().tool(ask).build().unwrap();
    let call = ToolCall::new("c1", "ask", json!({ "q": "color?" }))
        .with_request_context(RequestContext::new().with("userId", "u-9"));
    let outcome = runtime.call(call).await;
    let CallOutcome::Suspended {
        call_id,
        input,
        payload,
        resume_schema,
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(call_id, "c1");
    assert_eq!(input, &json!({ "q": "color?" }));
    assert_eq!(payload, &json!({ "asked": { "q": "color?" } }));
    assert!(resume_schema.is_some());

    let stored = runtime.inbox().waiting().await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].call.head.tool_id, "ask");
    assert_eq!(stored[0].call.kind, PendingKind::Suspended);
    assert_eq!(stored[0].call.input, json!({ "q": "color?" }));
    assert_eq!(
        stored[0].call.payload,
        Some(json!({ "asked": { "q": "color?" } }))
    );
    assert_eq!(stored[0].call.head.request_context["userId"], "u-9");

    let resumed = runtime.resume("c1", json!("blue")).await.unwrap();
    assert_eq!(
        resumed.output(),
        Some(
            &json!({ "input": { "q": "color?" }, "data": "blue", "payload": { "asked": { "q": "color?" } } })
        )
    );
    assert_eq!(runs.lock().unwrap().len(), 2);
    assert!(runtime.inbox().waiting().await.unwrap().is_empty());
}

#[tokio::test]
async fn falsy_resume_data_are_values_not_absence() {
    let (ask, _) = asking_tool("ask");
    let runtime = Runtime::builder().tool(ask).build().unwrap();
    for (i, data) in [json!(false), json!(0), json!("")].into_iter().enumerate() {
        let id = format!("c{i}");
        runtime
            .call(ToolCall::new(id.as_str(), "ask", json!({})))
            .await;
        let outcome = runtime.resume(&id, data.clone()).await.unwrap();
        assert_eq!(outcome.output().unwrap()["data"], data, "{outcome:?}");
    }
}

#[tokio::test]
async fn invalid_resume_data_is_a_result_and_the_call_stays_suspended() {
    let (ask, runs) = asking_tool("ask");
    let runtime = Runtime::builder().tool(ask).build().unwrap();
    runtime.call(ToolCall::new("c1", "ask", json!({}))).await;
    let outcome = runtime.resume("c1", json!([1, 2])).await.unwrap();
    assert_eq!(
        outcome.error().unwrap().kind(),
        ErrorKind::ResumeValidation,
        "{outcome:?}"
    );
    assert_eq!(
        runs.lock().unwrap().len(),
        1,
        "the tool did not run with bad data"
    );
    let outcome = runtime.resume("c1", json!(true)).await.unwrap();
    assert_eq!(outcome.output().unwrap()["data"], true);
}

/// A second resume returns the recorded outcome of the first (it used to be
/// an `UnknownCall` error; see the durable-calls issue), never a second run.
#[tokio::test]
async fn a_second_resume_returns_the_recorded_outcome_not_a_second_run() {
    let (ask, runs) = asking_tool("ask");
    let runtime = Runtime::builder().tool(ask).build().unwrap();
    runtime.call(ToolCall::new("c1", "ask", json!({}))).await;
    let first = runtime.resume("c1", json!(1)).await.unwrap();
    let again = runtime.resume("c1", json!(2)).await.unwrap();
    assert_eq!(again, first);
    assert_eq!(
        again.output().unwrap()["data"],
        1,
        "the first resume's data"
    );
    assert_eq!(runs.lock().unwrap().len(), 2, "first run + one resume");

    runtime.call(ToolCall::new("c2", "ask", json!({}))).await;
    let (a, b) = tokio::join!(
        runtime.resume("c2", json!(1)),
        runtime.resume("c2", json!(2))
    );
    let answered: Vec<_> = [a, b]
        .into_iter()
        .filter_map(|answer| match answer {
            Ok(outcome) => Some(outcome.output().unwrap()["data"].clone()),
            Err(error) => {
                assert!(matches!(error, RuntimeError::Running { .. }), "{error}");
                None
            }
        })
        .collect();
    assert!(!answered.is_empty());
    assert!(
        answered.iter().all(|data| *data == answered[0]),
        "one run's outcome: {answered:?}"
    );
    assert_eq!(runs.lock().unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_suspends_never_cross_wire() {
    let (ask, _) = asking_tool("ask");
    let runtime = Runtime::builder().tool(ask).build().unwrap();
    let mut handles = Vec::new();
    for i in 0..50 {
        let runtime = runtime.clone();
        handles.push(tokio::spawn(async move {
            runtime
                .call(ToolCall::new(format!("c{i}"), "ask", json!({ "n": i })))
                .await
        }));
    }
    for (i, handle) in handles.into_iter().enumerate() {
        let outcome = handle.await.unwrap();
        assert_eq!(
            outcome,
            CallOutcome::Suspended {
                call_id: format!("c{i}"),
                input: json!({ "n": i }),
                payload: json!({ "asked": { "n": i } }),
                resume_schema: Some(json!({ "type": ["boolean", "number", "string", "object"] })),
            }
        );
    }
    let mut handles = Vec::new();
    for i in (0..50).rev() {
        let runtime = runtime.clone();
        handles.push(tokio::spawn(async move {
            (
                i,
                runtime
                    .resume(&format!("c{i}"), json!(i * 10))
                    .await
                    .unwrap(),
            )
        }));
    }
    for handle in handles {
        let (i, outcome) = handle.await.unwrap();
        assert_eq!(
            outcome.output(),
            Some(
                &json!({ "input": { "n": i }, "data": i * 10, "payload": { "asked": { "n": i } } })
            )
        );
    }
}

#[tokio::test]
async fn approve_then_suspend_then_resume() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let tool = Tool::builder("guarded-ask")
        .description("Needs approval, then asks")
        .require_approval(true)
        .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
            log.lock().unwrap().push(ctx.resume_data().cloned());
            async move {
                match ctx.resume_data() {
                    None => ctx.suspend(json!({ "confirm": input })),
                    Some(data) => Ok::<_, ToolError>(json!({ "done": data })),
                }
            }
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let outcome = runtime
        .call(ToolCall::new("c1", "guarded-ask", json!({ "x": 1 })))
        .await;
    assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    let outcome = runtime.approve("c1").await.unwrap();
    assert!(
        matches!(outcome, CallOutcome::Suspended { ref payload, .. } if payload == &json!({ "confirm": { "x": 1 } }))
    );
    let outcome = runtime.resume("c1", json!("yes")).await.unwrap();
    assert_eq!(outcome.output(), Some(&json!({ "done": "yes" })));
    assert_eq!(*seen.lock().unwrap(), [None, Some(json!("yes"))]);
}
