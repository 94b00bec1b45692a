//! A tool's transforms in the agent's chunks and transcript, phase by phase:
//! the chunks show each phase's display projection (input deltas, the
//! call's input, the approval request, the suspension, the result, an
//! error), made by async transformers that see what the call gave before
//! (an output transformer reads the input, the suspension's payload and the
//! resume data); the transcript keeps the transcript projection; the model
//! reads raw values.

use serde_json::{Value, json};
use tool_agent::{
    Agent, AgentChunk, Message, ModelFinish, ModelRequest, ScriptedModel, ScriptedStep, Thread,
};
use tool_core::transform::{Phase, Target, ToolTransform, TransformContext};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::Runtime;

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

/// `seen` with the values named, the rest null.
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

/// Every whole phase's display made by an async transformer showing what
/// it saw; input deltas shown by a sync one; the transcript of an output
/// made from the input.
fn seeing() -> ToolTransform {
    let mut transform = ToolTransform::new().display(Phase::InputDelta, |ctx| {
        Some(json!({ "delta": ctx.payload }))
    });
    for phase in Phase::WHOLE {
        transform = transform.display_async(phase, |ctx| {
            let seen = seen(ctx);
            async move {
                tokio::task::yield_now().await;
                Some(seen)
            }
        });
    }
    transform
        .transcript_async(Phase::Output, |ctx| {
            let amount = ctx.known.input.map(|input| input["amount"].clone());
            let paid = ctx.payload["paid"].clone();
            async move { Some(json!({ "amount": amount, "paid": paid })) }
        })
        .pass_through_others(Target::Transcript)
}

/// Asks for a confirmation, then pays.
fn pay() -> Tool {
    Tool::builder("pay")
        .description("Pays")
        .suspend_schema(json!({ "type": "object" }))
        .resume_schema(json!({ "type": "object" }))
        .transform(seeing())
        .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
            let Some(data) = ctx.resume_data() else {
                return ctx.suspend(json!({ "question": "sure?" }));
            };
            Ok::<_, ToolError>(json!({ "paid": input["amount"], "ok": data["ok"] }))
        })
        .build()
        .unwrap()
}

/// Needs approval, then sends.
fn send() -> Tool {
    Tool::builder("send")
        .description("Sends money")
        .require_approval(true)
        .transform(seeing())
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(json!({ "sent": input["amount"] }))
        })
        .build()
        .unwrap()
}

fn check() -> Tool {
    Tool::builder("check")
        .description("Checks a card")
        .transform(seeing())
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                Err::<Value, _>(ToolError::new("card declined"))
            },
        )
        .build()
        .unwrap()
}

/// A step that calls `tool` with `args`, streamed in two pieces.
fn calls(call_id: &str, tool: &str, args: &Value) -> ScriptedStep {
    let text = args.to_string();
    let (head, tail) = text.split_at(text.len() / 2);
    ScriptedStep::new()
        .tool_call_deltas(call_id, tool, [head, tail])
        .finish(ModelFinish::ToolCalls)
}

fn tool_results(request: &ModelRequest) -> Vec<Value> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { result, .. } => Some(result.clone()),
            _ => None,
        })
        .collect()
}

