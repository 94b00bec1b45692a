//! What an [`Agent`](super::Agent) asks of a model: the [`Model`] trait, the
//! provider-neutral conversation ([`Message`]) and the streamed events a
//! model answers with ([`ModelEvent`]).

use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::ModelOutput;
use tool_core::decode::{DecodeError, ToolCallEvent};
use tool_core::provider::{Provider, ToolResultBody};

/// One message of a conversation, in no provider's format: each [`Model`]
/// writes it in its own.
///
/// ```
/// use serde_json::json;
/// use tool_agent::{Message, ToolCallRequest};
///
/// let conversation = vec![
///     Message::user("What's the weather in Rome?"),
///     Message::Assistant {
///         text: String::new(),
///         tool_calls: vec![ToolCallRequest { call_id: "call_1".into(), tool_name: "weather".into(), arguments: json!({ "city": "Rome" }) }],
///     },
///     Message::ToolResult { call_id: "call_1".into(), tool_name: "weather".into(), result: json!({ "sky": "clear" }), model_output: None, is_error: false },
/// ];
/// assert_eq!(serde_json::to_value(&conversation[0]).unwrap(), json!({ "role": "user", "text": "What's the weather in Rome?" }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The user's text.
    User {
        /// What the user wrote.
        text: String,
    },
    /// What the model answered in one step: text, tool calls, or both.
    Assistant {
        /// Its text (empty when it only called tools).
        text: String,
        /// The tool calls it made, in order.
        tool_calls: Vec<ToolCallRequest>,
    },
    /// The result of one tool call. The model reads its `model_output`
    /// when the tool maps its output (`to_model_output`), else its
    /// `result`, in the provider's richest form (images and files where the
    /// provider takes them: [`Provider::media_limits`]).
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The tool that was called.
        tool_name: String,
        /// The tool's raw output; for a call that failed, was declined or
        /// aborted, what the model is told of it. (Runs stored before this
        /// field was added kept it as `content`.)
        #[serde(alias = "content")]
        result: Value,
        /// What the model reads instead of `result`, when the tool maps its
        /// output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_output: Option<ModelOutput>,
        /// Whether the call failed (or was declined).
        is_error: bool,
    },
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User { text: text.into() }
    }
}

/// What the model reads of a tool result message, before its provider's
/// shape is applied.
pub(crate) fn tool_result_body<'a>(
    result: &'a Value,
    model_output: Option<&'a ModelOutput>,
    is_error: bool,
) -> ToolResultBody<'a> {
    match (is_error, model_output) {
        (true, _) => ToolResultBody::Error(result),
        (false, Some(model_output)) => ToolResultBody::ModelOutput(model_output),
        (false, None) => ToolResultBody::Output(result),
    }
}

/// A tool call as the model made it (its arguments in the provider's shape,
/// as it sent them, so the conversation replays exactly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The provider's call id.
    pub call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments, as the model wrote them.
    pub arguments: Value,
}

/// One step's request to a model.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The system instructions (with the pending suspensions appended, when
    /// the agent auto-resumes).
    pub instructions: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools' definitions, exported for the model's
    /// [`provider`](Model::provider) (strict where it supports it).
    pub tools: Vec<Value>,
    /// The most tokens the answer may take, if limited.
    pub max_tokens: Option<u32>,
    /// HTTP headers sent with this request only (after the model's own,
    /// replacing one of the same name): an HTTP model sends them, another
    /// model may ignore them.
    pub headers: Vec<(String, String)>,
}

impl ModelRequest {
    /// A request with these parts.
    pub fn new(instructions: impl Into<String>, messages: Vec<Message>, tools: Vec<Value>) -> Self {
        ModelRequest {
            instructions: instructions.into(),
            messages,
            tools,
            max_tokens: None,
            headers: Vec::new(),
        }
    }

    /// Sends the HTTP header `name: value` with this request (an HTTP
    /// model's; it replaces the model's header of that name).
    ///
    /// ```
    /// use tool_agent::{Message, ModelRequest};
    ///
    /// let request = ModelRequest::new("Be brief.", vec![Message::user("Hi")], vec![])
    ///     .header("anthropic-beta", "files-api-2025-04-14");
    /// assert_eq!(request.headers, [("anthropic-beta".to_owned(), "files-api-2025-04-14".to_owned())]);
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// Why a model's answer ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelFinish {
    /// It finished its answer.
    Stop,
    /// It called tools and waits for their results.
    ToolCalls,
    /// It ran out of tokens.
    Length,
    /// Anything else the provider said.
    Other(String),
    /// It refused to answer (OpenAI's `refusal`, Anthropic's
    /// `stop_reason: "refusal"`); the refusal's text came as
    /// [`ModelEvent::TextDelta`].
    Refusal,
    /// A content filter stopped its answer (OpenAI's `content_filter`).
    ContentFilter,
    /// The provider paused a long turn (Anthropic's `pause_turn`).
    PauseTurn,
}

