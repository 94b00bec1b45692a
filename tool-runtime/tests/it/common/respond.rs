//! Declaration-only tools and the response decision, and typed decisions,
//! through the public API of two runtimes sharing one store: run against
//! each store (memory, SQLite, PostgreSQL).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;
use tool_core::{ErrorKind, ModelOutput, Tool, ToolContext, ToolError, tool};
use tool_runtime::store::IntoStore;
use tool_runtime::{CallOutcome, CallState, PendingKind, Runtime, RuntimeError, ToolCall};

/// What to ask the user.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    pub text: String,
}

/// The user's answer.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Answer {
    pub approved: bool,
}

/// Delete a file after a human confirms
#[tool]
pub async fn confirm_delete(
    path: String,
    ctx: ToolContext<Question, Answer>,
) -> Result<String, ToolError> {
    match ctx.resume_data() {
        None => ctx.suspend(Question {
            text: format!("Delete {path}?"),
        }),
        Some(answer) if answer.approved => Ok(format!("deleted {path}")),
        Some(_) => Ok("kept".into()),
    }
}

/// A declaration-only tool (run by a UI) and an approval tool counting its runs.
fn tools(transfers: &Arc<AtomicU32>) -> Vec<Tool> {
    let pick = Tool::builder("pick-color")
        .description("Ask the user to pick a color")
        .input_schema(json!({
            "type": "object",
            "properties": { "prompt": { "type": "string" } },
            "required": ["prompt"]
        }))
        .output_schema(json!({
            "type": "object",
            "properties": { "color": { "type": "string" } },
            "required": ["color"]
        }))
        .to_model_output(|output| ModelOutput::text(format!("The user picked {}", output["color"])))
        .build()
        .unwrap();
    let runs = Arc::clone(transfers);
    let transfer = Tool::builder("transfer")
        .description("Transfer money")
        .require_approval(true)
        .output_schema(json!({ "type": "string" }))
        .execute(move |_input, _ctx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(json!("sent")) }
        })
        .build()
        .unwrap();
    vec![pick, transfer, Tool::from(ConfirmDeleteTool)]
}

fn runtime(store: impl IntoStore, tools: Vec<Tool>, instance: &str) -> Runtime {
    Runtime::builder()
        .tools(tools)
        .store(store)
        .instance_id(instance)
        .build()
        .unwrap()
}

/// The whole scenario on `store` (call ids start with `p`).
pub async fn respond_decisions<S: IntoStore + Clone>(p: &str, store: S) {
    let transfers = Arc::new(AtomicU32::new(0));
    let a = runtime(store.clone(), tools(&transfers), "a");
    let b = runtime(store, tools(&transfers), "b");
    declaration_only_calls_wait_and_take_one_response(p, &a, &b).await;
    a_response_instead_of_running_settles_an_approval(p, &a, &transfers).await;
    a_declaration_only_call_may_be_declined(p, &a).await;
    typed_decisions_read_and_give_the_tools_types(p, &a, &b).await;
}

async fn declaration_only_calls_wait_and_take_one_response(p: &str, a: &Runtime, b: &Runtime) {
    let id = format!("{p}-pick");
    // Validated like any call: bad arguments fail and nothing is stored.
    let bad = a
        .call(ToolCall::new(format!("{p}-bad"), "pick-color", json!({})))
        .await;
    assert_eq!(bad.error().unwrap().kind(), ErrorKind::InputValidation);
    assert!(matches!(
        a.inbox().stored(&format!("{p}-bad")).await,
        Ok(None)
    ));

    let waiting = a
        .call(ToolCall::new(
            &id,
            "pick-color",
            json!({ "prompt": "Your color?" }),
        ))
        .await;
    let CallOutcome::AwaitingOutput {
        call_id,
        input,
        output_schema,
    } = &waiting
    else {
        panic!("{waiting:?}")
    };
    assert_eq!((call_id, input), (&id, &json!({ "prompt": "Your color?" })));
    assert_eq!(
        output_schema.as_ref().unwrap()["required"],
        json!(["color"])
    );
    let pending = b.inbox().waiting().await.unwrap();
    let listed = pending
        .iter()
        .find(|call| call.call.head.call_id == id)
        .unwrap();
    assert_eq!(
        listed.call.kind,
        PendingKind::Output,
        "a distinct kind, on any instance"
    );

    // Only a response (or a decline) fits it.
    assert!(matches!(
        a.approve(&id).await,
        Err(RuntimeError::AwaitingOutput { .. })
    ));
    assert!(matches!(
        b.resume(&id, json!(true)).await,
        Err(RuntimeError::AwaitingOutput { .. })
    ));
    // An output that does not fit: the model-readable error; the call still waits.
    let invalid = a.respond(&id, json!({ "colour": "teal" })).await.unwrap();
    let error = invalid.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::OutputValidation);
    assert!(error.message().contains("color"), "{}", error.message());
    assert_eq!(
        a.inbox().stored(&id).await.unwrap().unwrap().state,
        CallState::Pending
    );

    // Two instances answer at once: one wins, both read its outcome.
    let (first, second) = tokio::join!(
        a.respond(&id, json!({ "color": "teal" })),
        b.respond(&id, json!({ "color": "red" })),
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first, second, "exactly one response is recorded");
    let output = first.output().unwrap().clone();
    assert!(output == json!({ "color": "teal" }) || output == json!({ "color": "red" }));
    // The model reads it through the tool's to_model_output.
    let CallOutcome::Completed { model_output, .. } = &first else {
        panic!("{first:?}")
    };
    assert_eq!(
        model_output,
        &Some(ModelOutput::text(format!(
            "The user picked \"{}\"",
            output["color"].as_str().unwrap()
        )))
    );
    let CallState::Settled { outcome, .. } = a.inbox().stored(&id).await.unwrap().unwrap().state
    else {
        panic!("settled")
    };
    assert_eq!(CallOutcome::from(outcome), first, "recorded as completed");
    // Later decisions get the recorded outcome.
    assert_eq!(a.decline(&id, Some("late")).await.unwrap(), first);
    assert_eq!(
        b.respond(&id, json!({ "color": "blue" })).await.unwrap(),
        first
    );
    assert!(matches!(
        a.respond(&format!("{p}-none"), json!({})).await,
        Err(RuntimeError::UnknownCall { .. })
    ));
}

