//! Use [`tool_core`] tools in [rig](https://docs.rs/rig-core) agents: a
//! [`Runtime`]'s tools become rig-core [`DynamicTool`]s, and every call the
//! agent makes goes through the runtime ([`Runtime::call`]), with its
//! validation, hooks, approval gate, suspension, store and events.
//!
//! Use it when your agent is a rig agent and you want tools declared with
//! `#[tool]` (or a runtime's dynamic tools) in it, with the runtime's
//! guarantees; for the loop of this workspace use `tool-agent` instead.
//!
//! Supported: rig-core and rig-agent 0.44 (0.45 and later need a newer rustc
//! than this workspace's 1.95).
//!
//! What the model reads, per [`CallOutcome`]:
//!
//! | outcome | rig tool result | model reads |
//! | --- | --- | --- |
//! | completed | success | the model-facing output ([`CallOutcome::to_model_value`]: a string as text, other values as JSON) |
//! | failed (invalid JSON, validation, execution…) | error ([`ToolErrorKind::InvalidArgs`] for bad arguments) | the error object, with the messages the model can correct itself with |
//! | approval required / suspended | error ([`ToolErrorKind::Other`]) | that the call is pending, its call id, and how the application approves or resumes it ([`CallOutcome::pending_notice`], as the MCP server says it); the call stays in the runtime's store |
//! | aborted / background started | error ([`ToolErrorKind::Cancelled`]) / success | the runtime's model text |
//!
//! The model's own tool-call id does not reach a rig tool, so each call gets
//! a call id of its own, `rig-` and a UUID: the one the pending notice
//! names, [`CallInbox::waiting`](tool_runtime::CallInbox::waiting) lists and events carry. Rig's tool
//! definitions have no annotations, so the tools' MCP hints are not passed on.
//!
//! ```
//! use rig_agent::AgentBuilder;
//! use rig_core::test_utils::{MockCompletionModel, MockTurn};
//! use serde_json::json;
//! use tool_core::{Tool, ToolError};
//! use tool_runtime::Runtime;
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let weather = Tool::builder("weather")
//!     .description("Current weather in a city")
//!     .input_schema(json!({
//!         "type": "object",
//!         "properties": { "city": { "type": "string" } },
//!         "required": ["city"]
//!     }))
//!     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "city": input["city"], "celsius": 21 })) })
//!     .build()
//!     .unwrap();
//! let runtime = Runtime::builder().tool(weather).build().unwrap();
//!
//! // Any rig model; this one is scripted (use a provider's in an application).
//! let model = MockCompletionModel::from_turns([
//!     MockTurn::tool_call("call_1", "weather", json!({ "city": "Paris" })),
//!     MockTurn::text("21 °C in Paris."),
//! ]);
//! let agent = AgentBuilder::new(model)
//!     .dynamic_tools(tool_rig::dynamic_tools(&runtime))
//!     .build();
//! let answer = agent.prompt("Weather in Paris?").max_turns(3).await.unwrap();
//! assert_eq!(answer.output(), "21 °C in Paris.");
//! # });
//! ```

use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolErrorKind, ToolExecutionError, ToolOutput};
use serde_json::Value;
use tool_core::{ErrorKind, Tool};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

/// Why a rig agent's pending call was not asked about, in the model's notice.
const NOT_ASKED: &str = "the agent cannot ask the user";

/// Every tool of `runtime` as a rig [`DynamicTool`] calling through the
/// runtime (see [`dynamic_tool`]), in the runtime's order.
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::Runtime;
///
/// let echo = Tool::builder("echo")
///     .description("Echo the input")
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
/// let runtime = Runtime::builder().tool(echo).build().unwrap();
/// let tools = tool_rig::dynamic_tools(&runtime);
/// assert_eq!(tools[0].name(), "echo");
/// assert_eq!(tools[0].definition().description, "Echo the input");
/// ```
pub fn dynamic_tools(runtime: &Runtime) -> Vec<DynamicTool> {
    runtime
        .tools()
        .iter()
        .map(|tool| rig_tool(runtime, tool))
        .collect()
}

