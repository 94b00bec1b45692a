//! The agent over real provider APIs, each played by a local HTTP server
//! (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages): a tool
//! call paused for approval and approved by another runtime on the same
//! store file (a restart), a decline the model reads while the tool never
//! runs, a suspension resumed from the user's reply, parallel calls where
//! one waits, a 429 then success, and a stream cut mid-call.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::provider::{APIS, Api, Part, Received, Reply, Server, chat, typed};
use serde_json::{Value, json};
use tool_agent::{Agent, AgentChunk, FinishReason, Message, Thread, Usage};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::Runtime;

type Runs = Arc<Mutex<Vec<Value>>>;

/// `transfer` (needs approval), `lookup`, and `book` (suspends for seats).
fn tools(runs: &Runs) -> Vec<Tool> {
    let seen = Arc::clone(runs);
    let transfer = Tool::builder("transfer")
        .description("Sends money")
        .require_approval(true)
        .input_schema(json!({ "type": "object", "properties": { "amount": { "type": "integer" } }, "required": ["amount"] }))
        .execute(move |input: Value, _ctx: ToolContext<Value, Value>| {
            seen.lock().unwrap().push(json!({ "transfer": input }));
            async move { Ok::<_, ToolError>(json!({ "sent": input["amount"] })) }
        })
        .build()
        .unwrap();
    let lookup = Tool::builder("lookup")
        .description("Looks up the balance")
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                Ok::<_, ToolError>(json!({ "balance": 100 }))
            },
        )
        .build()
        .unwrap();
    let seen = Arc::clone(runs);
    let book = Tool::builder("book")
        .description("Books a table")
        .input_schema(json!({ "type": "object", "properties": { "restaurant": { "type": "string" } }, "required": ["restaurant"] }))
        .resume_schema(json!({ "type": "object", "properties": { "seats": { "type": "integer", "minimum": 1 } }, "required": ["seats"] }))
        .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
            let seen = Arc::clone(&seen);
            async move {
                let Some(data) = ctx.resume_data() else {
                    return ctx.suspend(json!({ "question": "how many seats?" }));
                };
                seen.lock().unwrap().push(json!({ "book": input, "resume": data }));
                Ok::<_, ToolError>(json!({ "booked": data["seats"] }))
            }
        })
        .build()
        .unwrap();
    vec![transfer, lookup, book]
}

fn runtime(runs: &Runs, store: &std::path::Path) -> Runtime {
    Runtime::builder()
        .tools(tools(runs))
        .sqlite_store(store)
        .build()
        .unwrap()
}

fn agent(api: Api, server: &Server, runtime: Runtime) -> Agent {
    Agent::builder("banker", api.model(server, Some("sk-test"), 2), runtime)
        .instructions("You help with money and tables.")
        .auto_resume_suspended_tools(true)
        .build()
        .unwrap()
}

/// A new directory, removed with what it holds when the guard drops, also
/// when the test fails: keep the guard until the test's end.
fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tool-runtime-agent-http-")
        .tempdir()
        .unwrap()
}

/// The provider's side of a conversation about money: it calls what
/// `first` says, then answers with the results it read.
fn banker(api: Api, first: Vec<Part>) -> impl Fn(&Received) -> Reply + Send + Sync + 'static {
    move |request| {
        let results = api.tool_results(&request.body);
        if results.is_empty() {
            return Reply::sse(api.answer(&first));
        }
        let read: Vec<String> = results.iter().map(|(id, c)| format!("{id}={c}")).collect();
        Reply::sse(api.answer(&[Part::Text(read.join(" "))]))
    }
}

fn transfer_call() -> Part {
    Part::Call("call_t".into(), "transfer", json!({ "amount": 10 }))
}