/// One event of a model's streamed answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// A piece of its text.
    TextDelta(String),
    /// A tool call's start, argument fragment, end or cut-off, as the
    /// provider decoders report them (arguments in the provider's shape).
    ToolCall(ToolCallEvent),
    /// The tokens the answer took so far, as the provider counts them
    /// (a later report replaces an earlier one of the same answer).
    Usage(Usage),
    /// The answer ended (the last event).
    Finish(ModelFinish),
}

/// The tokens a model's answer took, as its provider reports them
/// (Chat's `usage`, which the request asks for with
/// `stream_options.include_usage`; Responses' `response.usage`; Anthropic's
/// `message_start` and `message_delta` usage). Kinds a provider does not
/// report are 0.
///
/// ```
/// use tool_agent::Usage;
///
/// let step = Usage { input_tokens: 120, output_tokens: 30, ..Usage::default() };
/// let total = step + Usage { input_tokens: 200, output_tokens: 12, cached_input_tokens: 100, ..Usage::default() };
/// assert_eq!((total.input_tokens, total.output_tokens, total.cached_input_tokens), (320, 42, 100));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read: the prompt, cached or not.
    pub input_tokens: u64,
    /// Tokens written, reasoning included.
    pub output_tokens: u64,
    /// Of the input, tokens read from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Of the output, reasoning tokens.
    pub reasoning_tokens: u64,
}

impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            cached_input_tokens: self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens: self.reasoning_tokens + other.reasoning_tokens,
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

/// A model's streamed answer.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelCallError>> + Send>>;

/// A chat model: the agent calls [`stream`](Self::stream) once per step.
/// The HTTP models of this module implement it for OpenAI Chat Completions,
/// OpenAI Responses and Anthropic Messages; implement it to bring another
/// provider (or a scripted model, for tests).
///
/// ```
/// use futures_util::stream;
/// use tool_core::provider::Provider;
/// use tool_agent::{Model, ModelEvent, ModelFinish, ModelRequest, ModelStream};
///
/// /// Always answers "hello".
/// struct Hello;
///
/// impl Model for Hello {
///     fn provider(&self) -> Provider {
///         Provider::OpenAiChat
///     }
///     fn stream(&self, _request: ModelRequest) -> ModelStream {
///         Box::pin(stream::iter([
///             Ok(ModelEvent::TextDelta("hello".into())),
///             Ok(ModelEvent::Finish(ModelFinish::Stop)),
///         ]))
///     }
/// }
/// ```
pub trait Model: Send + Sync + 'static {
    /// The provider whose tool format the model takes: the agent exports the
    /// tools for it and maps strict-mode arguments back with it.
    fn provider(&self) -> Provider;

    /// Starts the model's answer to `request`. A failure to start (no API
    /// key, a refused request) is the stream's first and only item.
    fn stream(&self, request: ModelRequest) -> ModelStream;
}

/// A boxed model is a model (a model chosen at run time, `Box<dyn Model>`).
impl<M: Model + ?Sized> Model for Box<M> {
    fn provider(&self) -> Provider {
        (**self).provider()
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        (**self).stream(request)
    }
}

/// A shared model is a model (one model for several agents).
impl<M: Model + ?Sized> Model for std::sync::Arc<M> {
    fn provider(&self) -> Provider {
        (**self).provider()
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        (**self).stream(request)
    }
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelCallError {
    /// No API key was given, nor found in the environment.
    #[error("no API key for {provider}: set {env} or give one to the model's builder")]
    MissingApiKey {
        /// The provider.
        provider: Provider,
        /// The environment variable read.
        env: &'static str,
    },
    /// The provider answered with an error status (after the retries, for
    /// the statuses that are retried: 408, 409, 429, 5xx, or as
    /// `x-should-retry` says).
    #[error("{provider} answered HTTP {status}: {message}")]
    Status {
        /// The provider.
        provider: Provider,
        /// The HTTP status.
        status: u16,
        /// The provider's error message (cut to 500 characters).
        message: String,
    },
    /// The request did not reach the provider (an answer that began and
    /// broke off is [`StreamEnded`](Self::StreamEnded)).
    #[error("{provider} could not be reached: {reason}")]
    Transport {
        /// The provider.
        provider: Provider,
        /// What went wrong.
        reason: String,
        /// The HTTP client's error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The provider's answer began but its stream ended early: closed
    /// before the provider's last event, or broken off.
    #[error("{provider}'s answer ended early: {reason}")]
    StreamEnded {
        /// The provider.
        provider: Provider,
        /// What happened.
        reason: String,
        /// The HTTP client's error, when the stream broke off.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// No answer within the model's timeout.
    #[error("{provider} did not answer within {after:?}")]
    Timeout {
        /// The provider.
        provider: Provider,
        /// The timeout.
        after: Duration,
    },
    /// The provider's stream could not be decoded, or reported an error.
    #[error("{provider} stream: {source}")]
    Decode {
        /// The provider.
        provider: Provider,
        /// The decoding error.
        #[source]
        source: DecodeError,
    },
    /// Another failure, from a model of the user's.
    #[error("{0}")]
    Other(String),
}
