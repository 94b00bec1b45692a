//! Decoded tool-call events turned into runtime calls, written once for
//! every driver of a model's stream ([`ProviderStream`](crate::ProviderStream),
//! an agent loop): [`ToolCallAssembler`].

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use tool_core::decode::ToolCallEvent;
use tool_core::provider::{Export, Provider};
use tool_core::{ErrorKind, ModelError};

use crate::call::CallHead;
use crate::runtime::Runtime;
use crate::stream::InputStream;

/// Shapes the envelope of each call before it begins.
type ShapeHead = Arc<dyn Fn(CallHead) -> CallHead + Send + Sync>;

/// Turns the tool-call events a provider's decoder produces into runtime
/// calls: a start [`begin`](Runtime::begin_call)s the call (its input hooks
/// fire while the model still writes), each fragment is
/// [`push`](InputStream::push)ed, the complete arguments are restored from
/// the provider's rewritten schema (strict mode) to the tool's own, and a
/// call cut off before its arguments ended becomes the failure the model
/// reads, without running. The caller decides when a complete call runs
/// (`InputStream::finish_with` the restored input).
///
/// ```
/// use serde_json::json;
/// use tool_core::decode::ToolCallEvent;
/// use tool_core::provider::{Export, Provider};
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::{Assembled, Runtime, ToolCallAssembler};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let weather = Tool::builder("weather").description("Weather for a city")
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "at": input["city"] })) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(weather).build().unwrap();
/// let mut calls = ToolCallAssembler::new(&runtime, Provider::OpenAiChat)
///     .with_head(|head| head.with_requester("user:ada"));
///
/// calls.apply(ToolCallEvent::Start { call_id: "c1".into(), tool_name: "weather".into() });
/// calls.apply(ToolCallEvent::InputDelta { call_id: "c1".into(), delta: r#"{"city":"Paris"}"#.into() });
/// let end = ToolCallEvent::InputEnd { call_id: "c1".into(), input: json!({ "city": "Paris" }) };
/// let Some(Assembled::Complete(call)) = calls.apply(end) else { panic!("a complete call") };
/// assert_eq!(call.arguments, json!({ "city": "Paris" }));
/// let outcome = call.stream.finish_with(call.input).await;
/// assert_eq!(outcome.output(), Some(&json!({ "at": "Paris" })));
/// # });
/// ```
pub struct ToolCallAssembler {
    runtime: Runtime,
    provider: Provider,
    messages: Vec<Value>,
    shape: Option<ShapeHead>,
    /// The exports the model was offered, when they are not the tools' own.
    exports: Option<Arc<BTreeMap<String, Export>>>,
    /// The calls whose arguments stream, by the provider's call id.
    open: HashMap<String, InputStream>,
}

/// What one decoded event did to the calls of a response.
#[derive(Debug)]
#[non_exhaustive]
pub enum Assembled {
    /// A call's arguments started streaming.
    Started {
        /// The provider's call id.
        call_id: String,
        /// The tool the model called.
        tool_id: String,
    },
    /// A fragment of a call's arguments arrived (already pushed).
    Delta {
        /// The provider's call id.
        call_id: String,
        /// The tool the model called.
        tool_id: String,
        /// The fragment.
        delta: String,
    },
    /// A call's arguments are complete; it has not run.
    Complete(Box<CompleteCall>),
    /// A call was cut off before its arguments were complete: it never
    /// runs, and `error` (`ErrorKind::InvalidJson`, saying what was cut off)
    /// is what the model reads.
    CutOff {
        /// The provider's call id.
        call_id: String,
        /// The tool the model called.
        tool_id: String,
        /// The arguments' text as far as it arrived.
        partial_text: String,
        /// The failure.
        error: ModelError,
    },
}

/// A call whose arguments are complete, ready to run with
/// `stream.finish_with(input)`.
#[derive(Debug)]
#[non_exhaustive]
pub struct CompleteCall {
    /// The provider's call id.
    pub call_id: String,
    /// The tool the model called.
    pub tool_id: String,
    /// The arguments as the model wrote them (the provider's schema).
    pub arguments: Value,
    /// The arguments restored to the tool's own schema: what the call runs on.
    pub input: Value,
    /// The streaming call, its hooks fired up to the end of its input.
    pub stream: InputStream,
}