fn approval_of(chunks: &[AgentChunk]) -> Option<String> {
    chunks.iter().find_map(|chunk| match chunk {
        AgentChunk::ToolCallApproval { call_id, .. } => Some(call_id.clone()),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_pause_survives_a_restart_and_the_approved_call_runs_once() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("approval-{api:?}.sqlite"));
        let server = Server::scripted(banker(
            api,
            vec![Part::Text("Sending. ".into()), transfer_call()],
        ))
        .await;
        let paused = agent(api, &server, runtime(&runs, &store))
            .generate(Thread::new("t1"), vec![Message::user("send 10")])
            .await
            .unwrap();
        assert_eq!(
            paused.finish_reason,
            FinishReason::Suspended,
            "{api:?}: {:?}",
            paused.chunks
        );
        assert_eq!(paused.text, "Sending. ");
        assert_eq!(
            approval_of(&paused.chunks).as_deref(),
            Some("call_t"),
            "{api:?}"
        );
        assert!(runs.lock().unwrap().is_empty());

        // Another runtime and agent on the same file: the process restarted.
        let agent = agent(api, &server, runtime(&runs, &store));
        let done = agent
            .approve_tool_call(&paused.run_id, "call_t")
            .await
            .unwrap()
            .output()
            .await;
        assert_eq!(
            done.finish_reason,
            FinishReason::Stop,
            "{api:?}: {:?}",
            done.chunks
        );
        assert_eq!(done.text, r#"call_t={"sent":10}"#, "{api:?}");
        assert_eq!(
            *runs.lock().unwrap(),
            [json!({ "transfer": { "amount": 10 } })],
            "{api:?}"
        );
        // The second request replays the call and carries its result, in the API's format.
        let requests = server.received();
        assert_eq!(requests.len(), 2, "{api:?}");
        assert_eq!(
            api.tool_results(&requests[1].body),
            [("call_t".to_owned(), r#"{"sent":10}"#.to_owned())]
        );
        assert_eq!(requests[1].path, api.path());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_call_never_runs_and_the_model_reads_the_reason() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("decline-{api:?}.sqlite"));
        let server = Server::scripted(banker(api, vec![transfer_call()])).await;
        let agent = agent(api, &server, runtime(&runs, &store));
        let paused = agent
            .generate(Thread::new("t1"), vec![Message::user("send 10")])
            .await
            .unwrap();
        let done = agent
            .decline_tool_call(&paused.run_id, "call_t", None)
            .await
            .unwrap()
            .output()
            .await;
        assert_eq!(
            done.text, "call_t=Tool call was not approved by the user",
            "{api:?}"
        );
        assert!(
            runs.lock().unwrap().is_empty(),
            "{api:?}: a declined call never runs"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspension_is_resumed_from_the_users_reply() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("suspend-{api:?}.sqlite"));
        let server = Server::scripted(move |request: &Received| {
            let results = api.tool_results(&request.body);
            let user = api.last_user_text(&request.body).unwrap_or_default();
            if results.is_empty() {
                return Reply::sse(api.answer(&[Part::Call("call_b1".into(), "book", json!({ "restaurant": "Roma" }))]));
            }
            let instructions = request.body["instructions"]
                .as_str()
                .or_else(|| request.body["system"].as_str())
                .or_else(|| request.body["messages"][0]["content"].as_str())
                .unwrap_or_default()
                .to_owned();
            if user == "4 people" && results.len() == 1 {
                assert!(instructions.contains("call_b1"), "{api:?}: the suspension is listed: {instructions}");
                return Reply::sse(api.answer(&[Part::Call(
                    "call_b2".into(),
                    "book",
                    json!({ "restaurant": "Roma", "suspendedToolCallId": "call_b1", "resumeData": { "seats": 4 } }),
                )]));
            }
            let (_, last) = results.last().cloned().unwrap();
            Reply::sse(api.answer(&[Part::Text(format!("done: {last}"))]))
        })
        .await;
        let agent = agent(api, &server, runtime(&runs, &store));
        let paused = agent
            .generate(Thread::new("t1"), vec![Message::user("book Roma")])
            .await
            .unwrap();
        assert_eq!(
            paused.finish_reason,
            FinishReason::Suspended,
            "{api:?}: {:?}",
            paused.chunks
        );
        let done = agent
            .reply(&paused.run_id, "4 people")
            .await
            .unwrap()
            .output()
            .await;
        assert_eq!(
            done.finish_reason,
            FinishReason::Stop,
            "{api:?}: {:?}",
            done.chunks
        );
        assert_eq!(done.text, r#"done: {"booked":4}"#, "{api:?}");
        assert_eq!(
            *runs.lock().unwrap(),
            [json!({ "book": { "restaurant": "Roma" }, "resume": { "seats": 4 } })],
            "{api:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_where_one_waits() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("parallel-{api:?}.sqlite"));
        let first = vec![
            transfer_call(),
            Part::Call("call_l".into(), "lookup", json!({})),
        ];
        let server = Server::scripted(banker(api, first)).await;
        let agent = agent(api, &server, runtime(&runs, &store));
        let paused = agent
            .generate(
                Thread::new("t1"),
                vec![Message::user("send 10, and the balance?")],
            )
            .await
            .unwrap();
        assert!(
            paused.chunks.iter().any(
                |c| matches!(c, AgentChunk::ToolResult { call_id, .. } if call_id == "call_l")
            ),
            "{api:?}"
        );
        let done = agent
            .approve_tool_call(&paused.run_id, "call_t")
            .await
            .unwrap()
            .output()
            .await;
        assert_eq!(
            done.text, r#"call_t={"sent":10} call_l={"balance":100}"#,
            "{api:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_retried_and_the_run_goes_on() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("retry-{api:?}.sqlite"));
        let served = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&served);
        let answer = banker(api, vec![Part::Call("call_l".into(), "lookup", json!({}))]);
        let server = Server::scripted(move |request: &Received| {
            if count.fetch_add(1, Ordering::SeqCst) == 0 {
                return Reply::status(429, &api.error("slow down")).header("retry-after", "0");
            }
            answer(request)
        })
        .await;
        let out = agent(api, &server, runtime(&runs, &store))
            .generate(Thread::new("t1"), vec![Message::user("balance?")])
            .await
            .unwrap();
        assert_eq!(
            out.finish_reason,
            FinishReason::Stop,
            "{api:?}: {:?}",
            out.chunks
        );
        assert_eq!(out.text, r#"call_l={"balance":100}"#);
        assert_eq!(
            served.load(Ordering::SeqCst),
            3,
            "{api:?}: 429, then the two steps"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_mid_call_ends_the_run_with_an_error_and_runs_nothing() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("cut-{api:?}.sqlite"));
        let server = Server::scripted(move |_: &Received| Reply::sse(api.cut_answer())).await;
        let out = agent(api, &server, runtime(&runs, &store))
            .generate(Thread::new("t1"), vec![Message::user("weather?")])
            .await
            .unwrap();
        assert_eq!(
            out.finish_reason,
            FinishReason::Error,
            "{api:?}: {:?}",
            out.chunks
        );
        assert!(
            out.chunks
                .iter()
                .any(|c| matches!(c, AgentChunk::ToolError { call_id, .. } if call_id == "call_1")),
            "{api:?}: {:?}",
            out.chunks
        );
        assert!(
            out.chunks
                .iter()
                .any(|c| matches!(c, AgentChunk::Error { .. })),
            "{api:?}"
        );
        assert!(runs.lock().unwrap().is_empty());
    }
}

/// The arguments a request sends back for the call `call_1` (Anthropic's
/// `input` object, OpenAI's `arguments` text), and whether its result is
/// an error where the API says so, with its text.
fn sent_back_call(api: Api, body: &Value) -> (Value, String) {
    let result = api
        .tool_results(body)
        .into_iter()
        .find(|(id, _)| id == "call_1")
        .map(|(_, text)| text)
        .unwrap_or_default();
    let arguments = match api {
        Api::Chat => body["messages"].as_array().unwrap().iter().find_map(|m| {
            m["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .map(|a| json!(a))
        }),
        Api::Responses => body["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == "function_call")
            .map(|i| i["arguments"].clone()),
        Api::Anthropic => body["messages"].as_array().unwrap().iter().find_map(|m| {
            m["content"]
                .as_array()?
                .iter()
                .find(|b| b["type"] == "tool_use")
                .map(|b| {
                    assert!(
                        m["role"] == "assistant",
                        "a tool_use block is the assistant's"
                    );
                    b["input"].clone()
                })
        }),
    };
    (arguments.expect("the call is sent back"), result)
}

/// The empty arguments each API reads: Anthropic's object, OpenAI's text.
fn empty_arguments(api: Api) -> Value {
    match api {
        Api::Anthropic => json!({}),
        Api::Chat | Api::Responses => json!("{}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_off_by_the_token_limit_is_sent_back_as_an_empty_object_with_its_error() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("length-{api:?}.sqlite"));
        let server = Server::scripted(move |request: &Received| {
            if api.tool_results(&request.body).is_empty() {
                Reply::sse(api.token_limit_answer())
            } else {
                Reply::sse(api.text_answer())
            }
        })
        .await;
        let out = agent(api, &server, runtime(&runs, &store))
            .generate(Thread::new("t1"), vec![Message::user("weather?")])
            .await
            .unwrap();
        assert_eq!(
            out.finish_reason,
            FinishReason::Stop,
            "{api:?}: {:?}",
            out.chunks
        );
        let received = server.received();
        assert_eq!(received.len(), 2, "{api:?}");
        let (arguments, result) = sent_back_call(api, &received[1].body);
        assert_eq!(arguments, empty_arguments(api), "{api:?}");
        assert!(!result.is_empty(), "{api:?}: the cut-off explanation");
        if matches!(api, Api::Anthropic) {
            let blocks = received[1].body["messages"][2]["content"]
                .as_array()
                .unwrap();
            assert_eq!(blocks[0]["type"], "tool_result");
            assert_eq!(blocks[0]["is_error"], true);
        }
        assert!(runs.lock().unwrap().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_a_cut_stream_is_sent_back_as_an_empty_object_after_a_reply() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("cut-reply-{api:?}.sqlite"));
        let served = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&served);
        let server = Server::scripted(move |_: &Received| {
            if count.fetch_add(1, Ordering::SeqCst) == 0 {
                Reply::sse(api.cut_answer())
            } else {
                Reply::sse(api.text_answer())
            }
        })
        .await;
        let agent = agent(api, &server, runtime(&runs, &store));
        let cut = agent
            .generate(Thread::new("t1"), vec![Message::user("weather?")])
            .await
            .unwrap();
        assert_eq!(
            cut.finish_reason,
            FinishReason::Error,
            "{api:?}: {:?}",
            cut.chunks
        );
        let done = agent
            .reply(&cut.run_id, "again")
            .await
            .unwrap()
            .output()
            .await;
        assert_eq!(
            done.finish_reason,
            FinishReason::Stop,
            "{api:?}: {:?}",
            done.chunks
        );
        let received = server.received();
        assert_eq!(received.len(), 2, "{api:?}");
        let (arguments, result) = sent_back_call(api, &received[1].body);
        assert_eq!(arguments, empty_arguments(api), "{api:?}");
        assert!(!result.is_empty(), "{api:?}: the cut-off explanation");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_ends_the_run_with_the_refusal_reason_and_its_text() {
    for api in APIS {
        let runs = Runs::default();
        let tmp = temp_dir();
        let store = tmp.path().join(format!("refusal-{api:?}.sqlite"));
        let answer: Vec<String> = match api {
            Api::Chat => vec![
                chat(
                    json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "refusal": "I can't help with that."}, "finish_reason": null}]}),
                ),
                chat(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
                "data: [DONE]\n\n".into(),
            ],
            Api::Responses => vec![
                typed(
                    json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "I can't help with that."}),
                ),
                typed(
                    json!({"type": "response.completed", "response": {"status": "completed", "output": []}}),
                ),
            ],
            Api::Anthropic => vec![
                typed(
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                typed(
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "I can't help with that."}}),
                ),
                typed(json!({"type": "content_block_stop", "index": 0})),
                typed(
                    json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null}}),
                ),
                typed(json!({"type": "message_stop"})),
            ],
        };
        let server = Server::scripted(move |_: &Received| Reply::sse(answer.clone())).await;
        let out = agent(api, &server, runtime(&runs, &store))
            .generate(Thread::new("t1"), vec![Message::user("something bad")])
            .await
            .unwrap();
        assert_eq!(
            out.finish_reason,
            FinishReason::Refusal,
            "{api:?}: {:?}",
            out.chunks
        );
        assert_eq!(out.text, "I can't help with that.", "{api:?}");
        assert!(
            out.chunks.iter().any(
                |c| matches!(c, AgentChunk::TextDelta { text } if text == "I can't help with that.")
            ),
            "{api:?}: {:?}",
            out.chunks
        );
    }
}

