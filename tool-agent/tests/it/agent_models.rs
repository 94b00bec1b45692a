//! The HTTP models against a local server that plays each provider: the
//! request each API expects (instructions, tools, the conversation with tool
//! calls and results, the key's header), the streamed answer decoded into
//! model events, retries, error statuses, a missing key, and streams that
//! break off. The recorded provider streams of `../shared/fixtures/streams`
//! are replayed too (skipped with a notice when absent, unless
//! `REQUIRE_SHARED_FIXTURES=1`).

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::provider::{APIS, Api, Reply, Server, UNSET_KEY_ENV, chat, typed};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_agent::{
    AnthropicModel, Message, Model, ModelCallError, ModelEvent, ModelFinish, ModelRequest,
    OpenAiChatModel, OpenAiResponsesModel, ToolCallRequest, Usage,
};
use tool_core::decode::{DecodeError, ToolCallEvent};

/// An environment variable no test sets, for the missing-key tests.
fn hello() -> ModelRequest {
    ModelRequest::new("Be brief.", vec![Message::user("Hello")], vec![])
}

type Item = Result<ModelEvent, ModelCallError>;

async fn collect(model: &dyn Model, request: ModelRequest) -> Vec<Item> {
    model.stream(request).collect().await
}

/// The events before the last item, which must be an error; and that error.
fn events_then_error(items: Vec<Item>) -> (Vec<ModelEvent>, ModelCallError) {
    let mut items = items;
    let last = items.pop().expect("at least one item");
    let error = last.expect_err("the last item is an error");
    let events = items
        .into_iter()
        .map(|item| item.expect("only the last item is an error"))
        .collect();
    (events, error)
}

fn ok_events(items: Vec<Item>) -> Vec<ModelEvent> {
    items
        .into_iter()
        .map(|item| item.unwrap_or_else(|error| panic!("unexpected error: {error}")))
        .collect()
}

fn text(delta: &str) -> ModelEvent {
    ModelEvent::TextDelta(delta.into())
}

fn call(event: ToolCallEvent) -> ModelEvent {
    ModelEvent::ToolCall(event)
}

fn start(id: &str, name: &str) -> ModelEvent {
    call(ToolCallEvent::Start {
        call_id: id.into(),
        tool_name: name.into(),
    })
}

fn delta(id: &str, text: &str) -> ModelEvent {
    call(ToolCallEvent::InputDelta {
        call_id: id.into(),
        delta: text.into(),
    })
}

fn end(id: &str, input: Value) -> ModelEvent {
    call(ToolCallEvent::InputEnd {
        call_id: id.into(),
        input,
    })
}

/// A conversation with an assistant tool call and its results.
fn conversation() -> ModelRequest {
    let mut request = ModelRequest::new(
        "You are a weather bot.",
        vec![
            Message::user("Weather in Rome and Paris?"),
            Message::Assistant {
                text: "Checking.".into(),
                tool_calls: vec![
                    ToolCallRequest {
                        call_id: "call_1".into(),
                        tool_name: "weather".into(),
                        arguments: json!({"city": "Rome"}),
                    },
                    ToolCallRequest {
                        call_id: "call_2".into(),
                        tool_name: "weather".into(),
                        arguments: json!({"city": "Paris"}),
                    },
                ],
            },
            Message::ToolResult {
                call_id: "call_1".into(),
                tool_name: "weather".into(),
                result: json!({"sky": "clear"}),
                model_output: None,
                is_error: false,
            },
            Message::ToolResult {
                call_id: "call_2".into(),
                tool_name: "weather".into(),
                result: json!("no station in Paris"),
                model_output: None,
                is_error: true,
            },
        ],
        Vec::new(),
    );
    request.max_tokens = Some(300);
    request
}

// ---------------------------------------------------------------------------
// OpenAI Chat Completions.

#[tokio::test]
async fn chat_streams_text_then_a_tool_call() {
    let server = Server::start(vec![Reply::sse(vec![
        chat(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null}, "logprobs": null, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {"content": "Let me "}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {"content": "check."}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ""}}]}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "ty\":\"Rome\"}"}}]}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
        chat(json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})),
        "data: [DONE]\n\n".into(),
    ])])
    .await;
    let tool = json!({"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}});
    let model = Api::Chat.model(&server, Some("sk-test"), 0);
    let request = ModelRequest::new(
        "Be brief.",
        vec![Message::user("Rome?")],
        vec![tool.clone()],
    );
    assert_eq!(
        ok_events(collect(&*model, request).await),
        vec![
            text("Let me "),
            text("check."),
            start("call_1", "weather"),
            delta("call_1", "{\"ci"),
            delta("call_1", "ty\":\"Rome\"}"),
            end("call_1", json!({"city": "Rome"})),
            ModelEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            }),
            ModelEvent::Finish(ModelFinish::ToolCalls),
        ]
    );
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[0].headers["authorization"], "Bearer sk-test");
    assert_eq!(
        received[0].body,
        json!({
            "model": "gpt-4.1",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Rome?"},
            ],
            "tools": [tool],
        })
    );
}