impl fmt::Debug for ToolCallAssembler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCallAssembler")
            .field("provider", &self.provider)
            .field("open", &self.open.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ToolCallAssembler {
    /// Assembles the calls of a response of `provider` to `runtime`'s tools.
    pub fn new(runtime: &Runtime, provider: Provider) -> Self {
        ToolCallAssembler {
            runtime: runtime.clone(),
            provider,
            messages: Vec::new(),
            shape: None,
            exports: None,
            open: HashMap::new(),
        }
    }

    /// The conversation so far, given to the hooks and the tools.
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<Value>) -> Self {
        self.messages = messages;
        self
    }

    /// Shapes each call's envelope before it begins (its hooks see the
    /// result): an agent names its calls after its run and attaches its
    /// context, an application says who asked.
    #[must_use]
    pub fn with_head(
        mut self,
        shape: impl Fn(CallHead) -> CallHead + Send + Sync + 'static,
    ) -> Self {
        self.shape = Some(Arc::new(shape));
        self
    }

    /// The exports the model was offered, by tool id, when they are not the
    /// tools' own (`Tool::export`): an agent that adds fields to a tool's
    /// schema restores arguments through its own export.
    #[must_use]
    pub fn with_exports(mut self, exports: Arc<BTreeMap<String, Export>>) -> Self {
        self.exports = Some(exports);
        self
    }

    /// The best-effort arguments of the open call `call_id`.
    pub fn partial(&self, call_id: &str) -> Option<&Value> {
        self.open.get(call_id).and_then(InputStream::partial)
    }

    /// Applies one decoded event; `None` for a fragment or end of a call
    /// that is not open (never started, or already complete).
    pub fn apply(&mut self, event: ToolCallEvent) -> Option<Assembled> {
        match event {
            ToolCallEvent::Start { call_id, tool_name } => {
                let head = CallHead::new(call_id.as_str(), tool_name.as_str())
                    .with_messages(self.messages.clone());
                let head = match &self.shape {
                    Some(shape) => shape(head),
                    None => head,
                };
                self.open
                    .insert(call_id.clone(), self.runtime.begin_call(head));
                Some(Assembled::Started {
                    call_id,
                    tool_id: tool_name,
                })
            }
            ToolCallEvent::InputDelta { call_id, delta } => {
                let stream = self.open.get_mut(&call_id)?;
                stream.push(&delta);
                Some(Assembled::Delta {
                    tool_id: stream.tool_id().to_owned(),
                    call_id,
                    delta,
                })
            }
            ToolCallEvent::InputEnd { call_id, input } => {
                let stream = self.open.remove(&call_id)?;
                let tool_id = stream.tool_id().to_owned();
                let mut restored = input.clone();
                let export = match &self.exports {
                    Some(exports) => exports.get(&tool_id),
                    None => self
                        .runtime
                        .tool(&tool_id)
                        .and_then(|tool| tool.export(self.provider).ok()),
                };
                if let Some(export) = export {
                    export.restore_value(&mut restored);
                }
                Some(Assembled::Complete(Box::new(CompleteCall {
                    call_id,
                    tool_id,
                    arguments: input,
                    input: restored,
                    stream,
                })))
            }
            ToolCallEvent::Incomplete {
                call_id,
                tool_name,
                partial_text,
                reason,
            } => {
                self.open.remove(&call_id);
                // Both from the provider's stream: quoted as excerpts.
                let message = format!(
                    "Tool call {} to {} was cut off before its arguments were complete ({reason}); it did not run.",
                    tool_core::Excerpt::of(&call_id),
                    tool_core::Excerpt::of(&tool_name)
                );
                Some(Assembled::CutOff {
                    call_id,
                    tool_id: tool_name,
                    partial_text,
                    error: ModelError::new(ErrorKind::InvalidJson, message),
                })
            }
        }
    }
}