/// The chunks that show a payload, as `(kind, shown)`.
fn shown(chunks: &[AgentChunk]) -> Vec<(&'static str, Value)> {
    chunks
        .iter()
        .filter_map(|chunk| match chunk {
            AgentChunk::ToolCallInputDelta { delta, .. } => Some(("delta", delta.clone())),
            AgentChunk::ToolCall { args, .. } => Some(("call", args.clone())),
            AgentChunk::ToolCallApproval { args, .. } => Some(("approval", args.clone())),
            AgentChunk::ToolCallSuspended { payload, .. } => Some(("suspended", payload.clone())),
            AgentChunk::ToolResult { result, .. } => Some(("result", result.clone())),
            AgentChunk::ToolError { error, .. } => Some(("error", error.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_show_every_phase_through_async_transformers_that_see_the_calls_values() {
    let input = json!({ "amount": 5 });
    let model = ScriptedModel::new([calls("c1", "pay", &input), ScriptedStep::answer("done")]);
    let runtime = Runtime::builder().tool(pay()).build().unwrap();
    let agent = Agent::builder("payer", model.clone(), runtime)
        .build()
        .unwrap();

    let asked = agent
        .generate(Thread::new("t1"), vec![Message::user("pay 5")])
        .await
        .unwrap();
    let text = input.to_string();
    let (head, tail) = text.split_at(text.len() / 2);
    let question = json!({ "question": "sure?" });
    assert_eq!(
        shown(&asked.chunks),
        [
            ("delta", json!({ "delta": head })),
            ("delta", json!({ "delta": tail })),
            ("call", saw(&input, &[("input", &input)])),
            (
                "suspended",
                saw(&question, &[("input", &input), ("suspend", &question)])
            ),
        ]
    );

    let run_id = asked.run_id;
    let data = json!({ "ok": true });
    let resumed = agent.resume(&run_id, "c1", data.clone()).await.unwrap();
    let output = json!({ "paid": 5, "ok": true });
    assert_eq!(
        shown(&resumed.output().await.chunks),
        [(
            "result",
            saw(
                &output,
                &[
                    ("input", &input),
                    ("output", &output),
                    ("suspend", &question),
                    ("resume", &data),
                ]
            )
        )]
    );
    assert_eq!(
        tool_results(&model.requests()[1]),
        [output],
        "the model reads the raw result"
    );
    let transcript = agent.transcript(&run_id).await.unwrap();
    let kept: Vec<_> = transcript
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                Some(tool_calls[0].arguments.clone())
            }
            Message::ToolResult { result, .. } => Some(result.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        kept,
        [input, json!({ "amount": 5, "paid": 5 })],
        "the transcript's output transformer read the call's input"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_chunk_and_the_approved_calls_result_show_the_calls_input() {
    let input = json!({ "amount": 7 });
    let model = ScriptedModel::new([calls("c1", "send", &input), ScriptedStep::answer("sent")]);
    let runtime = Runtime::builder().tool(send()).build().unwrap();
    let agent = Agent::builder("sender", model, runtime).build().unwrap();
    let asked = agent
        .generate(Thread::new("t1"), vec![Message::user("send 7")])
        .await
        .unwrap();
    let approvals: Vec<_> = shown(&asked.chunks)
        .into_iter()
        .filter(|(kind, _)| *kind == "approval")
        .collect();
    assert_eq!(approvals, [("approval", saw(&input, &[("input", &input)]))]);
    let approved = agent.approve_tool_call(&asked.run_id, "c1").await.unwrap();
    let output = json!({ "sent": 7 });
    assert_eq!(
        shown(&approved.output().await.chunks),
        [(
            "result",
            saw(&output, &[("input", &input), ("output", &output)])
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_chunk_shows_the_error_with_the_calls_input() {
    let input = json!({ "card": "4242" });
    let model = ScriptedModel::new([calls("c1", "check", &input), ScriptedStep::answer("sorry")]);
    let runtime = Runtime::builder().tool(check()).build().unwrap();
    let agent = Agent::builder("checker", model.clone(), runtime)
        .build()
        .unwrap();
    let out = agent
        .generate(Thread::new("t1"), vec![Message::user("check")])
        .await
        .unwrap();
    let errors: Vec<_> = shown(&out.chunks)
        .into_iter()
        .filter(|(kind, _)| *kind == "error")
        .map(|(_, shown)| shown)
        .collect();
    let read = tool_results(&model.requests()[1]);
    assert_eq!(read.len(), 1);
    assert_eq!(
        read[0]["message"], "card declined",
        "the model reads the raw error"
    );
    assert_eq!(
        errors,
        [saw(&read[0], &[("input", &input), ("error", &read[0])])]
    );
}