/// A shared stream fixture's text; `None` after a notice when `../shared` is
/// absent, a failure then when `REQUIRE_SHARED_FIXTURES=1`.
fn shared_stream(name: &str) -> Option<String> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/streams")
        .join(name);
    if path.is_file() {
        return Some(std::fs::read_to_string(path).unwrap());
    }
    let required = std::env::var("REQUIRE_SHARED_FIXTURES").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "REQUIRE_SHARED_FIXTURES=1 but the fixture {} is missing",
        path.display()
    );
    eprintln!(
        "skipping: shared fixture {} is absent (set REQUIRE_SHARED_FIXTURES=1 to fail instead)",
        path.display()
    );
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_anthropic_tool_use_cut_by_max_tokens_is_sent_back_as_an_object() {
    let Some(recorded) = shared_stream("anthropic-messages-tool-use-truncated-max-tokens.sse")
    else {
        return;
    };
    let api = Api::Anthropic;
    let runs = Runs::default();
    let tmp = temp_dir();
    let store = tmp.path().join("recorded-length.sqlite");
    let server = Server::scripted(move |request: &Received| {
        if api.tool_results(&request.body).is_empty() {
            Reply::sse(vec![recorded.clone()])
        } else {
            Reply::sse(api.text_answer())
        }
    })
    .await;
    let out = agent(api, &server, runtime(&runs, &store))
        .generate(Thread::new("t1"), vec![Message::user("taxes?")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Stop, "{:?}", out.chunks);
    let received = server.received();
    assert_eq!(received.len(), 2);
    let messages = received[1].body["messages"].as_array().unwrap();
    let tool_use = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("the cut call is sent back");
    assert_eq!(tool_use["name"], "make_file");
    assert_eq!(tool_use["input"], json!({}));
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], tool_use["id"]);
    assert_eq!(result["is_error"], true);
}