#[tokio::test]
async fn chat_request_carries_tool_calls_and_results() {
    let server = Server::start(vec![Reply::sse(Api::Chat.text_answer())]).await;
    let model = Api::Chat.model(&server, Some("sk-test"), 0);
    let items = collect(&*model, conversation()).await;
    assert_eq!(
        ok_events(items),
        vec![text("Hi"), ModelEvent::Finish(ModelFinish::Stop)]
    );
    assert_eq!(
        server.received()[0].body,
        json!({
            "model": "gpt-4.1",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": 300,
            "messages": [
                {"role": "system", "content": "You are a weather bot."},
                {"role": "user", "content": "Weather in Rome and Paris?"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\":\"clear\"}"},
                {"role": "tool", "tool_call_id": "call_2", "content": "no station in Paris"},
            ],
        })
    );
}

#[tokio::test]
async fn chat_length_finish() {
    let server = Server::start(vec![Reply::sse(vec![
        chat(json!({"choices": [{"index": 0, "delta": {"content": "Once upon"}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})),
        "data: [DONE]\n\n".into(),
    ])])
    .await;
    let model = Api::Chat.model(&server, Some("sk-test"), 0);
    assert_eq!(
        ok_events(collect(&*model, hello()).await),
        vec![text("Once upon"), ModelEvent::Finish(ModelFinish::Length)]
    );
}

// ---------------------------------------------------------------------------
// OpenAI Responses.

#[tokio::test]
async fn responses_streams_text_then_a_function_call() {
    let server = Server::start(vec![Reply::sse(vec![
        typed(json!({"type": "response.created", "sequence_number": 0, "response": {"status": "in_progress", "output": []}})),
        typed(json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}})),
        typed(json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Let me "})),
        typed(json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "check."})),
        typed(json!({"type": "response.output_item.added", "output_index": 1, "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_1", "name": "weather"}})),
        typed(json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"city\":", "obfuscation": "x"})),
        typed(json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "\"Rome\"}", "obfuscation": "y"})),
        typed(json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"city\":\"Rome\"}"})),
        typed(json!({"type": "response.output_item.done", "output_index": 1, "item": {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": "{\"city\":\"Rome\"}", "call_id": "call_1", "name": "weather"}})),
        typed(json!({"type": "response.completed", "response": {"status": "completed", "output": []}})),
    ])])
    .await;
    let tool = json!({"type": "function", "name": "weather", "parameters": {"type": "object"}, "strict": true});
    let model = Api::Responses.model(&server, Some("sk-test"), 0);
    let request = ModelRequest::new(
        "Be brief.",
        vec![Message::user("Rome?")],
        vec![tool.clone()],
    );
    assert_eq!(
        ok_events(collect(&*model, request).await),
        vec![
            text("Let me "),
            text("check."),
            start("call_1", "weather"),
            delta("call_1", "{\"city\":"),
            delta("call_1", "\"Rome\"}"),
            end("call_1", json!({"city": "Rome"})),
            ModelEvent::Finish(ModelFinish::ToolCalls),
        ]
    );
    let received = server.received();
    assert_eq!(received[0].path, "/v1/responses");
    assert_eq!(received[0].headers["authorization"], "Bearer sk-test");
    assert_eq!(
        received[0].body,
        json!({
            "model": "gpt-5.1",
            "stream": true,
            "instructions": "Be brief.",
            "input": [{"role": "user", "content": "Rome?"}],
            "tools": [tool],
        })
    );
}

#[tokio::test]
async fn responses_request_carries_function_calls_and_outputs() {
    let server = Server::start(vec![Reply::sse(Api::Responses.text_answer())]).await;
    let model = Api::Responses.model(&server, Some("sk-test"), 0);
    let items = collect(&*model, conversation()).await;
    assert_eq!(
        ok_events(items),
        vec![text("Hi"), ModelEvent::Finish(ModelFinish::Stop)]
    );
    assert_eq!(
        server.received()[0].body,
        json!({
            "model": "gpt-5.1",
            "stream": true,
            "instructions": "You are a weather bot.",
            "max_output_tokens": 300,
            "input": [
                {"role": "user", "content": "Weather in Rome and Paris?"},
                // The SDK's EasyInputMessageParam: an assistant's earlier text
                // as string content (output_text parts belong to an output
                // message item, which needs the API's id and status).
                {"type": "message", "role": "assistant", "content": "Checking."},
                {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{\"city\":\"Rome\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "weather", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "{\"sky\":\"clear\"}"},
                {"type": "function_call_output", "call_id": "call_2", "output": "no station in Paris"},
            ],
        })
    );
}

#[tokio::test]
async fn responses_incomplete_for_max_output_tokens_is_length() {
    let server = Server::start(vec![Reply::sse(vec![
        typed(json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Once upon"})),
        typed(json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}})),
    ])])
    .await;
    let model = Api::Responses.model(&server, Some("sk-test"), 0);
    assert_eq!(
        ok_events(collect(&*model, hello()).await),
        vec![text("Once upon"), ModelEvent::Finish(ModelFinish::Length)]
    );
}

