//! Tools, tool calls and tool results as [async-openai](https://docs.rs/async-openai)'s
//! request types (0.43, its `chat-completion-types` and `response-types`
//! only): for a loop hand-rolled on async-openai, with the runtime running
//! the calls.
//!
//! | | Chat Completions | Responses |
//! | --- | --- | --- |
//! | a tool's definition | [`chat_completion_tool`] → `ChatCompletionTools` | [`responses_tool`] → `responses::Tool` |
//! | the model's call → a [`ToolCall`] | [`chat_tool_call`] from `ChatCompletionMessageToolCall` | [`responses_tool_call`] from `FunctionToolCall` |
//! | the outcome → the next request's input | [`chat_tool_message`] → `ChatCompletionRequestMessage::Tool` | [`function_call_output`] → `InputItem` (`function_call_output`) |
//!
//! Each value is the one `tool_core::provider` builds (the tool's
//! [`Export`](tool_core::provider::Export), [`Provider::tool_result`]) in
//! async-openai's type: it serializes to the same JSON. Calls get their
//! arguments restored to the tool's schema (strict mode's `null` for a
//! field not given: [`ProviderTools::restore_input`]).
//!
//! ```
//! use async_openai::types::chat::{ChatCompletionMessageToolCall, FunctionCall};
//! use serde_json::json;
//! use tool_core::provider::{Provider, ProviderTools};
//! use tool_core::{Tool, ToolError};
//! use tool_runtime::{Runtime, openai};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let search = Tool::builder("search")
//!     .description("Search the docs")
//!     .strict(true)
//!     .input_schema(json!({
//!         "type": "object",
//!         "properties": { "query": { "type": "string" }, "limit": { "type": "integer" } },
//!         "required": ["query"]
//!     }))
//!     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "hits": [], "query": input["query"] })) })
//!     .build()
//!     .unwrap();
//! let runtime = Runtime::builder().tool(search.clone()).build().unwrap();
//! let tools = ProviderTools::new(Provider::OpenAiChat, [search.clone()]).unwrap();
//!
//! // 1. The request's tools (`CreateChatCompletionRequestArgs::tools`).
//! let request_tools = vec![openai::chat_completion_tool(&search).unwrap()];
//! assert_eq!(serde_json::to_value(&request_tools).unwrap(), tools.request_tools());
//!
//! // 2. The model's call (from the response's `message.tool_calls`), run by the runtime.
//! let call = ChatCompletionMessageToolCall {
//!     id: "call_1".into(),
//!     function: FunctionCall { name: "search".into(), arguments: r#"{"query": "rig", "limit": null}"#.into() },
//! };
//! let outcome = runtime.call(openai::chat_tool_call(&tools, &call)).await;
//!
//! // 3. The tool message for the next request's `messages`.
//! let message = openai::chat_tool_message(&call.id, &outcome);
//! assert_eq!(
//!     serde_json::to_value(&message).unwrap(),
//!     json!({ "role": "tool", "tool_call_id": "call_1", "content": r#"{"hits":[],"query":"rig"}"# })
//! );
//! # });
//! ```

use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionRequestMessage, ChatCompletionTools,
};
use async_openai::types::responses::{self, FunctionToolCall, InputItem};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tool_core::Tool;
use tool_core::provider::{ExportError, Provider, ProviderTools};

use crate::{CallOutcome, ToolCall};

/// `tool` exported for Chat Completions ([`Provider::OpenAiChat`]) as
/// async-openai's `ChatCompletionTools::Function`, for the request's `tools`.
///
/// # Errors
///
/// The tool's [`ExportError`]: a schema strict mode cannot take, a name
/// OpenAI refuses, unusable provider options.
///
/// ```
/// use async_openai::types::chat::ChatCompletionTools;
/// use tool_core::{Tool, ToolError};
///
/// let ping = Tool::builder("ping")
///     .description("Ping")
///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .build()
///     .unwrap();
/// let ChatCompletionTools::Function(tool) = tool_runtime::openai::chat_completion_tool(&ping).unwrap() else {
///     unreachable!()
/// };
/// assert_eq!(tool.function.name, "ping");
/// ```
pub fn chat_completion_tool(tool: &Tool) -> Result<ChatCompletionTools, ExportError> {
    Ok(ours_as(tool.export(Provider::OpenAiChat)?.definition()))
}

/// `tool` exported for the Responses API ([`Provider::OpenAiResponses`]) as
/// async-openai's `responses::Tool::Function`, for the request's `tools`.
///
/// # Errors
///
/// As [`chat_completion_tool`].
///
/// ```
/// use async_openai::types::responses::Tool as ResponsesTool;
/// use tool_core::{Tool, ToolError};
///
/// let ping = Tool::builder("ping")
///     .description("Ping")
///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .build()
///     .unwrap();
/// let ResponsesTool::Function(tool) = tool_runtime::openai::responses_tool(&ping).unwrap() else {
///     unreachable!()
/// };
/// assert_eq!(tool.description.as_deref(), Some("Ping"));
/// ```
pub fn responses_tool(tool: &Tool) -> Result<responses::Tool, ExportError> {
    Ok(ours_as(
        tool.export(Provider::OpenAiResponses)?.definition(),
    ))
}