async fn a_response_instead_of_running_settles_an_approval(
    p: &str,
    a: &Runtime,
    transfers: &Arc<AtomicU32>,
) {
    let id = format!("{p}-transfer");
    let outcome = a
        .call(ToolCall::new(&id, "transfer", json!({ "cents": 5 })))
        .await;
    assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    let wrong = a.respond(&id, json!(42)).await.unwrap();
    assert_eq!(wrong.error().unwrap().kind(), ErrorKind::OutputValidation);
    let answered = a.respond(&id, json!("sent by hand")).await.unwrap();
    assert_eq!(answered.output(), Some(&json!("sent by hand")));
    assert_eq!(a.approve(&id).await.unwrap(), answered, "recorded, not run");
    assert_eq!(transfers.load(Ordering::SeqCst), 0, "the tool never ran");
}

async fn a_declaration_only_call_may_be_declined(p: &str, a: &Runtime) {
    let id = format!("{p}-pick-declined");
    a.call(ToolCall::new(&id, "pick-color", json!({ "prompt": "?" })))
        .await;
    let declined = a.decline(&id, Some("closed the dialog")).await.unwrap();
    assert_eq!(declined.to_model_value(), json!("closed the dialog"));
    assert_eq!(
        a.respond(&id, json!({ "color": "teal" })).await.unwrap(),
        declined
    );
}

async fn typed_decisions_read_and_give_the_tools_types(p: &str, a: &Runtime, b: &Runtime) {
    let id = format!("{p}-delete");
    a.call(ToolCall::new(
        &id,
        "confirm_delete",
        json!({ "path": "/tmp/x" }),
    ))
    .await;
    let pending = b.inbox().waiting().await.unwrap();
    let listed = pending
        .iter()
        .find(|call| call.call.head.call_id == id)
        .unwrap();
    let question = listed
        .call
        .suspend_payload::<ConfirmDeleteTool>()
        .unwrap()
        .expect("suspended");
    assert_eq!(question.text, "Delete /tmp/x?");
    // A typed decision names its tool: another tool's call is refused untouched.
    assert!(matches!(
        a.resume_as::<ConfirmDeleteTool>(&format!("{p}-none"), Answer { approved: true })
            .await,
        Err(RuntimeError::UnknownCall { .. })
    ));
    let transfer = format!("{p}-transfer-typed");
    a.call(ToolCall::new(&transfer, "transfer", json!({})))
        .await;
    let refused = a
        .respond_as::<ConfirmDeleteTool>(&transfer, "deleted".to_owned())
        .await;
    assert!(
        matches!(&refused, Err(RuntimeError::TypeMismatch { reason, .. }) if reason.contains("\"transfer\"")),
        "{refused:?}"
    );
    assert_eq!(
        a.inbox().stored(&transfer).await.unwrap().unwrap().state,
        CallState::Pending
    );
    let done = b
        .resume_as::<ConfirmDeleteTool>(&id, Answer { approved: true })
        .await
        .unwrap();
    assert_eq!(done.output(), Some(&json!("deleted /tmp/x")));
    let stored = a.inbox().stored(&id).await.unwrap().unwrap();
    assert!(
        matches!(
            stored.call.suspend_payload::<ConfirmDeleteTool>(),
            Ok(Some(Question { text })) if text == "Delete /tmp/x?"
        ),
        "the payload it suspended with is kept"
    );
}
