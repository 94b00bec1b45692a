//! A [`Model`] whose answers are written as data: [`ScriptedModel`], a
//! list of [`ScriptedStep`]s, for tests, examples and demos that run
//! offline.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::stream;
use serde_json::Value;
use tool_core::decode::ToolCallEvent;
use tool_core::provider::Provider;

use crate::model::{
    Model, ModelCallError, ModelEvent, ModelFinish, ModelRequest, ModelStream, Usage,
};

/// A model that answers its n-th request with the n-th step of its script,
/// and records every request it was sent.
///
/// Steps count every request the model is sent, from 1: across runs, and
/// across the clones of the model (clones share the script and the record,
/// so an agent built on a clone plays the same script). A request past the
/// end of the script is recorded too, and its answer is an error naming the
/// step (`ModelCallError::Other`), never a panic. It takes tools in
/// [`Provider::OpenAiChat`]'s format unless told otherwise
/// ([`with_provider`](Self::with_provider)).
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::Runtime;
/// use tool_agent::{Agent, FinishReason, Message, ModelFinish, ScriptedModel, ScriptedStep, Thread};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([
///     ScriptedStep::new()
///         .text("Looking it up. ")
///         .tool_call("c1", "weather", json!({ "city": "Rome" }))
///         .finish(ModelFinish::ToolCalls),
///     ScriptedStep::answer("Sunny in Rome."),
/// ]);
/// let weather = Tool::builder("weather").description("The weather in a city")
///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!({ "sky": "clear" })) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(weather).build().unwrap();
/// let agent = Agent::builder("forecaster", model.clone(), runtime).build().unwrap();
///
/// let out = agent.generate(Thread::new("t1"), vec![Message::user("Rome?")]).await.unwrap();
/// assert_eq!((out.text.as_str(), out.finish_reason), ("Looking it up. Sunny in Rome.", FinishReason::Stop));
///
/// // What the model saw: its second request holds the tool's result.
/// let requests = model.requests();
/// assert_eq!(requests.len(), 2);
/// assert_eq!(
///     requests[1].messages.last(),
///     Some(&Message::ToolResult { call_id: "c1".into(), tool_name: "weather".into(), result: json!({ "sky": "clear" }), model_output: None, is_error: false }),
/// );
/// # });
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    provider: Provider,
    shared: Arc<Shared>,
}