#[tokio::test]
async fn responses_failed_is_an_error_after_the_open_call() {
    let mut pieces = Api::Responses.cut_answer();
    pieces.push(typed(json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "The model crashed"}}})));
    let server = Server::start(vec![Reply::sse(pieces)]).await;
    let model = Api::Responses.model(&server, Some("sk-test"), 0);
    let (events, error) = events_then_error(collect(&*model, hello()).await);
    assert!(
        matches!(
            events.last(),
            Some(ModelEvent::ToolCall(ToolCallEvent::Incomplete { partial_text, .. })) if partial_text == "{\"city\": \"Ro"
        ),
        "{events:?}"
    );
    match error {
        ModelCallError::Decode {
            source: DecodeError::Provider { message },
            ..
        } => assert_eq!(message, "server_error: The model crashed"),
        other => panic!("expected a provider error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Anthropic Messages.

#[tokio::test]
async fn anthropic_streams_text_then_a_tool_use() {
    let server = Server::start(vec![Reply::sse(vec![
        typed(json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "stop_reason": null}})),
        typed(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        typed(json!({"type": "ping"})),
        typed(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}})),
        typed(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "check."}})),
        typed(json!({"type": "content_block_stop", "index": 0})),
        typed(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}})),
        typed(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}})),
        typed(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Ro"}})),
        typed(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "me\"}"}})),
        typed(json!({"type": "content_block_stop", "index": 1})),
        typed(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 65}})),
        typed(json!({"type": "message_stop"})),
    ])])
    .await;
    let tool = json!({"name": "weather", "input_schema": {"type": "object"}});
    let model = Api::Anthropic.model(&server, Some("sk-ant-test"), 0);
    let request = ModelRequest::new(
        "Be brief.",
        vec![Message::user("Rome?")],
        vec![tool.clone()],
    );
    assert_eq!(
        ok_events(collect(&*model, request).await),
        vec![
            text("Let me "),
            text("check."),
            start("toolu_1", "weather"),
            delta("toolu_1", "{\"city\": \"Ro"),
            delta("toolu_1", "me\"}"),
            end("toolu_1", json!({"city": "Rome"})),
            ModelEvent::Usage(Usage {
                output_tokens: 65,
                ..Usage::default()
            }),
            ModelEvent::Finish(ModelFinish::ToolCalls),
        ]
    );
    let received = server.received();
    assert_eq!(received[0].path, "/v1/messages");
    assert_eq!(received[0].headers["x-api-key"], "sk-ant-test");
    assert_eq!(received[0].headers["anthropic-version"], "2023-06-01");
    assert!(!received[0].headers.contains_key("authorization"));
    assert_eq!(
        received[0].body,
        json!({
            "model": "claude-sonnet-4-5",
            "stream": true,
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Rome?"}],
            "tools": [tool],
        })
    );
}

#[tokio::test]
async fn anthropic_request_puts_consecutive_tool_results_in_one_user_message() {
    let server = Server::start(vec![Reply::sse(Api::Anthropic.text_answer())]).await;
    let model = Api::Anthropic.model(&server, Some("sk-ant-test"), 0);
    let mut request = conversation();
    request.messages.push(Message::user("And tomorrow?"));
    let items = collect(&*model, request).await;
    assert_eq!(
        ok_events(items),
        vec![text("Hi"), ModelEvent::Finish(ModelFinish::Stop)]
    );
    assert_eq!(
        server.received()[0].body,
        json!({
            "model": "claude-sonnet-4-5",
            "stream": true,
            "max_tokens": 300,
            "system": "You are a weather bot.",
            "messages": [
                {"role": "user", "content": "Weather in Rome and Paris?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Rome"}},
                    {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Paris"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"sky\":\"clear\"}"},
                    {"type": "tool_result", "tool_use_id": "call_2", "content": "no station in Paris", "is_error": true},
                    {"type": "text", "text": "And tomorrow?"},
                ]},
            ],
        })
    );
}

#[tokio::test]
async fn anthropic_builder_max_tokens_is_the_default() {
    let server = Server::start(vec![Reply::sse(Api::Anthropic.text_answer())]).await;
    let model = AnthropicModel::new("claude-sonnet-4-5")
        .base_url(format!("http://{}", server.addr))
        .api_key("sk-ant-test")
        .max_tokens(1234);
    ok_events(collect(&model, hello()).await);
    assert_eq!(server.received()[0].body["max_tokens"], 1234);
}

