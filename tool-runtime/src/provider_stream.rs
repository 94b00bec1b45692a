//! A provider's streamed response driving the runtime's streaming input:
//! decoded tool-call starts, argument deltas and ends become `begin`,
//! `push` and `finish`, so the lifecycle hooks fire in order while the model
//! is still writing.

use serde_json::Value;
use tool_core::decode::{DecodeError, SseParser, StreamDecoder, ToolCallEvent};
use tool_core::provider::Provider;

use crate::assembler::{Assembled, ToolCallAssembler};
use crate::call_outcome::CallOutcome;
use crate::runtime::Runtime;

/// One tool call of a streamed response, finished.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedCall {
    /// The provider's call id.
    pub call_id: String,
    /// The tool the model called.
    pub tool_id: String,
    /// How the call ended; a call cut off mid-arguments is `Failed` and never ran.
    pub outcome: CallOutcome,
}

/// What one piece of a streamed response produced: the calls that finished
/// in it, and the events that could not be decoded. A malformed event is
/// skipped and reported here; the events around it are still decoded, so no
/// finished call is lost to it.
///
/// ```
/// use tool_runtime::Pushed;
///
/// let pushed = Pushed::default();
/// assert!(pushed.calls.is_empty() && pushed.errors.is_empty());
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Pushed {
    /// The calls that finished (ran, or failed before running).
    pub calls: Vec<StreamedCall>,
    /// The events that could not be decoded, in order.
    pub errors: Vec<DecodeError>,
}

/// Feeds a provider's streamed response into a [`Runtime`]: each tool call
/// the model starts is [`Runtime::begin`]-ed, its argument fragments pushed
/// (hooks and events fire as they arrive, [`partial`](Self::partial) is
/// current), and when its arguments end they are mapped back from the
/// provider's schema (strict mode) and the call runs.
///
/// ```
/// use serde_json::json;
/// use tool_core::provider::Provider;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::{ProviderStream, Runtime};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let weather = Tool::builder("weather")
///     .description("Weather for a city")
///     .input_schema(json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "city": input["city"], "sky": "clear" })) })
///     .build()
///     .unwrap();
/// let runtime = Runtime::builder().tool(weather).build().unwrap();
///
/// let mut stream = ProviderStream::new(&runtime, Provider::Anthropic).unwrap();
/// let body = concat!(
///     "event: content_block_start\n",
///     r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}"#, "\n\n",
///     "event: content_block_delta\n",
///     r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}"#, "\n\n",
/// );
/// assert!(stream.push_sse(body).await.calls.is_empty());
/// assert_eq!(stream.partial("toolu_1"), Some(&json!({ "city": "Pa" })));
///
/// let rest = concat!(
///     "event: content_block_delta\n",
///     r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}"#, "\n\n",
///     "event: content_block_stop\n",
///     r#"data: {"type":"content_block_stop","index":0}"#, "\n\n",
/// );
/// let done = stream.push_sse(rest).await;
/// assert!(done.errors.is_empty());
/// assert_eq!(done.calls[0].outcome.output(), Some(&json!({ "city": "Paris", "sky": "clear" })));
/// # });
/// ```
pub struct ProviderStream {
    decoder: Box<dyn StreamDecoder + Send>,
    sse: SseParser,
    calls: ToolCallAssembler,
}

impl std::fmt::Debug for ProviderStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderStream")
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl ProviderStream {
    /// Follows a response of `provider` (its tools exported from `runtime`'s).
    ///
    /// `None` for Gemini, which streams whole function calls rather than
    /// argument fragments: run those with [`Runtime::call`].
    pub fn new(runtime: &Runtime, provider: Provider) -> Option<Self> {
        Some(ProviderStream {
            decoder: provider.decoder()?,
            sse: SseParser::new(),
            calls: ToolCallAssembler::new(runtime, provider),
        })
    }

    /// The conversation so far, given to the hooks and the tools.
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<Value>) -> Self {
        self.calls = self.calls.with_messages(messages);
        self
    }

    /// The best-effort arguments of an open call.
    pub fn partial(&self, call_id: &str) -> Option<&Value> {
        self.calls.partial(call_id)
    }

    /// Feeds raw `text/event-stream` text (any split); returns the calls that
    /// finished in it and the events of it that could not be decoded.
    pub async fn push_sse(&mut self, chunk: &str) -> Pushed {
        let mut pushed = Pushed::default();
        for event in self.sse.push(chunk) {
            let decoded = self.decoder.decode_data(&event.data);
            self.take(decoded, &mut pushed).await;
        }
        pushed
    }

    /// Feeds one decoded event payload (a JSON `data` object).
    pub async fn push_event(&mut self, event: &Value) -> Pushed {
        let mut pushed = Pushed::default();
        let decoded = self.decoder.decode(event);
        self.take(decoded, &mut pushed).await;
        pushed
    }

    /// The response ended: a last buffered event is decoded, and calls whose
    /// arguments never completed end as failed (they never ran), also when
    /// the body was cut inside its last event.
    pub async fn finish(mut self) -> Pushed {
        let mut pushed = Pushed::default();
        if let Some(event) = self.sse.finish() {
            let decoded = self.decoder.decode_data(&event.data);
            self.take(decoded, &mut pushed).await;
        }
        let cut_off = self.decoder.finish();
        pushed.calls.extend(self.apply(cut_off).await);
        pushed
    }

    /// Applies one event's decoding: its calls, or its error.
    async fn take(
        &mut self,
        decoded: Result<Vec<ToolCallEvent>, DecodeError>,
        pushed: &mut Pushed,
    ) {
        match decoded {
            Ok(events) => pushed.calls.extend(self.apply(events).await),
            Err(error) => {
                tracing::warn!(%error, "skipped a stream event that could not be decoded");
                pushed.errors.push(error);
            }
        }
    }

    /// Runs the calls `events` complete; a call cut off is its failure.
    async fn apply(&mut self, events: Vec<ToolCallEvent>) -> Vec<StreamedCall> {
        let mut finished = Vec::new();
        for event in events {
            match self.calls.apply(event) {
                Some(Assembled::Complete(call)) => {
                    let call = *call;
                    finished.push(StreamedCall {
                        outcome: call.stream.finish_with(call.input).await,
                        call_id: call.call_id,
                        tool_id: call.tool_id,
                    });
                }
                Some(Assembled::CutOff {
                    call_id,
                    tool_id,
                    error,
                    ..
                }) => finished.push(StreamedCall {
                    call_id,
                    tool_id,
                    outcome: CallOutcome::Failed { error },
                }),
                _ => {}
            }
        }
        finished
    }
}
