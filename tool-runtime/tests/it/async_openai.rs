//! async-openai's request types carry exactly what `tool_core::provider`
//! builds: the tools of a request, the calls back to the runtime (strict
//! mode's `null`s restored) and the tool results, for Chat Completions and
//! Responses.

use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls, CreateChatCompletionRequest,
    CreateChatCompletionRequestArgs,
};
use async_openai::types::responses::{CreateResponseArgs, FunctionToolCall, OutputItem};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::provider::{Provider, ProviderTools};
use tool_core::{ContentPart, ModelOutput, RawInput, Tool, ToolError, tool};
use tool_runtime::{CallOutcome, Runtime, openai};

/// Where to search.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchInput {
    /// What to look for
    query: String,
    /// At most this many hits (10 when not given)
    #[serde(default = "ten")]
    limit: u32,
}

/// What was found.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Hits {
    query: String,
    limit: u32,
}

fn ten() -> u32 {
    10
}

/// Search the docs
#[tool(strict)]
pub async fn search(SearchInput { query, limit }: SearchInput) -> Result<Hits, ToolError> {
    Ok(Hits { query, limit })
}

/// Draw a chart
#[tool(to_model_output = chart)]
pub async fn draw(title: String) -> String {
    format!("chart of {title}")
}

fn chart(_output: &String) -> ModelOutput {
    ModelOutput::Content(vec![
        ContentPart::text("the chart"),
        ContentPart::ImageData {
            data: "iVBORw0KGgo=".into(),
            media_type: "image/png".into(),
        },
    ])
}

fn tools() -> [Tool; 2] {
    [Tool::from(SearchTool), Tool::from(DrawTool)]
}

#[test]
fn the_requests_tools_are_our_exports() {
    let chat_tools: Vec<_> = tools()
        .iter()
        .map(|tool| openai::chat_completion_tool(tool).unwrap())
        .collect();
    let request: CreateChatCompletionRequest = CreateChatCompletionRequestArgs::default()
        .model("gpt-4.1")
        .messages(vec![])
        .tools(chat_tools)
        .build()
        .unwrap();
    let ours = ProviderTools::new(Provider::OpenAiChat, tools()).unwrap();
    let request = serde_json::to_value(&request).unwrap();
    assert_eq!(request["tools"], ours.request_tools());
    assert_eq!(request["tools"][0]["function"]["strict"], true);

    let responses_tools: Vec<_> = tools()
        .iter()
        .map(|tool| openai::responses_tool(tool).unwrap())
        .collect();
    let request = CreateResponseArgs::default()
        .model("gpt-4.1")
        .tools(responses_tools)
        .build()
        .unwrap();
    let ours = ProviderTools::new(Provider::OpenAiResponses, tools()).unwrap();
    let request = serde_json::to_value(&request).unwrap();
    assert_eq!(request["tools"], ours.request_tools());
    assert_eq!(request["tools"][0]["type"], "function");
}

#[tokio::test]
async fn a_chat_tool_call_runs_in_the_runtime_and_answers_with_our_tool_message() {
    let runtime = Runtime::builder().tools(tools()).build().unwrap();
    let tools = ProviderTools::new(Provider::OpenAiChat, tools()).unwrap();
    // As a Chat Completions response carries it (`message.tool_calls`).
    let calls: Vec<ChatCompletionMessageToolCalls> = serde_json::from_value(json!([
        { "type": "function", "id": "call_1", "function": { "name": "search", "arguments": "{\"query\":\"rig\",\"limit\":null}" } },
        { "type": "function", "id": "call_2", "function": { "name": "draw", "arguments": "{\"title\":\"sales\"}" } },
        { "type": "function", "id": "call_3", "function": { "name": "search", "arguments": "{\"query\":7}" } },
    ]))
    .unwrap();
    let calls: Vec<&ChatCompletionMessageToolCall> = calls
        .iter()
        .map(|call| match call {
            ChatCompletionMessageToolCalls::Function(call) => call,
            ChatCompletionMessageToolCalls::Custom(_) => unreachable!(),
        })
        .collect();

    let call = openai::chat_tool_call(&tools, calls[0]);
    assert_eq!(call.input, RawInput::Json(json!({ "query": "rig" })));
    let mut outcomes = vec![runtime.call(call).await];
    for call in &calls[1..] {
        outcomes.push(runtime.call(openai::chat_tool_call(&tools, call)).await);
    }
    assert_eq!(
        outcomes[0].output(),
        Some(&json!({ "query": "rig", "limit": 10 }))
    );
    assert!(outcomes[2].error().is_some());

    for (call, outcome) in calls.iter().zip(&outcomes) {
        let message = openai::chat_tool_message(&call.id, outcome);
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            tools.tool_result(&call.id, &call.function.name, outcome)
        );
    }
    // Tool messages take text only: the chart's parts as text parts.
    let chart = serde_json::to_value(openai::chat_tool_message("call_2", &outcomes[1])).unwrap();
    assert_eq!(
        chart["content"][0],
        json!({ "type": "text", "text": "the chart" })
    );
}

