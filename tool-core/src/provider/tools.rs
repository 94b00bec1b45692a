//! [`ProviderTools`]: the tools of one request to one provider, from their
//! definitions to their results.

use std::collections::HashMap;
use std::future::Future;

use serde_json::{Value, json};

use super::Provider;
use super::anthropic::{AnthropicLimits, check_limits};
use super::error::ExportError;
use super::export::Export;
use crate::context::CallContext;
use crate::decode::ToolCallEvent;
use crate::input::RawInput;
use crate::outcome::{ModelFacing, Outcome};
use crate::tool::Tool;
use crate::toolset::ToolSet;

/// The tools of a request to one provider: their definitions for the request,
/// and the way back from the model's tool calls to the tools and from their
/// outcomes to tool-result messages.
///
/// Building it exports every tool (cached per tool), so every definition is
/// known good; two tools with one name, or (for Anthropic) more strict tools
/// or strict-schema complexity than a request may carry, are errors.
///
/// ```
/// use serde_json::json;
/// use tool_core::provider::{Provider, ProviderTools};
/// use tool_core::{CallContext, Tool, ToolError};
///
/// let echo = Tool::builder("echo")
///     .description("Echo the text")
///     .strict(true)
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "text": { "type": "string" }, "times": { "type": "integer" } },
///         "required": ["text"]
///     }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
/// let tools = ProviderTools::new(Provider::OpenAiChat, [echo]).unwrap();
///
/// // 1. Send the definitions.
/// let request = json!({ "model": "gpt-4.1", "messages": [], "tools": tools.request_tools() });
/// assert_eq!(request["tools"][0]["function"]["name"], "echo");
///
/// // 2. Run the call the model made (`null` is "not given" under strict mode).
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let outcome = tools
///     .execute("echo", r#"{"text": "hi", "times": null}"#, CallContext::new("call_1"))
///     .await;
/// assert_eq!(outcome.output(), Some(&json!({ "text": "hi" })));
///
/// // 3. Send the result back.
/// let message = tools.tool_result("call_1", "echo", &outcome);
/// assert_eq!(message, json!({ "role": "tool", "tool_call_id": "call_1", "content": "{\"text\":\"hi\"}" }));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ProviderTools {
    provider: Provider,
    tools: ToolSet,
}

impl ProviderTools {
    /// Exports `tools` for `provider`, checking Anthropic's default
    /// [`AnthropicLimits`].
    ///
    /// # Errors
    ///
    /// The first tool's [`ExportError`], [`ExportError::DuplicateName`], or
    /// [`ExportError::Limits`] listing every limit broken.
    pub fn new<I, T>(provider: Provider, tools: I) -> Result<Self, ExportError>
    where
        I: IntoIterator<Item = T>,
        T: Into<Tool>,
    {
        Self::with_limits(provider, tools, AnthropicLimits::default())
    }

    /// Like [`new`](Self::new) with other Anthropic limits
    /// ([`AnthropicLimits::unlimited`] checks none).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::provider::{AnthropicLimit, AnthropicLimits, ExportError, Provider, ProviderTools};
    /// use tool_core::{Tool, ToolError};
    ///
    /// let tools: Vec<Tool> = (0..21)
    ///     .map(|i| {
    ///         Tool::builder(format!("tool_{i}"))
    ///             .description("A strict tool")
    ///             .strict(true)
    ///             .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///             .build()
    ///             .unwrap()
    ///     })
    ///     .collect();
    /// let err = ProviderTools::new(Provider::Anthropic, tools.clone()).unwrap_err();
    /// let ExportError::Limits { violations, .. } = &err else { panic!("{err}") };
    /// assert_eq!(violations[0].limit, AnthropicLimit::StrictTools);
    /// assert_eq!((violations[0].allowed, violations[0].found), (20, 21));
    ///
    /// assert!(ProviderTools::with_limits(Provider::Anthropic, tools, AnthropicLimits::unlimited()).is_ok());
    /// ```
    pub fn with_limits<I, T>(
        provider: Provider,
        tools: I,
        limits: AnthropicLimits,
    ) -> Result<Self, ExportError>
    where
        I: IntoIterator<Item = T>,
        T: Into<Tool>,
    {
        let mut set = ToolSet::default();
        for tool in tools {
            let tool = tool.into();
            tool.export(provider)?;
            let name = tool.id().to_owned();
            set.insert(tool).map_err(|_| ExportError::DuplicateName {
                provider,
                tool: name,
            })?;
        }
        let exports = Self::exports_of(&set, provider);
        if provider == Provider::Anthropic {
            let strict: Vec<(&str, &Value)> = exports
                .iter()
                .filter(|export| export.is_strict())
                .filter_map(|export| Some((export.name(), export.input_schema()?)))
                .collect();
            let violations = check_limits(&strict, &limits);
            if !violations.is_empty() {
                return Err(ExportError::Limits {
                    provider,
                    violations,
                });
            }
        }
        Ok(ProviderTools {
            provider,
            tools: set,
        })
    }

