//! The shape of the call path: spawnable futures that do nothing until
//! polled, one pipeline for every entry point, macro and builder tools alike.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_core::hooks::InputAvailable;
use tool_core::{CallContext, ErrorKind, Hooks, Tool, ToolContext, ToolError, tool};
use tool_runtime::{CallOutcome, EventKind, PendingKind, Runtime, RuntimeError, ToolCall};

use common::{asking_tool, echo_tool};

#[tokio::test]
async fn every_awaited_call_is_a_spawnable_future() {
    let (echo, _) = echo_tool("echo", |b| b);
    let (gated, _) = echo_tool("gated", |b| b.require_approval(true));
    let (asking, _) = asking_tool("ask");
    let runtime = Runtime::builder()
        .tools([echo.clone(), gated, asking])
        .build()
        .unwrap();

    let done = tokio::spawn(echo.execute(json!({ "a": 1 }), CallContext::new("e1")));
    assert_eq!(
        done.await.unwrap().output(),
        Some(&json!({ "echo": { "a": 1 } }))
    );
    let done = tokio::spawn(runtime.call(ToolCall::new("c1", "echo", json!({}))));
    assert_eq!(done.await.unwrap().output(), Some(&json!({ "echo": {} })));

    for id in ["g1", "g2"] {
        let waiting = tokio::spawn(runtime.call(ToolCall::new(id, "gated", json!({}))));
        assert!(matches!(
            waiting.await.unwrap(),
            CallOutcome::ApprovalRequired { .. }
        ));
    }
    let approved = tokio::spawn(runtime.approve("g1")).await.unwrap().unwrap();
    assert_eq!(approved.output(), Some(&json!({ "echo": {} })));
    let declined = tokio::spawn(runtime.decline("g2", Some("no")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        declined,
        CallOutcome::Declined {
            reason: Some("no".into())
        }
    );

    tokio::spawn(runtime.call(ToolCall::new("s1", "ask", json!({}))))
        .await
        .unwrap();
    let resumed = tokio::spawn(runtime.resume("s1", json!(true)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(resumed.output().unwrap()["data"], true);
}

#[tokio::test]
async fn nothing_happens_before_a_call_future_is_first_polled() {
    let hook_fired = Arc::new(AtomicUsize::new(0));
    let fired = Arc::clone(&hook_fired);
    let (gated, runs) = echo_tool("gated", |b| {
        b.require_approval(true)
            .hooks(Hooks::new().on_input_available(move |_: InputAvailable| {
                fired.fetch_add(1, Ordering::SeqCst);
            }))
    });
    let (asking, asked) = asking_tool("ask");
    let runtime = Runtime::builder().tools([gated, asking]).build().unwrap();
    let mut events = runtime.events();

    // Built and dropped without a poll: no hook, no event, nothing stored, no run.
    drop(runtime.call(ToolCall::new("c1", "gated", json!({}))));
    drop(runtime.call(ToolCall::new("c2", "ask", json!({}))));
    drop(Tool::clone(runtime.tool("ask").unwrap()).execute(json!({}), CallContext::new("c3")));
    assert_eq!(hook_fired.load(Ordering::SeqCst), 0);
    assert!(events.try_next().is_none());
    assert!(runtime.inbox().waiting().await.unwrap().is_empty());
    assert!(runs.lock().unwrap().is_empty() && asked.lock().unwrap().is_empty());

    // Polled: it all happens.
    let outcome = runtime.call(ToolCall::new("c1", "gated", json!({}))).await;
    assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    assert_eq!(hook_fired.load(Ordering::SeqCst), 1);
    assert_eq!(runtime.inbox().waiting().await.unwrap().len(), 1);
}

#[tokio::test]
async fn invalid_resume_data_is_refused_before_the_call_leaves_the_store() {
    let (asking, runs) = asking_tool("ask");
    let runtime = Runtime::builder().tool(asking).build().unwrap();
    runtime
        .call(ToolCall::new("c1", "ask", json!({ "q": 1 })))
        .await;
    let before = runtime.inbox().waiting().await.unwrap();

    // `null` is "no data"; an array matches none of the resume schema's types.
    let refused = runtime.resume("c1", json!([1, 2])).await.unwrap();
    assert_eq!(refused.error().unwrap().kind(), ErrorKind::ResumeValidation);
    assert_eq!(
        runtime.inbox().waiting().await.unwrap(),
        before,
        "the call is untouched"
    );
    assert_eq!(runs.lock().unwrap().len(), 1, "the tool did not run again");

    // Many concurrent resumes, valid and not: exactly one runs the call;
    // the others are told it runs, or get its recorded outcome (since the
    // durable-calls issue; they used to get `UnknownCall`).
    let attempts: Vec<_> = (0..16)
        .map(|i| {
            let data = if i % 2 == 0 { json!(i) } else { json!([i]) };
            tokio::spawn(runtime.resume("c1", data))
        })
        .collect();
    let mut outputs = Vec::new();
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(CallOutcome::Completed { output, .. }) => outputs.push(output),
            Ok(CallOutcome::Failed { error }) => {
                assert_eq!(error.kind(), ErrorKind::ResumeValidation);
            }
            Err(RuntimeError::Running { .. }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(!outputs.is_empty());
    assert!(
        outputs.iter().all(|output| *output == outputs[0]),
        "every answer is the one run's outcome: {outputs:?}"
    );
    assert_eq!(runs.lock().unwrap().len(), 2);
    assert!(runtime.inbox().waiting().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_decision_for_a_tool_this_runtime_lacks_leaves_the_call_stored() {
    let store = tool_runtime::store::MemoryStore::new();
    let mut call = tool_runtime::PendingCall::new("c1", "gone", PendingKind::Approval, json!({}));
    call.head.messages = vec![json!({ "role": "user", "content": "hi" })];
    tool_runtime::store::CallStore::insert(&store, call.clone())
        .await
        .unwrap();
    let runtime = Runtime::builder().store(store).build().unwrap();
    assert!(matches!(
        runtime.approve("c1").await,
        Err(RuntimeError::MissingTool { .. })
    ));
    let waiting = runtime.inbox().waiting().await.unwrap();
    assert_eq!(
        waiting
            .into_iter()
            .map(|stored| stored.call)
            .collect::<Vec<_>>(),
        vec![call]
    );
}

#[tokio::test]
async fn an_approved_call_is_admitted_again_from_what_was_stored() {
    // A stored call that no longer fits the schema (edited, or the tool
    // changed between deploys) fails validation instead of running.
    let store = tool_runtime::store::MemoryStore::new();
    let stored = tool_runtime::PendingCall::new(
        "c1",
        "typed",
        PendingKind::Approval,
        json!({ "n": "not a number" }),
    );
    tool_runtime::store::CallStore::insert(&store, stored)
        .await
        .unwrap();
    let runs = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&runs);
    let typed = Tool::builder("typed")
        .description("Takes a number")
        .require_approval(true)
        .input_schema(json!({ "type": "object", "properties": { "n": { "type": "number" } }, "required": ["n"] }))
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            *seen.lock().unwrap() += 1;
            async move { Ok::<_, ToolError>(input) }
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(typed).store(store).build().unwrap();
    let outcome = runtime.approve("c1").await.unwrap();
    assert_eq!(outcome.error().unwrap().kind(), ErrorKind::InputValidation);
    assert_eq!(*runs.lock().unwrap(), 0);
}

// --- macro tools and builder tools behave alike ------------------------------

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Question {
    text: String,
}

/// Counts, asking first
#[tool(id = "count-macro")]
async fn count_macro(n: u32, ctx: ToolContext<Question, bool>) -> Result<u32, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Question {
            text: format!("count to {n}?"),
        }),
        Some(_) => Ok(n),
    }
}

fn count_builder() -> Tool {
    Tool::builder("count-builder")
        .description("Counts, asking first")
        .input_schema(json!({ "type": "object", "properties": { "n": { "type": "integer", "minimum": 0 } }, "required": ["n"] }))
        .suspend_schema(json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }))
        .resume_schema(json!({ "type": "boolean" }))
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            match ctx.resume_data() {
                None => ctx.suspend(json!({ "text": format!("count to {}?", input["n"]) })),
                // Integral floats arrive as integers, as a typed tool reads them.
                Some(_) => Ok::<_, ToolError>(json!(input["n"].as_u64().expect("an integer"))),
            }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn macro_and_builder_tools_keep_their_arguments_and_repair_integral_floats_alike() {
    let runtime = Runtime::builder()
        .tools([Tool::from(CountMacroTool), count_builder()])
        .build()
        .unwrap();
    for id in ["count-macro", "count-builder"] {
        let call_id = format!("{id}-1");
        let outcome = runtime
            .call(ToolCall::new(call_id.as_str(), id, r#"{"n": 3.0}"#))
            .await;
        // Both keep the arguments they ran on (stored with the suspension),
        // with the integral float read as the integer it is.
        let CallOutcome::Suspended { input, payload, .. } = &outcome else {
            panic!("{id}: {outcome:?}")
        };
        assert_eq!(input, &json!({ "n": 3 }), "{id}");
        assert_eq!(payload, &json!({ "text": "count to 3?" }), "{id}");
        let stored = runtime.inbox().waiting().await.unwrap();
        let stored = stored
            .iter()
            .find(|p| p.call.head.call_id == call_id)
            .unwrap();
        assert_eq!(stored.call.input, json!({ "n": 3 }), "{id}");

        let done = runtime.resume(&call_id, json!(true)).await.unwrap();
        assert_eq!(done.output(), Some(&json!(3)), "{id}");
    }
}

/// Offsets by an i32
#[tool]
async fn offset(by: i32) -> i32 {
    by
}

#[tokio::test]
async fn a_type_level_input_error_quotes_the_arguments_like_a_schema_error() {
    let runtime = Runtime::builder().tool(OffsetTool).build().unwrap();
    let typed = runtime
        .call(ToolCall::new(
            "c1",
            "offset",
            json!({ "by": 3_000_000_000_u64 }),
        ))
        .await;
    let schema = runtime
        .call(ToolCall::new("c2", "offset", json!({ "by": "x" })))
        .await;
    for outcome in [typed, schema] {
        let error = outcome.error().unwrap();
        assert_eq!(error.kind(), ErrorKind::InputValidation);
        assert!(
            error
                .message()
                .contains("\n\nProvided arguments: {\n  \"by\": "),
            "{}",
            error.message()
        );
    }
}

#[tokio::test]
async fn the_request_context_is_validated_by_the_one_admission_stage() {
    let (tool, runs) = echo_tool("scoped", |b| {
        b.request_context_schema(json!({ "type": "object", "properties": { "userId": { "type": "string" } }, "required": ["userId"] }))
    });
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let mut events = runtime.events();
    let outcome = runtime.call(ToolCall::new("c1", "scoped", json!({}))).await;
    assert_eq!(
        outcome.error().unwrap().kind(),
        ErrorKind::RequestContextValidation
    );
    // One failure, reported once; the tool never ran.
    let mut errors = 0;
    while let Some(event) = events.try_next() {
        errors += usize::from(matches!(event.kind, EventKind::Error { .. }));
    }
    assert_eq!(errors, 1);
    assert!(runs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_tool_error_from_another_error_keeps_it_as_its_source_for_the_logs() {
    let capture = common::Capture::default();
    let _guard = capture.install();
    let tool = Tool::builder("save")
        .description("Saves")
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                let disk: Result<Value, std::io::Error> = Err(std::io::Error::other("disk full"));
                Ok::<_, ToolError>(disk?)
            },
        )
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let outcome = runtime.call(ToolCall::new("c1", "save", json!({}))).await;
    // The model reads the message; the logs get the error itself.
    assert_eq!(outcome.error().unwrap().message(), "disk full");
    let logs = capture.logs();
    assert!(
        logs.iter()
            .any(|line| line.contains("tool returned an error") && line.contains("disk full")),
        "{logs:#?}"
    );
}

#[tokio::test]
async fn extensions_reach_the_tool_from_a_call_and_from_streamed_input() {
    struct Tenant(&'static str);
    let whoami = Tool::builder("whoami")
        .description("Names the tenant")
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(json!(ctx.extension::<Tenant>().map_or("none", |t| t.0)))
        })
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(whoami).build().unwrap();
    let called = runtime
        .call(ToolCall::new("c1", "whoami", "{}").with_extension(Tenant("acme")))
        .await;
    assert_eq!(called.output(), Some(&json!("acme")));
    let mut stream = runtime
        .begin("c2", "whoami", Vec::new())
        .with_extension(Tenant("globex"));
    stream.push("{}");
    assert_eq!(stream.finish().await.output(), Some(&json!("globex")));
    let plain = runtime.call(ToolCall::new("c3", "whoami", "{}")).await;
    assert_eq!(plain.output(), Some(&json!("none")));
}

#[tokio::test]
async fn request_context_values_nesting_beyond_the_bound_are_refused_at_admission() {
    let (tool, runs) = echo_tool("echo", |b| b);
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    // The request context object, then 64 arrays: 65 levels.
    let deep = (0..tool_core::MAX_NESTING).fold(json!(1), |inner, _| json!([inner]));
    let call = ToolCall::new("c1", "echo", "{}")
        .with_request_context(tool_core::RequestContext::new().with("filters", deep));
    let outcome = runtime.call(call).await;
    let error = outcome.error().expect("refused");
    assert_eq!(error.kind(), ErrorKind::RequestContextValidation);
    assert!(error.message().contains("- filters"), "{}", error.message());
    assert!(runs.lock().unwrap().is_empty());
}

/// A panic payload whose own `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the payload's drop panics too");
    }
}

#[tokio::test]
async fn a_panic_whose_payload_panics_when_dropped_stays_inside_the_call() {
    let tool = Tool::builder("bomb")
        .description("Panics with a payload that panics when dropped")
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                if true {
                    std::panic::panic_any(Bomb);
                }
                Ok::<_, ToolError>(json!(null))
            },
        )
        .build()
        .unwrap();
    let runtime = Runtime::builder().tool(tool).build().unwrap();
    let outcome = runtime.call(ToolCall::new("c1", "bomb", "{}")).await;
    let error = outcome
        .error()
        .expect("the call failed, the caller did not panic");
    assert_eq!(error.kind(), ErrorKind::Panic);
    // The runtime keeps serving.
    let again = runtime.call(ToolCall::new("c2", "bomb", "{}")).await;
    assert_eq!(again.error().map(|e| e.kind()), Some(ErrorKind::Panic));
}