/// What the clones of a model share.
struct Shared {
    steps: Vec<ScriptedStep>,
    /// Every request, in the order it came; its length is the next step's
    /// index.
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    /// A model that plays `steps`, one per request, in order.
    ///
    /// ```
    /// use tool_agent::{ScriptedModel, ScriptedStep};
    ///
    /// let model = ScriptedModel::new([ScriptedStep::answer("hello"), ScriptedStep::answer("again")]);
    /// assert_eq!(model.remaining(), 2);
    /// ```
    pub fn new(steps: impl IntoIterator<Item = ScriptedStep>) -> Self {
        ScriptedModel {
            provider: Provider::OpenAiChat,
            shared: Arc::new(Shared {
                steps: steps.into_iter().collect(),
                requests: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The provider whose tool format the model takes (the agent exports
    /// the tools for it, and reads the scripted calls' arguments in its
    /// shape); [`Provider::OpenAiChat`] by default.
    ///
    /// ```
    /// use tool_core::provider::Provider;
    /// use tool_agent::{Model, ScriptedModel, ScriptedStep};
    ///
    /// let model = ScriptedModel::new([ScriptedStep::answer("hi")]).with_provider(Provider::Anthropic);
    /// assert_eq!(model.provider(), Provider::Anthropic);
    /// ```
    pub fn with_provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// Every request the model was sent (by any of its clones), in order:
    /// the instructions, conversation and tools each step saw, as the
    /// [`Model`] trait received them.
    ///
    /// ```
    /// use futures_util::StreamExt as _;
    /// use tool_agent::{Message, Model, ModelRequest, ScriptedModel, ScriptedStep};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([ScriptedStep::answer("hi")]);
    /// let request = ModelRequest::new("Be brief", vec![Message::user("hello")], Vec::new());
    /// let _answer: Vec<_> = model.stream(request.clone()).collect().await;
    /// assert_eq!(model.requests(), [request]);
    /// # });
    /// ```
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.shared.record().clone()
    }

    /// How many steps of the script no request has played yet.
    ///
    /// ```
    /// use tool_agent::{Message, Model, ModelRequest, ScriptedModel, ScriptedStep};
    ///
    /// let model = ScriptedModel::new([ScriptedStep::answer("one"), ScriptedStep::answer("two")]);
    /// let _answer = model.stream(ModelRequest::new("", vec![Message::user("hi")], Vec::new()));
    /// assert_eq!(model.remaining(), 1);
    /// ```
    pub fn remaining(&self) -> usize {
        let played = self.shared.record().len();
        self.shared.steps.len().saturating_sub(played)
    }
}

impl Shared {
    /// The record of requests (a panic elsewhere while it was held does not
    /// lose it).
    fn record(&self) -> MutexGuard<'_, Vec<ModelRequest>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("provider", &self.provider)
            .field("steps", &self.shared.steps.len())
            .field("requests", &self.shared.record().len())
            .finish()
    }
}

/// Records the request and answers it with the next step, as soon as it is
/// called (the stream itself only replays the step).
impl Model for ScriptedModel {
    fn provider(&self) -> Provider {
        self.provider
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let step = {
            let mut record = self.shared.record();
            record.push(request);
            let number = record.len();
            match self.shared.steps.get(number - 1) {
                Some(step) => step.clone(),
                None => ScriptedStep::error(format!(
                    "scripted model has no step {number}: its script has {} step{}",
                    self.shared.steps.len(),
                    if self.shared.steps.len() == 1 {
                        ""
                    } else {
                        "s"
                    },
                )),
            }
        };
        Box::pin(stream::iter(step.into_items()))
    }
}

/// One answer of a [`ScriptedModel`]: what the model streams, in order.
///
/// Build it from [`new`](Self::new) (or the shorthands
/// [`answer`](Self::answer) and [`error`](Self::error)): text in as many
/// deltas as [`text`](Self::text) is called, tool calls whole
/// ([`tool_call`](Self::tool_call), [`tool_call_deltas`](Self::tool_call_deltas))
/// or cut off mid-arguments ([`cut_off_call`](Self::cut_off_call)), the
/// finish reason ([`finish`](Self::finish)), a failure that ends the answer
/// ([`fail`](Self::fail)), and any other [`ModelEvent`]
/// ([`event`](Self::event)). Nothing is added for you: a step without
/// `finish` ends without saying why, as a stream that just stops would.
///
/// ```
/// use serde_json::json;
/// use tool_agent::{ModelFinish, ScriptedStep};
///
/// // Text in two deltas, a call whose arguments stream in two pieces, and
/// // the reason the answer ended.
/// let step = ScriptedStep::new()
///     .text("Let me ")
///     .text("check. ")
///     .tool_call_deltas("c1", "weather", ["{\"city\": ", "\"Rome\"}"])
///     .finish(ModelFinish::ToolCalls);
/// assert_eq!(step.events().len(), 7);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct ScriptedStep {
    items: Vec<Item>,
}

/// One item a step streams.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Event(ModelEvent),
    /// `ModelCallError::Other` with this message (the error is not `Clone`).
    Fail(String),
}

impl ScriptedStep {
    /// A step that streams nothing yet.
    ///
    /// ```
    /// use tool_agent::ScriptedStep;
    ///
    /// assert!(ScriptedStep::new().events().is_empty());
    /// ```
    pub fn new() -> Self {
        ScriptedStep::default()
    }

    /// A step that answers `text` in one delta and stops
    /// ([`ModelFinish::Stop`]).
    ///
    /// ```
    /// use tool_agent::{ModelEvent, ModelFinish, ScriptedStep};
    ///
    /// assert_eq!(
    ///     ScriptedStep::answer("done").events(),
    ///     [ModelEvent::TextDelta("done".into()), ModelEvent::Finish(ModelFinish::Stop)],
    /// );
    /// ```
    pub fn answer(text: impl Into<String>) -> Self {
        ScriptedStep::new().text(text).finish(ModelFinish::Stop)
    }

    /// A step that fails at once: the model's stream is this error
    /// (`ModelCallError::Other(message)`) and nothing else, as a provider
    /// that refuses the request.
    ///
    /// ```
    /// use futures_util::StreamExt as _;
    /// use tool_agent::{Message, Model, ModelRequest, ScriptedModel, ScriptedStep};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([ScriptedStep::error("provider down")]);
    /// let answer: Vec<_> = model.stream(ModelRequest::new("", vec![Message::user("hi")], Vec::new())).collect().await;
    /// assert_eq!(answer.len(), 1);
    /// assert_eq!(answer[0].as_ref().unwrap_err().to_string(), "provider down");
    /// # });
    /// ```
    pub fn error(message: impl Into<String>) -> Self {
        ScriptedStep::new().fail(message)
    }

    /// Streams a piece of text ([`ModelEvent::TextDelta`]); call it again
    /// for the next delta.
    ///
    /// ```
    /// use tool_agent::{ModelEvent, ScriptedStep};
    ///
    /// let step = ScriptedStep::new().text("Hel").text("lo");
    /// assert_eq!(step.events(), [ModelEvent::TextDelta("Hel".into()), ModelEvent::TextDelta("lo".into())]);
    /// ```
    pub fn text(self, delta: impl Into<String>) -> Self {
        self.event(ModelEvent::TextDelta(delta.into()))
    }