/// Runs a step that streams `first` (then a text answer) and returns the
/// output.
async fn answered_with(api: Api, first: Vec<String>) -> tool_agent::AgentOutput {
    let runs = Runs::default();
    let tmp = temp_dir();
    let store = tmp.path().join(format!("usage-{api:?}.sqlite"));
    let server = Server::scripted(move |request: &Received| {
        if api.tool_results(&request.body).is_empty() {
            Reply::sse(first.clone())
        } else {
            Reply::sse(api.text_answer())
        }
    })
    .await;
    agent(api, &server, runtime(&runs, &store))
        .generate(Thread::new("t1"), vec![Message::user("weather?")])
        .await
        .unwrap()
}

/// The usage each step-finish chunk reported, in order.
fn step_usage(output: &tool_agent::AgentOutput) -> Vec<Usage> {
    output
        .chunks
        .iter()
        .filter_map(|c| match c {
            AgentChunk::StepFinish { usage, .. } => Some(*usage),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_usage_is_reported_per_step_and_summed_for_the_run() {
    let usage = |input, output| Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    };
    // The recorded streams end a tool-calling step; the second step (a
    // scripted text answer) reports no usage.
    let cases = [
        // message_start's input_tokens; message_delta's output_tokens.
        (
            Api::Anthropic,
            "anthropic-messages-tool-use.sse",
            usage(377, 65),
        ),
        // The last chunk before [DONE]: prompt_tokens, completion_tokens.
        (
            Api::Chat,
            "openai-chat-completions-tool-call.sse",
            usage(76, 24),
        ),
    ];
    for (api, fixture, expected) in cases {
        let Some(recorded) = shared_stream(fixture) else {
            return;
        };
        let out = answered_with(api, vec![recorded]).await;
        assert_eq!(
            step_usage(&out),
            [expected, Usage::default()],
            "{api:?}: {:?}",
            out.chunks
        );
        assert_eq!(out.usage, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_usage_counts_cached_input_and_reasoning() {
    let api = Api::Responses;
    let mut first = api.answer(&[Part::Text("Hello".into())]);
    first.pop();
    first.push(typed(json!({"type": "response.completed", "response": {
        "status": "completed",
        "output": [],
        "usage": {
            "input_tokens": 45, "input_tokens_details": {"cached_tokens": 10},
            "output_tokens": 24, "output_tokens_details": {"reasoning_tokens": 7},
            "total_tokens": 69
        }
    }})));
    let out = answered_with(api, first).await;
    assert_eq!(out.finish_reason, FinishReason::Stop, "{:?}", out.chunks);
    assert_eq!(
        out.usage,
        Usage {
            input_tokens: 45,
            output_tokens: 24,
            cached_input_tokens: 10,
            reasoning_tokens: 7
        }
    );
}