    fn exports_of(set: &ToolSet, provider: Provider) -> Vec<&Export> {
        set.iter()
            .filter_map(|tool| tool.export(provider).ok())
            .collect()
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The tools, by name.
    pub fn tools(&self) -> &ToolSet {
        &self.tools
    }

    /// The tool the model calls `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    /// The export of the tool named `name`.
    pub fn export(&self, name: &str) -> Option<&Export> {
        self.get(name)?.export(self.provider).ok()
    }

    /// One definition per tool, in order.
    pub fn definitions(&self) -> Vec<Value> {
        Self::exports_of(&self.tools, self.provider)
            .into_iter()
            .map(|export| export.definition().clone())
            .collect()
    }

    /// The value of the request's `tools` field: the definitions, and for
    /// Gemini the single tool carrying them,
    /// `[{"functionDeclarations": [...]}]` (empty when there are no tools).
    pub fn request_tools(&self) -> Value {
        let definitions = self.definitions();
        match self.provider {
            Provider::Gemini if definitions.is_empty() => json!([]),
            Provider::Gemini => json!([{ "functionDeclarations": definitions }]),
            _ => Value::Array(definitions),
        }
    }

    /// The arguments of a call to `name`, parsed and restored to what the
    /// tool's schema expects (see [`Export::restore_input`]). Unknown names
    /// and unparseable text are returned unchanged.
    pub fn restore_input(&self, name: &str, input: impl Into<RawInput>) -> RawInput {
        match self.export(name) {
            Some(export) => export.restore_input(input),
            None => input.into(),
        }
    }

    /// Runs the call the model made: finds the tool (or fails with the
    /// unknown-tool error listing the available ones), restores the
    /// arguments, and runs the tool's pipeline ([`Tool::execute`]). The
    /// future owns what it needs.
    pub fn execute(
        &self,
        name: &str,
        input: impl Into<RawInput>,
        ctx: CallContext,
    ) -> impl Future<Output = Outcome> + Send + 'static {
        let found = self
            .get(name)
            .cloned()
            .ok_or_else(|| self.tools.unknown_tool(name));
        let (provider, input) = (self.provider, input.into());
        async move {
            match found {
                Ok(tool) => {
                    let input = match tool.export(provider) {
                        Ok(export) => export.restore_input(input),
                        Err(_) => input,
                    };
                    tool.execute(input, ctx).await
                }
                Err(error) => Outcome::Failed { error },
            }
        }
    }

    /// The tool-result message for this provider (see [`Provider::tool_result`]).
    pub fn tool_result(&self, call_id: &str, name: &str, outcome: &dyn ModelFacing) -> Value {
        self.provider.tool_result(call_id, name, outcome)
    }

    /// Follows a decoded stream of tool calls and restores each call's
    /// arguments when they are complete (see [`ToolCallStream`]).
    pub fn stream(&self) -> ToolCallStream<'_> {
        ToolCallStream {
            tools: self,
            names: HashMap::new(),
        }
    }
}

/// Restores the arguments of streamed tool calls: feed it the
/// [`ToolCallEvent`]s of a [decoder](crate::decode), pass on what it returns.
///
/// It remembers which tool each call id is for (from
/// [`ToolCallEvent::Start`]) and applies that tool's
/// [`Export::restore_value`] to the arguments of
/// [`ToolCallEvent::InputEnd`]; other events pass through unchanged. A
/// runtime's streaming input (`begin` / `push` / `finish`) takes the events
/// from here, so `finish` receives arguments in the tool's own schema.
///
/// ```
/// use serde_json::json;
/// use tool_core::decode::{decode_sse, ToolCallEvent};
/// use tool_core::provider::{Provider, ProviderTools};
/// use tool_core::{Tool, ToolError};
///
/// let find = Tool::builder("find")
///     .description("Find")
///     .strict(true)
///     .input_schema(json!({ "type": "object", "properties": { "q": { "type": "string" }, "near": { "type": "string" } }, "required": ["q"] }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
/// let tools = ProviderTools::new(Provider::OpenAiChat, [find]).unwrap();
/// let body = concat!(
///     r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"find","arguments":"{\"q\":\"x\",\"near\":null}"}}]}}]}"#, "\n\n",
///     r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#, "\n\n",
/// );
/// let decoder = Provider::OpenAiChat.decoder().unwrap();
/// let mut stream = tools.stream();
/// let events: Vec<ToolCallEvent> = decode_sse(decoder, body).unwrap().into_iter().map(|e| stream.apply(e)).collect();
/// assert_eq!(events.last(), Some(&ToolCallEvent::InputEnd { call_id: "call_1".into(), input: json!({ "q": "x" }) }));
/// ```
#[derive(Debug)]
pub struct ToolCallStream<'a> {
    tools: &'a ProviderTools,
    names: HashMap<String, String>,
}

impl ToolCallStream<'_> {
    /// Passes one event on, with complete arguments restored.
    pub fn apply(&mut self, event: ToolCallEvent) -> ToolCallEvent {
        match event {
            ToolCallEvent::Start { call_id, tool_name } => {
                self.names.insert(call_id.clone(), tool_name.clone());
                ToolCallEvent::Start { call_id, tool_name }
            }
            ToolCallEvent::InputEnd { call_id, mut input } => {
                let export = self
                    .names
                    .remove(&call_id)
                    .and_then(|name| self.tools.export(&name));
                if let Some(export) = export {
                    export.restore_value(&mut input);
                }
                ToolCallEvent::InputEnd { call_id, input }
            }
            ToolCallEvent::Incomplete {
                call_id,
                tool_name,
                partial_text,
                reason,
            } => {
                self.names.remove(&call_id);
                ToolCallEvent::Incomplete {
                    call_id,
                    tool_name,
                    partial_text,
                    reason,
                }
            }
            delta @ ToolCallEvent::InputDelta { .. } => delta,
        }
    }

    /// The name of the tool an open call is for.
    pub fn tool_name(&self, call_id: &str) -> Option<&str> {
        self.names.get(call_id).map(String::as_str)
    }
}