    /// Streams a whole tool call: its start, its arguments' JSON text in one
    /// delta, and its end with `arguments` (in the shape of the model's
    /// provider, as the model writes them).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::decode::ToolCallEvent;
    /// use tool_agent::{ModelEvent, ScriptedStep};
    ///
    /// let step = ScriptedStep::new().tool_call("c1", "weather", json!({ "city": "Rome" }));
    /// assert_eq!(step.events(), [
    ///     ModelEvent::ToolCall(ToolCallEvent::Start { call_id: "c1".into(), tool_name: "weather".into() }),
    ///     ModelEvent::ToolCall(ToolCallEvent::InputDelta { call_id: "c1".into(), delta: r#"{"city":"Rome"}"#.into() }),
    ///     ModelEvent::ToolCall(ToolCallEvent::InputEnd { call_id: "c1".into(), input: json!({ "city": "Rome" }) }),
    /// ]);
    /// ```
    pub fn tool_call(
        self,
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        let text = arguments.to_string();
        let call_id = call_id.into();
        self.start(&call_id, tool_name.into())
            .argument_delta(&call_id, text)
            .event(ModelEvent::ToolCall(ToolCallEvent::InputEnd {
                call_id,
                input: arguments,
            }))
    }

    /// Streams a tool call whose arguments' JSON text comes in these
    /// `deltas`: its start, one [`InputDelta`](ToolCallEvent::InputDelta)
    /// per non-empty delta, then its end with the arguments parsed from
    /// them (`{}` when there are none). Text that does not parse ends the
    /// call as a provider's decoder would: incomplete, saying the arguments
    /// are not valid JSON (the call never runs).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::decode::ToolCallEvent;
    /// use tool_agent::{ModelEvent, ScriptedStep};
    ///
    /// let step = ScriptedStep::new().tool_call_deltas("c1", "transfer", ["{\"amount\": ", "10}"]);
    /// assert_eq!(
    ///     step.events().last(),
    ///     Some(&ModelEvent::ToolCall(ToolCallEvent::InputEnd { call_id: "c1".into(), input: json!({ "amount": 10 }) })),
    /// );
    ///
    /// let broken = ScriptedStep::new().tool_call_deltas("c2", "transfer", ["{oops}"]);
    /// assert!(matches!(
    ///     broken.events().last(),
    ///     Some(ModelEvent::ToolCall(ToolCallEvent::Incomplete { reason, .. })) if reason.starts_with("arguments are not valid JSON")
    /// ));
    /// ```
    pub fn tool_call_deltas<D: Into<String>>(
        self,
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        deltas: impl IntoIterator<Item = D>,
    ) -> Self {
        let (call_id, tool_name) = (call_id.into(), tool_name.into());
        let mut step = self.start(&call_id, tool_name.clone());
        let mut text = String::new();
        for delta in deltas {
            let delta = delta.into();
            text.push_str(&delta);
            step = step.argument_delta(&call_id, delta);
        }
        let end = if text.trim().is_empty() {
            Ok(Value::Object(serde_json::Map::new()))
        } else {
            serde_json::from_str(&text)
        };
        let event = match end {
            Ok(input) => ToolCallEvent::InputEnd { call_id, input },
            Err(error) => ToolCallEvent::Incomplete {
                call_id,
                tool_name,
                partial_text: text,
                reason: format!("arguments are not valid JSON: {error}"),
            },
        };
        step.event(ModelEvent::ToolCall(event))
    }

    /// Streams a tool call cut off mid-arguments, as a token limit cuts
    /// it: its start, the `partial_text` of its arguments (one delta, if
    /// any), then [`Incomplete`](ToolCallEvent::Incomplete). The call never
    /// runs; the model reads why in the next step. A step cut off by its
    /// token limit usually [`finish`](Self::finish)es with
    /// [`ModelFinish::Length`].
    ///
    /// ```
    /// use tool_core::decode::ToolCallEvent;
    /// use tool_agent::{ModelEvent, ModelFinish, ScriptedStep};
    ///
    /// let step = ScriptedStep::new().cut_off_call("c1", "transfer", "{\"amou").finish(ModelFinish::Length);
    /// assert!(matches!(
    ///     &step.events()[2],
    ///     ModelEvent::ToolCall(ToolCallEvent::Incomplete { partial_text, .. }) if partial_text == "{\"amou"
    /// ));
    /// ```
    pub fn cut_off_call(
        self,
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        partial_text: impl Into<String>,
    ) -> Self {
        let (call_id, tool_name, partial_text) =
            (call_id.into(), tool_name.into(), partial_text.into());
        self.start(&call_id, tool_name.clone())
            .argument_delta(&call_id, partial_text.clone())
            .event(ModelEvent::ToolCall(ToolCallEvent::Incomplete {
                call_id,
                tool_name,
                partial_text,
                reason: "the answer reached its token limit".into(),
            }))
    }