/// The runtime call for a Chat Completions tool call, its arguments
/// restored with `tools` ([`ProviderTools::restore_input`]); the call id is
/// the model's, as [`chat_tool_message`] answers it.
///
/// ```
/// use async_openai::types::chat::{ChatCompletionMessageToolCall, FunctionCall};
/// use serde_json::json;
/// use tool_core::provider::{Provider, ProviderTools};
/// use tool_core::{RawInput, Tool, ToolError};
///
/// let find = Tool::builder("find")
///     .description("Find")
///     .strict(true)
///     .input_schema(json!({ "type": "object", "properties": { "near": { "type": "string" } } }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
/// let tools = ProviderTools::new(Provider::OpenAiChat, [find]).unwrap();
/// let call = ChatCompletionMessageToolCall {
///     id: "call_7".into(),
///     function: FunctionCall { name: "find".into(), arguments: r#"{"near": null}"#.into() },
/// };
/// let call = tool_runtime::openai::chat_tool_call(&tools, &call);
/// assert_eq!((call.head.call_id.as_str(), call.head.tool_id.as_str()), ("call_7", "find"));
/// assert_eq!(call.input, RawInput::Json(json!({})));
/// ```
pub fn chat_tool_call(tools: &ProviderTools, call: &ChatCompletionMessageToolCall) -> ToolCall {
    let function = &call.function;
    let input = tools.restore_input(&function.name, function.arguments.as_str());
    ToolCall::new(&call.id, &function.name, input)
}

/// The runtime call for a Responses function call item (an `OutputItem::FunctionCall`
/// of the response), its arguments restored with `tools`; the call id is
/// the item's `call_id`, as [`function_call_output`] answers it.
///
/// ```
/// use async_openai::types::responses::FunctionToolCall;
/// use serde_json::json;
/// use tool_core::provider::{Provider, ProviderTools};
/// use tool_core::{RawInput, Tool, ToolError};
///
/// let find = Tool::builder("find")
///     .description("Find")
///     .strict(true)
///     .input_schema(json!({ "type": "object", "properties": { "near": { "type": "string" } } }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
/// let tools = ProviderTools::new(Provider::OpenAiResponses, [find]).unwrap();
/// let item = FunctionToolCall {
///     call_id: "call_7".into(),
///     name: "find".into(),
///     arguments: r#"{"near": "Lyon"}"#.into(),
///     ..Default::default()
/// };
/// let call = tool_runtime::openai::responses_tool_call(&tools, &item);
/// assert_eq!(call.head.call_id, "call_7");
/// assert_eq!(call.input, RawInput::Json(json!({ "near": "Lyon" })));
/// ```
pub fn responses_tool_call(tools: &ProviderTools, call: &FunctionToolCall) -> ToolCall {
    let input = tools.restore_input(&call.name, call.arguments.as_str());
    ToolCall::new(&call.call_id, &call.name, input)
}

/// The tool message answering call `call_id` with `outcome`
/// ([`Provider::tool_result`] for Chat Completions), for the next
/// request's `messages`.
///
/// ```
/// use async_openai::types::chat::{ChatCompletionRequestMessage, ChatCompletionRequestToolMessageContent};
/// use tool_runtime::CallOutcome;
///
/// let message = tool_runtime::openai::chat_tool_message("call_1", &CallOutcome::Declined { reason: None });
/// let ChatCompletionRequestMessage::Tool(message) = message else { unreachable!() };
/// assert_eq!(message.tool_call_id, "call_1");
/// assert_eq!(
///     message.content,
///     ChatCompletionRequestToolMessageContent::Text("Tool call was not approved by the user".into())
/// );
/// ```
pub fn chat_tool_message(call_id: &str, outcome: &CallOutcome) -> ChatCompletionRequestMessage {
    ours_as(&Provider::OpenAiChat.tool_result(call_id, "", outcome))
}

/// The `function_call_output` input item answering call `call_id` with
/// `outcome` ([`Provider::tool_result`] for the Responses API), for the
/// next request's `input`.
///
/// ```
/// use async_openai::types::responses::{FunctionCallOutput, InputItem, Item};
/// use serde_json::json;
/// use tool_runtime::CallOutcome;
///
/// let outcome = CallOutcome::from(tool_core::Outcome::Completed { output: json!("done"), model_output: None, state: None });
/// let InputItem::Item(Item::FunctionCallOutput(item)) = tool_runtime::openai::function_call_output("call_1", &outcome) else {
///     unreachable!()
/// };
/// assert_eq!(item.call_id.as_deref(), Some("call_1"));
/// assert_eq!(item.output, FunctionCallOutput::Text("done".into()));
/// ```
pub fn function_call_output(call_id: &str, outcome: &CallOutcome) -> InputItem {
    ours_as(&Provider::OpenAiResponses.tool_result(call_id, "", outcome))
}

/// One of our OpenAI values (a definition, a tool result) as async-openai's
/// type for it. They are OpenAI's shapes, which async-openai models; the
/// tests check each kind of value both ways.
fn ours_as<T: DeserializeOwned>(value: &Value) -> T {
    T::deserialize(value).unwrap_or_else(|error| {
        panic!("async-openai cannot read an OpenAI value tool-core built ({error}): {value}")
    })
}