#[tokio::test]
async fn anthropic_error_event_is_an_error_after_the_open_call() {
    let mut pieces = Api::Anthropic.cut_answer();
    pieces.push(typed(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    let server = Server::start(vec![Reply::sse(pieces)]).await;
    let model = Api::Anthropic.model(&server, Some("sk-ant-test"), 0);
    let (events, error) = events_then_error(collect(&*model, hello()).await);
    assert!(
        matches!(
            events.last(),
            Some(ModelEvent::ToolCall(ToolCallEvent::Incomplete { .. }))
        ),
        "{events:?}"
    );
    match error {
        ModelCallError::Decode {
            source: DecodeError::Provider { message },
            ..
        } => assert_eq!(message, "overloaded_error: Overloaded"),
        other => panic!("expected a provider error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// All three: retries, statuses, keys, broken streams.

#[tokio::test]
async fn a_429_with_retry_after_is_retried() {
    for api in APIS {
        let server = Server::start(vec![
            Reply::status(429, &api.error("Rate limit reached")).header("retry-after", "0"),
            Reply::sse(api.text_answer()),
        ])
        .await;
        let model = api.model(&server, Some("key"), 3);
        let items = collect(&*model, hello()).await;
        assert_eq!(
            ok_events(items),
            vec![text("Hi"), ModelEvent::Finish(ModelFinish::Stop)],
            "{api:?}"
        );
        let received = server.received();
        assert_eq!(received.len(), 2, "{api:?}");
        assert_eq!(received[0].body, received[1].body, "{api:?}");
        assert!(received.iter().all(|r| r.path == api.path()), "{api:?}");
    }
}

#[tokio::test]
async fn retry_after_seconds_are_waited() {
    let server = Server::start(vec![
        Reply::status(503, &Api::Chat.error("Overloaded")).header("retry-after", "1"),
        Reply::sse(Api::Chat.text_answer()),
    ])
    .await;
    let model = Api::Chat.model(&server, Some("key"), 1);
    let started = Instant::now();
    ok_events(collect(&*model, hello()).await);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_500_beyond_max_retries_is_a_status_error() {
    for api in APIS {
        let failure =
            Reply::status(500, &api.error("The server had an error")).header("retry-after", "0");
        let server = Server::start(vec![failure.clone(), failure.clone(), failure]).await;
        let model = api.model(&server, Some("key"), 2);
        let (events, error) = events_then_error(collect(&*model, hello()).await);
        assert!(events.is_empty(), "{api:?}: {events:?}");
        match error {
            ModelCallError::Status {
                status, message, ..
            } => {
                assert_eq!(status, 500, "{api:?}");
                assert_eq!(message, "The server had an error", "{api:?}");
            }
            other => panic!("{api:?}: expected a status error, got {other:?}"),
        }
        assert_eq!(
            server.received().len(),
            3,
            "{api:?}: one try and two retries"
        );
    }
}

#[tokio::test]
async fn a_400_is_a_status_error_at_once_with_the_providers_message() {
    for api in APIS {
        let server = Server::start(vec![
            Reply::status(400, &api.error("Invalid value for 'model'")),
            Reply::sse(api.text_answer()),
        ])
        .await;
        let model = api.model(&server, Some("key"), 3);
        let items = collect(&*model, hello()).await;
        assert_eq!(items.len(), 1, "{api:?}");
        match events_then_error(items).1 {
            ModelCallError::Status {
                status, message, ..
            } => {
                assert_eq!(status, 400, "{api:?}");
                assert_eq!(message, "Invalid value for 'model'", "{api:?}");
            }
            other => panic!("{api:?}: expected a status error, got {other:?}"),
        }
        assert_eq!(server.received().len(), 1, "{api:?}: not retried");
    }
}

#[tokio::test]
async fn a_long_error_message_is_cut_at_500_characters() {
    let server = Server::start(vec![Reply::status(422, &"x".repeat(2_000))]).await;
    let model = Api::Anthropic.model(&server, Some("key"), 0);
    match events_then_error(collect(&*model, hello()).await).1 {
        ModelCallError::Status { message, .. } => assert_eq!(message.chars().count(), 503),
        other => panic!("expected a status error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_api_key_is_the_only_item_and_nothing_is_sent() {
    assert!(std::env::var_os(UNSET_KEY_ENV).is_none());
    for api in APIS {
        let server = Server::start(vec![Reply::sse(api.text_answer())]).await;
        let model = api.model(&server, None, 3);
        let items = collect(&*model, hello()).await;
        assert_eq!(items.len(), 1, "{api:?}");
        match events_then_error(items).1 {
            ModelCallError::MissingApiKey { provider, env } => {
                assert_eq!(provider, model.provider());
                assert_eq!(env, UNSET_KEY_ENV);
            }
            other => panic!("{api:?}: expected MissingApiKey, got {other:?}"),
        }
        assert!(server.received().is_empty(), "{api:?}");
    }
}

/// The events of a cut stream: the call's start and delta, then `Incomplete`.
fn assert_cut_call(api: Api, events: &[ModelEvent]) {
    assert_eq!(events.len(), 3, "{api:?}: {events:?}");
    assert_eq!(events[0], start("call_1", "weather"), "{api:?}");
    assert_eq!(events[1], delta("call_1", "{\"city\": \"Ro"), "{api:?}");
    match &events[2] {
        ModelEvent::ToolCall(ToolCallEvent::Incomplete {
            call_id,
            tool_name,
            partial_text,
            ..
        }) => {
            assert_eq!(
                (call_id.as_str(), tool_name.as_str()),
                ("call_1", "weather")
            );
            assert_eq!(partial_text, "{\"city\": \"Ro", "{api:?}");
        }
        other => panic!("{api:?}: expected Incomplete, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stream_closed_mid_call_reports_it_incomplete_then_that_it_ended_early() {
    for api in APIS {
        let server = Server::start(vec![Reply::sse(api.cut_answer())]).await;
        let model = api.model(&server, Some("key"), 0);
        let (events, error) = events_then_error(collect(&*model, hello()).await);
        assert_cut_call(api, &events);
        assert!(
            error.to_string().contains("answer ended early")
                && !error.to_string().contains("could not be reached"),
            "{api:?}: {error}"
        );
        match error {
            ModelCallError::StreamEnded { reason, .. } => {
                assert!(
                    reason.contains("closed before the answer finished"),
                    "{api:?}: {reason}"
                );
            }
            other => panic!("{api:?}: expected an early end, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_stream_broken_off_mid_call_reports_it_incomplete_then_that_it_ended_early() {
    for api in APIS {
        let mut reply = Reply::sse(api.cut_answer());
        reply.break_off = true;
        let server = Server::start(vec![reply]).await;
        let model = api.model(&server, Some("key"), 0);
        let (events, error) = events_then_error(collect(&*model, hello()).await);
        assert_cut_call(api, &events);
        match error {
            ModelCallError::StreamEnded { reason, source, .. } => {
                assert!(reason.contains("broke off"), "{api:?}: {reason}");
                assert!(source.is_some(), "{api:?}");
            }
            other => panic!("{api:?}: expected an early end, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_stalled_stream_times_out_after_the_idle_timeout() {
    let mut reply = Reply::sse(Api::Anthropic.cut_answer());
    reply.stall = Duration::from_secs(5);
    let server = Server::start(vec![reply]).await;
    let model = Api::Anthropic.model_with(&server, Some("key"), 0, Duration::from_millis(300));
    let started = Instant::now();
    let (events, error) = events_then_error(collect(&*model, hello()).await);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_cut_call(Api::Anthropic, &events);
    assert!(
        matches!(error, ModelCallError::Timeout { after, .. } if after == Duration::from_millis(300)),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error_after_the_retries() {
    // A port nothing listens on: bind one, then free it.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let model = OpenAiChatModel::new("gpt-4.1")
        .base_url(format!("http://{addr}/v1"))
        .api_key("key")
        .max_retries(1);
    let (events, error) = events_then_error(collect(&model, hello()).await);
    assert!(events.is_empty());
    assert!(
        matches!(error, ModelCallError::Transport { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_malformed_tool_call_chunk_ends_the_answer_with_a_decode_error() {
    let server = Server::start(vec![Reply::sse(vec![
        chat(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "weather", "arguments": "{\"ci"}}]}, "finish_reason": null}]})),
        // Index 1's first fragment without its id: a call that can't be told.
        chat(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "{"}}]}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
        "data: [DONE]\n\n".into(),
    ])])
    .await;
    let model = Api::Chat.model(&server, Some("key"), 0);
    let (events, error) = events_then_error(collect(&*model, hello()).await);
    assert_eq!(
        events[..2],
        [start("call_1", "weather"), delta("call_1", "{\"ci")]
    );
    assert!(
        matches!(&events[2], ModelEvent::ToolCall(ToolCallEvent::Incomplete { call_id, .. }) if call_id == "call_1"),
        "{events:?}"
    );
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(
        matches!(&error, ModelCallError::Decode { source: DecodeError::MissingField { field, .. }, .. } if field.ends_with("tool_calls[0].id")),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_event_that_is_not_json_ends_the_answer_with_a_decode_error() {
    for api in APIS {
        let mut answer = vec!["data: {not json\n\n".to_owned()];
        answer.extend(api.text_answer());
        let server = Server::start(vec![Reply::sse(answer)]).await;
        let model = api.model(&server, Some("key"), 0);
        let (events, error) = events_then_error(collect(&*model, hello()).await);
        assert!(events.is_empty(), "{api:?}: {events:?}");
        assert!(
            matches!(
                &error,
                ModelCallError::Decode {
                    source: DecodeError::InvalidJson { .. },
                    ..
                }
            ),
            "{api:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn chat_tool_calls_without_index_are_assembled() {
    // Gemini's OpenAI-compatible endpoint: whole calls without `index`.
    let server = Server::start(vec![Reply::sse(vec![
        chat(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"id": "function-call-1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}
        ]}, "finish_reason": null}]})),
        chat(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"id": "function-call-2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}
        ]}, "finish_reason": "tool_calls"}]})),
        "data: [DONE]\n\n".into(),
    ])])
    .await;
    let model = Api::Chat.model(&server, Some("key"), 0);
    assert_eq!(
        ok_events(collect(&*model, hello()).await),
        vec![
            start("function-call-1", "weather"),
            delta("function-call-1", "{\"city\":\"Rome\"}"),
            start("function-call-2", "weather"),
            delta("function-call-2", "{\"city\":\"Paris\"}"),
            end("function-call-1", json!({"city": "Rome"})),
            end("function-call-2", json!({"city": "Paris"})),
            ModelEvent::Finish(ModelFinish::ToolCalls),
        ]
    );
}

// ---------------------------------------------------------------------------
// The recorded streams of ../shared/fixtures/streams.

/// A shared stream fixture's text; `None` after a notice when `../shared` is
/// absent, a failure then when `REQUIRE_SHARED_FIXTURES=1`.
fn shared_stream(name: &str) -> Option<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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

/// A `.jsonl` fixture (one data payload a line) as an SSE body.
fn jsonl_as_sse(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("data: {line}\n\n"))
        .collect()
}

/// Replays `body` in pieces of 97 characters (events split anywhere), as `api`.
async fn replay(api: Api, body: &str) -> Vec<Item> {
    let chars: Vec<char> = body.chars().collect();
    let pieces = chars.chunks(97).map(|c| c.iter().collect()).collect();
    let server = Server::start(vec![Reply::sse(pieces)]).await;
    let model = api.model(&server, Some("key"), 0);
    collect(&*model, hello()).await
}

/// The text, the finished calls (id, name, input) and the finish.
fn summary(events: &[ModelEvent]) -> (String, Vec<(String, String, Value)>, Option<ModelFinish>) {
    let mut text = String::new();
    let mut names = HashMap::new();
    let mut calls = Vec::new();
    let mut finish = None;
    for event in events {
        match event {
            ModelEvent::TextDelta(delta) => text.push_str(delta),
            ModelEvent::ToolCall(ToolCallEvent::Start { call_id, tool_name }) => {
                names.insert(call_id.clone(), tool_name.clone());
            }
            ModelEvent::ToolCall(ToolCallEvent::InputEnd { call_id, input }) => {
                calls.push((call_id.clone(), names[call_id].clone(), input.clone()));
            }
            ModelEvent::Finish(f) => finish = Some(f.clone()),
            _ => {}
        }
    }
    (text, calls, finish)
}

#[tokio::test]
async fn recorded_chat_streams() {
    let Some(single) = shared_stream("openai-chat-completions-tool-call.sse") else {
        return;
    };
    let events = ok_events(replay(Api::Chat, &single).await);
    let (text, calls, finish) = summary(&events);
    assert_eq!(text, "");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, "GetWeatherArgs");
    assert_eq!(
        calls[0].2,
        json!({"city": "Edinburgh", "country": "UK", "units": "c"})
    );
    assert_eq!(finish, Some(ModelFinish::ToolCalls));
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finish(ModelFinish::ToolCalls))
    );

    let Some(parallel) = shared_stream("openai-chat-completions-parallel-tool-calls.sse") else {
        return;
    };
    let events = ok_events(replay(Api::Chat, &parallel).await);
    let (_, calls, finish) = summary(&events);
    let inputs: Vec<&Value> = calls.iter().map(|c| &c.2).collect();
    assert_eq!(
        inputs,
        [
            &json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
            &json!({"ticker": "AAPL", "exchange": "NASDAQ"}),
        ]
    );
    assert_eq!(finish, Some(ModelFinish::ToolCalls));
}