    /// Streams why the answer ended ([`ModelEvent::Finish`]): `Stop`,
    /// `ToolCalls` after calls, `Length` after a cut, `Refusal` after the
    /// refusal's text (as the HTTP models stream a refusal), or any other.
    ///
    /// ```
    /// use tool_agent::{ModelEvent, ModelFinish, ScriptedStep};
    ///
    /// let step = ScriptedStep::new().text("It is").finish(ModelFinish::Length);
    /// assert_eq!(step.events().last(), Some(&ModelEvent::Finish(ModelFinish::Length)));
    /// ```
    pub fn finish(self, reason: ModelFinish) -> Self {
        self.event(ModelEvent::Finish(reason))
    }

    /// Reports what the answer took ([`ModelEvent::Usage`]): the agent
    /// puts it in the step's `StepFinish` chunk and the run's total.
    ///
    /// ```
    /// use tool_agent::{ModelEvent, ModelFinish, ScriptedStep, Usage};
    ///
    /// let usage = Usage { input_tokens: 12, output_tokens: 3, ..Usage::default() };
    /// let step = ScriptedStep::new().text("Hi").usage(usage).finish(ModelFinish::Stop);
    /// assert_eq!(step.events()[1], ModelEvent::Usage(usage));
    /// ```
    pub fn usage(self, usage: Usage) -> Self {
        self.event(ModelEvent::Usage(usage))
    }

    /// Ends the answer with an error (`ModelCallError::Other(message)`), as
    /// a stream that breaks off: what the step streamed before it is
    /// streamed, nothing after it is.
    ///
    /// ```
    /// use futures_util::StreamExt as _;
    /// use tool_agent::{Message, Model, ModelEvent, ModelRequest, ScriptedModel, ScriptedStep};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([ScriptedStep::new().text("Let me").fail("connection reset").text(" never")]);
    /// let answer: Vec<_> = model.stream(ModelRequest::new("", vec![Message::user("hi")], Vec::new())).collect().await;
    /// assert_eq!(answer.len(), 2);
    /// assert!(matches!(&answer[0], Ok(ModelEvent::TextDelta(text)) if text == "Let me"));
    /// assert_eq!(answer[1].as_ref().unwrap_err().to_string(), "connection reset");
    /// # });
    /// ```
    pub fn fail(mut self, message: impl Into<String>) -> Self {
        self.items.push(Item::Fail(message.into()));
        self
    }

    /// Streams `event` as it is: a tool-call event of your own, or a kind
    /// the other methods do not write.
    ///
    /// ```
    /// use tool_core::decode::ToolCallEvent;
    /// use tool_agent::{ModelEvent, ScriptedStep};
    ///
    /// let start = ModelEvent::ToolCall(ToolCallEvent::Start { call_id: "c1".into(), tool_name: "lookup".into() });
    /// assert_eq!(ScriptedStep::new().event(start.clone()).events(), [start]);
    /// ```
    pub fn event(mut self, event: ModelEvent) -> Self {
        self.items.push(Item::Event(event));
        self
    }

    /// The events the step streams, in order, up to its failure if it
    /// fails (the failure itself is not an event).
    ///
    /// ```
    /// use tool_agent::{ModelEvent, ScriptedStep};
    ///
    /// let step = ScriptedStep::new().text("a").fail("down").text("b");
    /// assert_eq!(step.events(), [ModelEvent::TextDelta("a".into())]);
    /// ```
    pub fn events(&self) -> Vec<ModelEvent> {
        self.items
            .iter()
            .map_while(|item| match item {
                Item::Event(event) => Some(event.clone()),
                Item::Fail(_) => None,
            })
            .collect()
    }

    /// Streams the start of a call.
    fn start(self, call_id: &str, tool_name: String) -> Self {
        self.event(ModelEvent::ToolCall(ToolCallEvent::Start {
            call_id: call_id.to_owned(),
            tool_name,
        }))
    }

    /// Streams a fragment of a call's arguments (none when empty, as the
    /// decoders report them).
    fn argument_delta(self, call_id: &str, delta: String) -> Self {
        if delta.is_empty() {
            return self;
        }
        self.event(ModelEvent::ToolCall(ToolCallEvent::InputDelta {
            call_id: call_id.to_owned(),
            delta,
        }))
    }

    /// What the model's stream yields: the events up to and including the
    /// first failure.
    fn into_items(self) -> Vec<Result<ModelEvent, ModelCallError>> {
        let mut items = Vec::with_capacity(self.items.len());
        for item in self.items {
            match item {
                Item::Event(event) => items.push(Ok(event)),
                Item::Fail(message) => {
                    items.push(Err(ModelCallError::Other(message)));
                    break;
                }
            }
        }
        items
    }
}