/// The tool `tool_id` of `runtime` as a rig [`DynamicTool`], or `None` when
/// the runtime has no such tool: its id, description and input schema, and
/// a callback that runs each call with [`Runtime::call`] and turns the
/// outcome into what the model reads (see the [crate] docs).
///
/// ```
/// use rig_core::tool::ToolErrorKind;
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::Runtime;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let add = Tool::builder("add")
///     .description("Add two integers")
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
///         "required": ["a", "b"]
///     }))
///     .execute(|input, _ctx| async move {
///         Ok::<_, ToolError>(json!(input["a"].as_i64().unwrap() + input["b"].as_i64().unwrap()))
///     })
///     .build()
///     .unwrap();
/// let runtime = Runtime::builder().tool(add).build().unwrap();
/// let add = tool_rig::dynamic_tool(&runtime, "add").unwrap();
///
/// let sum = add.execute(json!({ "a": 2, "b": 3 })).await.unwrap();
/// assert_eq!(sum.as_json(), Some(&json!(5)));
///
/// let error = add.execute(json!({ "a": 2 })).await.unwrap_err();
/// assert_eq!(error.kind(), ToolErrorKind::InvalidArgs);
/// let told = error.model_output().as_json().unwrap();
/// assert_eq!(told["validationErrors"]["fields"]["b"]["errors"][0], "Required");
/// # });
/// ```
pub fn dynamic_tool(runtime: &Runtime, tool_id: &str) -> Option<DynamicTool> {
    runtime.tool(tool_id).map(|tool| rig_tool(runtime, tool))
}

fn rig_tool(runtime: &Runtime, tool: &Tool) -> DynamicTool {
    let definition = tool.definition();
    let name = ToolName::new(tool.id()).expect("tool ids are never empty");
    let (runtime, tool_id) = (runtime.clone(), tool.id().to_owned());
    DynamicTool::new(
        name,
        definition.description.clone(),
        definition.input_schema.clone(),
        move |arguments: Value| {
            let call_id = format!("rig-{}", uuid::Uuid::new_v4());
            let tool_id = tool_id.clone();
            let outcome = runtime.call(ToolCall::new(call_id, tool_id.clone(), arguments));
            Box::pin(async move { tool_result(&tool_id, outcome.await) })
        },
    )
}

/// What the model reads of `outcome`: output on success, the model-facing
/// error or the pending notice otherwise.
fn tool_result(tool_id: &str, outcome: CallOutcome) -> Result<ToolOutput, ToolExecutionError> {
    let model_value = outcome.to_model_value();
    let error_kind = match &outcome {
        CallOutcome::Failed { error } => match error.kind() {
            ErrorKind::InvalidJson | ErrorKind::InputValidation => ToolErrorKind::InvalidArgs,
            ErrorKind::UnknownTool => ToolErrorKind::NotFound,
            _ => ToolErrorKind::Other,
        },
        CallOutcome::ApprovalRequired { .. } | CallOutcome::Suspended { .. } => {
            let notice = outcome
                .pending_notice(tool_id, NOT_ASKED)
                .expect("a pending outcome has a notice");
            return Err(
                ToolExecutionError::new(ToolErrorKind::Other, notice.clone())
                    .with_model_output(ToolOutput::text(notice)),
            );
        }
        CallOutcome::Aborted => ToolErrorKind::Cancelled,
        _ => return Ok(tool_output(model_value)),
    };
    let message = outcome.error().map_or_else(
        || model_value.to_string(),
        |error| error.message().to_owned(),
    );
    Err(ToolExecutionError::new(error_kind, message).with_model_output(tool_output(model_value)))
}

/// A string as text, any other value as JSON.
fn tool_output(value: Value) -> ToolOutput {
    match value {
        Value::String(text) => ToolOutput::text(text),
        other => ToolOutput::json(other),
    }
}