#[tokio::test]
async fn recorded_responses_stream() {
    let Some(jsonl) = shared_stream("openai-responses-function-call.chunks.jsonl") else {
        return;
    };
    let events = ok_events(replay(Api::Responses, &jsonl_as_sse(&jsonl)).await);
    let (_, calls, finish) = summary(&events);
    assert_eq!(
        calls,
        [(
            "call_H5DxLSFnsGhiROnUiDHmgyc8".to_owned(),
            "weather".to_owned(),
            json!({"location": "San Francisco"})
        )]
    );
    assert_eq!(finish, Some(ModelFinish::ToolCalls));
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finish(ModelFinish::ToolCalls))
    );
}

#[tokio::test]
async fn recorded_anthropic_streams() {
    let Some(tool_use) = shared_stream("anthropic-messages-tool-use.sse") else {
        return;
    };
    let events = ok_events(replay(Api::Anthropic, &tool_use).await);
    let (text, calls, finish) = summary(&events);
    assert_eq!(text, "I'll check the current weather in Paris for you.");
    assert_eq!(
        calls,
        [(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn".to_owned(),
            "get_weather".to_owned(),
            json!({"location": "Paris"})
        )]
    );
    assert_eq!(finish, Some(ModelFinish::ToolCalls));

    let Some(no_args) = shared_stream("anthropic-messages-tool-no-args.chunks.jsonl") else {
        return;
    };
    let events = ok_events(replay(Api::Anthropic, &jsonl_as_sse(&no_args)).await);
    let (text, calls, finish) = summary(&events);
    assert_eq!(text, "I'll update the issue list for you.");
    assert_eq!(calls[0].2, json!({}));
    assert_eq!(finish, Some(ModelFinish::ToolCalls));

    let Some(truncated) = shared_stream("anthropic-messages-tool-use-truncated-max-tokens.sse")
    else {
        return;
    };
    let events = ok_events(replay(Api::Anthropic, &truncated).await);
    let (text, calls, finish) = summary(&events);
    assert!(
        text.starts_with("I'll create a comprehensive tax guide"),
        "{text}"
    );
    assert!(calls.is_empty());
    assert!(
        events.iter().any(|e| matches!(e,
            ModelEvent::ToolCall(ToolCallEvent::Incomplete { tool_name, partial_text, .. })
                if tool_name == "make_file" && partial_text.ends_with("\"Filing taxes"))),
        "{events:?}"
    );
    assert_eq!(finish, Some(ModelFinish::Length));
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finish(ModelFinish::Length))
    );
}

