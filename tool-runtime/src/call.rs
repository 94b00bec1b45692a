//! What a caller (an agent loop, an MCP server) asks the runtime to run:
//! a [`CallHead`], the envelope every form of a call carries (a
//! [`ToolCall`], a streaming [`InputStream`](crate::InputStream)), and the
//! arguments.

use std::time::Duration;

use serde_json::Value;
use tool_core::{Extensions, RawInput, RequestContext, WorkflowContext};

/// The envelope of one call, whatever form it travels in (as
/// `http::request::Parts` is a request's): its ids, the request's context,
/// the conversation, its time limit, typed values for the tool, and who
/// asked for it. A [`ToolCall`] and an [`InputStream`](crate::InputStream)
/// embed it; the runtime turns it into the tool's `CallContext` in one place.
///
/// ```
/// use tool_runtime::ToolCall;
///
/// let call = ToolCall::new("call-1", "weather-tool", "{}").with_requester("user:ada");
/// assert_eq!(call.head.tool_id, "weather-tool");
/// assert_eq!(call.head.requester.as_deref(), Some("user:ada"));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallHead {
    /// The call's id, as the model or provider gave it; keys approval and resume.
    pub call_id: String,
    /// The tool to run.
    pub tool_id: String,
    /// Per-request values, validated against the tool's request-context schema.
    pub request_context: RequestContext,
    /// The conversation so far, for hooks and the tool.
    pub messages: Vec<Value>,
    /// Time limit of this call; overrides the tool's and the runtime's.
    pub timeout: Option<Duration>,
    /// Typed values for the tool (what the transport offers it: MCP
    /// elicitation, the agent running the call), read with
    /// `ToolContext::extension`. Not stored: a call that pauses (approval,
    /// suspension) and runs again through `approve` or `resume` runs
    /// without them.
    pub extensions: Extensions,
    /// Who asked for the call (a principal: a user, a service), as the
    /// application or the agent's run names them; a runtime-wide approval
    /// policy sees it ([`ApprovalCheck::requester`](crate::ApprovalCheck::requester)).
    pub requester: Option<String>,
}

impl CallHead {
    /// The head of the call `call_id` to `tool_id`, nothing else set.
    ///
    /// ```
    /// use tool_runtime::CallHead;
    ///
    /// let head = CallHead::new("c1", "search");
    /// assert!(head.messages.is_empty() && head.requester.is_none());
    /// ```
    pub fn new(call_id: impl Into<String>, tool_id: impl Into<String>) -> Self {
        CallHead {
            call_id: call_id.into(),
            tool_id: tool_id.into(),
            request_context: RequestContext::default(),
            messages: Vec::new(),
            timeout: None,
            extensions: Extensions::new(),
            requester: None,
        }
    }
}

/// The builder methods of the envelope, written once for every type that
/// carries a [`CallHead`] in its `head` field.
/// The builder methods of the envelope, written once: for a [`CallHead`],
/// and for every type that carries one in a field (`head_builders!(ToolCall, head)`).
/// The head of a call that waited in a store, to run it again: what the
/// store kept of it ([`StoredHead`](crate::store::StoredHead)); no
/// extensions (the process's own, not kept).
impl From<crate::store::StoredHead> for CallHead {
    fn from(stored: crate::store::StoredHead) -> Self {
        CallHead {
            call_id: stored.call_id,
            tool_id: stored.tool_id,
            request_context: RequestContext::from(stored.request_context),
            messages: stored.messages,
            timeout: stored.timeout_ms.map(Duration::from_millis),
            extensions: Extensions::new(),
            requester: stored.requester,
        }
    }
}