#[tokio::test]
async fn a_responses_function_call_runs_in_the_runtime_and_answers_with_our_output_item() {
    let runtime = Runtime::builder().tools(tools()).build().unwrap();
    let tools = ProviderTools::new(Provider::OpenAiResponses, tools()).unwrap();
    // As a response's `output` carries them.
    let items: Vec<OutputItem> = serde_json::from_value(json!([
        { "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "search", "arguments": "{\"query\":\"rig\",\"limit\":null}", "status": "completed" },
        { "type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "draw", "arguments": "{\"title\":\"sales\"}", "status": "completed" },
        { "type": "function_call", "id": "fc_3", "call_id": "call_3", "name": "search", "arguments": "not json", "status": "completed" },
    ]))
    .unwrap();
    let calls: Vec<&FunctionToolCall> = items
        .iter()
        .map(|item| match item {
            OutputItem::FunctionCall(call) => call,
            _ => unreachable!(),
        })
        .collect();

    let mut outcomes: Vec<CallOutcome> = Vec::new();
    for call in &calls {
        outcomes.push(
            runtime
                .call(openai::responses_tool_call(&tools, call))
                .await,
        );
    }
    assert_eq!(
        outcomes[0].output(),
        Some(&json!({ "query": "rig", "limit": 10 }))
    );
    assert!(outcomes[2].error().is_some());

    let inputs: Vec<Value> = calls
        .iter()
        .zip(&outcomes)
        .map(|(call, outcome)| {
            serde_json::to_value(openai::function_call_output(&call.call_id, outcome)).unwrap()
        })
        .collect();
    for ((call, outcome), input) in calls.iter().zip(&outcomes).zip(&inputs) {
        assert_eq!(
            input,
            &tools.tool_result(&call.call_id, &call.name, outcome)
        );
    }
    assert_eq!(inputs[1]["output"][1]["type"], "input_image");
}

/// Every kind of content part a tool's `to_model_output` can give reaches
/// both APIs' result types (none makes the conversion fail).
#[test]
fn every_content_part_converts_for_both_apis() {
    let parts = vec![
        ContentPart::text("all kinds"),
        ContentPart::ImageUrl {
            url: "https://example.com/a.png".into(),
        },
        ContentPart::ImageData {
            data: "iVBORw0KGgo=".into(),
            media_type: "image/png".into(),
        },
        ContentPart::FileUrl {
            url: "https://example.com/a.pdf".into(),
        },
        ContentPart::FileData {
            data: "JVBERi0=".into(),
            media_type: "application/pdf".into(),
            filename: Some("a.pdf".into()),
        },
        ContentPart::FileId {
            file_id: "file-1".into(),
        },
        ContentPart::ImageFileId {
            file_id: "file-2".into(),
        },
    ];
    let outcome = tool_runtime::CallOutcome::from(tool_core::Outcome::Completed {
        output: json!("done"),
        model_output: Some(ModelOutput::Content(parts)),
        state: None,
    });
    let chat = serde_json::to_value(openai::chat_tool_message("c1", &outcome)).unwrap();
    assert_eq!(chat, Provider::OpenAiChat.tool_result("c1", "", &outcome));
    let responses = serde_json::to_value(openai::function_call_output("c1", &outcome)).unwrap();
    assert_eq!(
        responses,
        Provider::OpenAiResponses.tool_result("c1", "", &outcome)
    );
}