#[test]
fn debug_output_hides_the_api_key() {
    let chat = OpenAiChatModel::new("gpt-4.1").api_key("sk-secret-1");
    let responses = OpenAiResponsesModel::new("gpt-5.1").api_key("sk-secret-2");
    let anthropic = AnthropicModel::new("claude-sonnet-4-5").api_key("sk-secret-3");
    for debug in [
        format!("{chat:?}"),
        format!("{responses:?}"),
        format!("{anthropic:?}"),
    ] {
        assert!(!debug.contains("sk-secret"), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
    }
}

#[tokio::test]
async fn a_stream_closed_after_the_announced_finish_still_finishes() {
    for api in [Api::Chat, Api::Anthropic] {
        // Without `[DONE]` / `message_stop`.
        let mut pieces = api.text_answer();
        pieces.pop();
        let server = Server::start(vec![Reply::sse(pieces)]).await;
        let model = api.model(&server, Some("key"), 0);
        assert_eq!(
            ok_events(collect(&*model, hello()).await),
            vec![text("Hi"), ModelEvent::Finish(ModelFinish::Stop)],
            "{api:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Refusals and the provider's finish reasons (issue 23).

/// An answer that refuses, in each API's shape.
fn refusal_answer(api: Api) -> Vec<String> {
    match api {
        Api::Chat => vec![
            chat(
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "refusal": ""}, "finish_reason": null}]}),
            ),
            chat(
                json!({"choices": [{"index": 0, "delta": {"refusal": "I can't "}, "finish_reason": null}]}),
            ),
            chat(
                json!({"choices": [{"index": 0, "delta": {"refusal": "help with that."}, "finish_reason": null}]}),
            ),
            chat(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
            "data: [DONE]\n\n".into(),
        ],
        Api::Responses => vec![
            typed(
                json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}}),
            ),
            typed(
                json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "refusal", "refusal": ""}}),
            ),
            typed(
                json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "I can't "}),
            ),
            typed(
                json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "help with that."}),
            ),
            typed(
                json!({"type": "response.refusal.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "refusal": "I can't help with that."}),
            ),
            typed(
                json!({"type": "response.completed", "response": {"status": "completed", "output": [
                    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
                ]}}),
            ),
        ],
        Api::Anthropic => vec![
            typed(
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "stop_reason": null}}),
            ),
            typed(
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            typed(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "I can't "}}),
            ),
            typed(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "help with that."}}),
            ),
            typed(json!({"type": "content_block_stop", "index": 0})),
            typed(
                json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null}}),
            ),
            typed(json!({"type": "message_stop"})),
        ],
    }
}

