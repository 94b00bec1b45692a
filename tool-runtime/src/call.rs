//! What a caller (an agent loop, an MCP server) asks the runtime to run.

use std::time::Duration;

use serde_json::Value;
use tool_core::{Extensions, RawInput, RequestContext};

/// One tool call from a model: its id, the tool's id, the arguments, and
/// the request's context.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use tool_core::RequestContext;
/// use tool_runtime::ToolCall;
///
/// let call = ToolCall::new("call-1", "weather-tool", r#"{"location": "Paris"}"#)
///     .with_request_context(RequestContext::new().with("userId", "u-1"))
///     .with_messages(vec![json!({ "role": "user", "content": "weather in Paris?" })])
///     .with_timeout(Duration::from_secs(30));
/// assert_eq!(call.tool_id, "weather-tool");
/// ```
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The call's id, as the model or provider gave it; keys approval and resume.
    pub call_id: String,
    /// The tool to run.
    pub tool_id: String,
    /// The arguments: the model's text, or a JSON value.
    pub input: RawInput,
    /// Per-request values, validated against the tool's request-context schema.
    pub request_context: RequestContext,
    /// The conversation so far, for hooks and the tool.
    pub messages: Vec<Value>,
    /// Time limit of this call; overrides the tool's and the runtime's.
    pub timeout: Option<Duration>,
    /// Typed values for the tool (what the transport offers it: MCP
    /// elicitation, say), read with `ToolContext::extension`.
    pub extensions: Extensions,
}

impl ToolCall {
    /// A call with an empty request context and no messages.
    pub fn new(
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        input: impl Into<RawInput>,
    ) -> Self {
        ToolCall {
            call_id: call_id.into(),
            tool_id: tool_id.into(),
            input: input.into(),
            request_context: RequestContext::default(),
            messages: Vec::new(),
            timeout: None,
            extensions: Extensions::new(),
        }
    }

    /// Sets the request context.
    #[must_use]
    pub fn with_request_context(mut self, request_context: RequestContext) -> Self {
        self.request_context = request_context;
        self
    }

    /// Sets the conversation so far.
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<Value>) -> Self {
        self.messages = messages;
        self
    }

    /// Attaches a typed value for the tool (`ToolContext::extension`),
    /// replacing one of the same type. The MCP server attaches its
    /// `McpContext` this way for clients that can be asked for input.
    #[must_use]
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Sets this call's time limit; when it passes, the tool's abort signal
    /// fires and the call ends as `Outcome::Aborted`.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}