macro_rules! head_builders {
    ($carrier:ty $(, $field:ident)?) => {
        impl $carrier {
            /// Sets the request context the call runs with.
            #[must_use]
            pub fn with_request_context(
                mut self,
                request_context: ::tool_core::RequestContext,
            ) -> Self {
                self$(.$field)?.request_context = request_context;
                self
            }

            /// Sets the conversation so far.
            #[must_use]
            pub fn with_messages(mut self, messages: ::std::vec::Vec<::serde_json::Value>) -> Self {
                self$(.$field)?.messages = messages;
                self
            }

            /// Attaches a typed value for the tool (`ToolContext::extension`),
            /// replacing one of the same type. The MCP server attaches its
            /// `McpContext` this way for clients that can be asked for input.
            #[must_use]
            pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
                self$(.$field)?.extensions.insert(value);
                self
            }

            /// Says which agent makes the call; the tool reads it with
            /// `ToolContext::agent`. It travels as an extension, and is the
            /// one extension stored with a call that pauses
            /// (`StoredHead::agent`): a call approved with `Runtime::approve`
            /// or resumed with `Runtime::resume` runs with the same
            /// `ctx.agent()` (`Runtime::decide` may pass another).
            ///
            /// ```
            /// use serde_json::json;
            /// use tool_core::{AgentContext, Tool, ToolError};
            /// use tool_runtime::{Runtime, ToolCall};
            ///
            /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
            /// let whoami = Tool::builder("whoami").description("Names the agent")
            ///     .execute(|_input, ctx| async move {
            ///         Ok::<_, ToolError>(json!(ctx.agent().map(|agent| agent.run_id.clone())))
            ///     })
            ///     .build().unwrap();
            /// let runtime = Runtime::builder().tool(whoami).build().unwrap();
            /// let call = ToolCall::new("c1", "whoami", json!({}))
            ///     .with_agent(AgentContext::new("support-agent", "run-9"));
            /// assert_eq!(runtime.call(call).await.output(), Some(&json!("run-9")));
            /// # });
            /// ```
            #[must_use]
            pub fn with_agent(self, agent: ::tool_core::AgentContext) -> Self {
                self.with_extension(agent)
            }

            /// Sets this call's time limit; when it passes, the tool's abort
            /// signal fires and the call ends as `Outcome::Aborted`.
            #[must_use]
            pub fn with_timeout(mut self, timeout: ::std::time::Duration) -> Self {
                self$(.$field)?.timeout = Some(timeout);
                self
            }

            /// Says who asked for the call ([`CallHead::requester`]).
            #[must_use]
            pub fn with_requester(
                mut self,
                requester: impl ::std::convert::Into<::std::string::String>,
            ) -> Self {
                self$(.$field)?.requester = Some(requester.into());
                self
            }
        }
    };
}

pub(crate) use head_builders;

head_builders!(CallHead);
head_builders!(ToolCall, head);

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
/// assert_eq!(call.head.tool_id, "weather-tool");
/// ```
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The envelope: ids, request context, messages, time limit,
    /// extensions, requester.
    pub head: CallHead,
    /// The arguments: the model's text, or a JSON value.
    pub input: RawInput,
    /// The workflow step the call is, read with `ToolContext::workflow`.
    /// Not stored, like the extensions. Typed rather than an extension:
    /// admission decodes its state into the tool's state type.
    pub workflow: Option<WorkflowContext>,
}

impl ToolCall {
    /// A call with an empty request context and no messages.
    pub fn new(
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        input: impl Into<RawInput>,
    ) -> Self {
        ToolCall {
            head: CallHead::new(call_id, tool_id),
            input: input.into(),
            workflow: None,
        }
    }

    /// Runs the call as a workflow step; the tool reads it with
    /// `ToolContext::workflow`, and the state it sets comes back in
    /// [`CallOutcome::state`](crate::CallOutcome::state). Not stored with a
    /// call that pauses (unlike [`with_agent`](Self::with_agent)).
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use tool_core::{Tool, ToolError, WorkflowContext};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let step = Tool::builder("step").description("Advance a step")
    ///     .execute(|_input, ctx| async move {
    ///         if let Some(workflow) = ctx.workflow::<Value>() {
    ///             workflow.set_state(json!({ "done": true }));
    ///         }
    ///         Ok::<_, ToolError>(json!("ok"))
    ///     })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(step).build().unwrap();
    /// let call = ToolCall::new("c1", "step", json!({}))
    ///     .with_workflow(WorkflowContext::new("flow", "run-1", json!({})));
    /// assert_eq!(runtime.call(call).await.state(), Some(&json!({ "done": true })));
    /// # });
    /// ```
    #[must_use]
    pub fn with_workflow(mut self, workflow: WorkflowContext) -> Self {
        self.workflow = Some(workflow);
        self
    }
}