#[tokio::test]
async fn a_refusal_is_its_text_then_a_refusal_finish() {
    for api in APIS {
        let server = Server::start(vec![Reply::sse(refusal_answer(api))]).await;
        let model = api.model(&server, Some("sk-test"), 0);
        assert_eq!(
            ok_events(collect(&*model, hello()).await),
            vec![
                text("I can't "),
                text("help with that."),
                ModelEvent::Finish(ModelFinish::Refusal)
            ],
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn a_refusal_only_in_the_completed_response_is_read_from_its_output() {
    let server = Server::start(vec![Reply::sse(vec![typed(
        json!({"type": "response.completed", "response": {"status": "completed", "output": [
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "refusal", "refusal": "No."}]}
        ]}}),
    )])])
    .await;
    let model = Api::Responses.model(&server, Some("sk-test"), 0);
    assert_eq!(
        ok_events(collect(&*model, hello()).await),
        vec![text("No."), ModelEvent::Finish(ModelFinish::Refusal)]
    );
}

#[tokio::test]
async fn the_providers_finish_reason_is_kept() {
    let chat_ending = |reason: &str| {
        vec![
            chat(
                json!({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": null}]}),
            ),
            chat(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})),
            "data: [DONE]\n\n".into(),
        ]
    };
    let anthropic_ending = |reason: &str| {
        vec![
            typed(
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            typed(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}),
            ),
            typed(json!({"type": "content_block_stop", "index": 0})),
            typed(
                json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}}),
            ),
            typed(json!({"type": "message_stop"})),
        ]
    };
    let responses_incomplete = |reason: &str| {
        vec![
            typed(json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "x"})),
            typed(
                json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": reason}}}),
            ),
        ]
    };
    let cases = [
        (
            Api::Chat,
            chat_ending("content_filter"),
            ModelFinish::ContentFilter,
        ),
        (Api::Chat, chat_ending("stop"), ModelFinish::Stop),
        (Api::Chat, chat_ending("length"), ModelFinish::Length),
        (
            Api::Responses,
            responses_incomplete("content_filter"),
            ModelFinish::ContentFilter,
        ),
        (
            Api::Anthropic,
            anthropic_ending("pause_turn"),
            ModelFinish::PauseTurn,
        ),
        (
            Api::Anthropic,
            anthropic_ending("refusal"),
            ModelFinish::Refusal,
        ),
        (
            Api::Anthropic,
            anthropic_ending("max_tokens"),
            ModelFinish::Length,
        ),
        (
            Api::Anthropic,
            anthropic_ending("stop_sequence"),
            ModelFinish::Stop,
        ),
    ];
    for (api, answer, finish) in cases {
        let server = Server::start(vec![Reply::sse(answer)]).await;
        let model = api.model(&server, Some("sk-test"), 0);
        assert_eq!(
            ok_events(collect(&*model, hello()).await),
            vec![text("x"), ModelEvent::Finish(finish.clone())],
            "{api:?} {finish:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Retries as the official SDKs retry (issue 23).

#[tokio::test]
async fn x_should_retry_decides_over_the_status() {
    for api in APIS {
        // `true` retries a 400.
        let server = Server::start(vec![
            Reply::status(400, &api.error("try again")).header("x-should-retry", "true"),
            Reply::sse(api.text_answer()),
        ])
        .await;
        let model = api.model(&server, Some("key"), 2);
        ok_events(collect(&*model, hello()).await);
        assert_eq!(server.received().len(), 2, "{api:?}");
        // `false` does not retry a 503.
        let server = Server::start(vec![
            Reply::status(503, &api.error("no")).header("x-should-retry", "false"),
            Reply::sse(api.text_answer()),
        ])
        .await;
        let model = api.model(&server, Some("key"), 2);
        let (_, error) = events_then_error(collect(&*model, hello()).await);
        assert!(
            matches!(error, ModelCallError::Status { status: 503, .. }),
            "{api:?}: {error:?}"
        );
        assert_eq!(server.received().len(), 1, "{api:?}");
    }
}

#[tokio::test]
async fn statuses_408_and_409_are_retried() {
    for status in [408, 409] {
        let server = Server::start(vec![
            Reply::status(status, &Api::Chat.error("again")).header("retry-after-ms", "10"),
            Reply::sse(Api::Chat.text_answer()),
        ])
        .await;
        let model = Api::Chat.model(&server, Some("key"), 1);
        ok_events(collect(&*model, hello()).await);
        assert_eq!(server.received().len(), 2, "{status}");
    }
}

#[tokio::test]
async fn retry_after_ms_is_waited_before_retry_after() {
    let server = Server::start(vec![
        Reply::status(429, &Api::Anthropic.error("slow"))
            .header("retry-after-ms", "300")
            .header("retry-after", "5"),
        Reply::sse(Api::Anthropic.text_answer()),
    ])
    .await;
    let model = Api::Anthropic.model(&server, Some("key"), 1);
    let started = Instant::now();
    ok_events(collect(&*model, hello()).await);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(290) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
}

#[tokio::test]
async fn retry_after_zero_waits_the_backoff() {
    let server = Server::start(vec![
        Reply::status(429, &Api::Chat.error("slow")).header("retry-after", "0"),
        Reply::sse(Api::Chat.text_answer()),
    ])
    .await;
    let model = Api::Chat.model(&server, Some("key"), 1);
    let started = Instant::now();
    ok_events(collect(&*model, hello()).await);
    // 500 ms less at most 25 % of jitter.
    assert!(
        started.elapsed() >= Duration::from_millis(370),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_retry_after_beyond_two_minutes_is_not_retried() {
    let server = Server::start(vec![
        Reply::status(429, &Api::Responses.error("come back tomorrow"))
            .header("retry-after", "86400"),
        Reply::sse(Api::Responses.text_answer()),
    ])
    .await;
    let model = Api::Responses.model(&server, Some("key"), 2);
    let started = Instant::now();
    let (_, error) = events_then_error(collect(&*model, hello()).await);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(error, ModelCallError::Status { status: 429, .. }),
        "{error:?}"
    );
    assert_eq!(server.received().len(), 1);
}

// ---------------------------------------------------------------------------
// Text in a block's start, custom headers (issue 23).

#[tokio::test]
async fn anthropic_text_in_a_blocks_start_is_kept() {
    let server = Server::start(vec![Reply::sse(vec![
        typed(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hello"}})),
        typed(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ", world"}})),
        typed(json!({"type": "content_block_stop", "index": 0})),
        typed(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}})),
        typed(json!({"type": "message_stop"})),
    ])])
    .await;
    let model = Api::Anthropic.model(&server, Some("key"), 0);
    assert_eq!(
        ok_events(collect(&*model, hello()).await),
        vec![
            text("Hello"),
            text(", world"),
            ModelEvent::Finish(ModelFinish::Stop)
        ]
    );
}

#[tokio::test]
async fn custom_headers_per_model_and_per_request_are_sent() {
    for api in APIS {
        let server = Server::start(vec![Reply::sse(api.text_answer())]).await;
        let addr = server.addr;
        let model: Box<dyn Model> = match api {
            Api::Chat => Box::new(
                OpenAiChatModel::new("gpt-4.1")
                    .base_url(format!("http://{addr}/v1"))
                    .api_key("key")
                    .header("x-team", "search")
                    .header("x-trace", "model"),
            ),
            Api::Responses => Box::new(
                OpenAiResponsesModel::new("gpt-5.1")
                    .base_url(format!("http://{addr}/v1"))
                    .api_key("key")
                    .header("x-team", "search")
                    .header("x-trace", "model"),
            ),
            Api::Anthropic => Box::new(
                AnthropicModel::new("claude-sonnet-4-5")
                    .base_url(format!("http://{addr}"))
                    .api_key("key")
                    .header("x-team", "search")
                    .header("x-trace", "model"),
            ),
        };
        let request = hello()
            .header("anthropic-beta", "files-api-2025-04-14")
            .header("x-trace", "request");
        ok_events(collect(&*model, request).await);
        let headers = &server.received()[0].headers;
        assert_eq!(headers["x-team"], "search", "{api:?}");
        assert_eq!(
            headers["x-trace"], "request",
            "{api:?}: the request's replaces the model's"
        );
        assert_eq!(headers["anthropic-beta"], "files-api-2025-04-14", "{api:?}");
        assert_eq!(headers["content-type"], "application/json", "{api:?}");
    }
}

#[tokio::test]
async fn an_invalid_header_fails_the_stream_and_nothing_is_sent() {
    let server = Server::start(vec![Reply::sse(Api::Chat.text_answer())]).await;
    let model = OpenAiChatModel::new("gpt-4.1")
        .base_url(format!("http://{}/v1", server.addr))
        .api_key("key")
        .header("bad header", "x");
    let (events, error) = events_then_error(collect(&model, hello()).await);
    assert!(events.is_empty());
    assert!(
        matches!(&error, ModelCallError::Other(message) if message.contains("bad header")),
        "{error:?}"
    );
    assert!(server.received().is_empty());
}
