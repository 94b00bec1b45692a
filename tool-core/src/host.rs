//! What the host running a tool says about itself: the agent that runs it
//! ([`AgentContext`]) or the workflow step it is ([`WorkflowContext`]), and
//! the tool's typed view of the workflow ([`Workflow`]).

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The agent running a tool: set by the host with
/// [`CallContext::with_agent`](crate::CallContext::with_agent), read by the
/// tool with [`ToolContext::agent`](crate::ToolContext::agent) (Mastra's
/// `context.agent`).
///
/// ```
/// use tool_core::AgentContext;
///
/// let agent = AgentContext::new("support-agent", "run-7")
///     .with_thread("thread-1")
///     .with_resource("user-42")
///     .with_background(true);
/// assert_eq!(agent.agent_id, "support-agent");
/// assert_eq!(agent.run_id, "run-7");
/// assert_eq!(agent.thread_id.as_deref(), Some("thread-1"));
/// assert_eq!(agent.resource_id.as_deref(), Some("user-42"));
/// assert!(agent.background);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentContext {
    /// The agent's id.
    pub agent_id: String,
    /// The id of the agent's run that made the call.
    pub run_id: String,
    /// The conversation thread, when the agent has memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Who the thread belongs to (a user, say), when the agent has memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// Whether the agent runs the tool in the background (nobody waits on
    /// the call's result within the turn).
    #[serde(default)]
    pub background: bool,
}

impl AgentContext {
    /// The agent `agent_id` in its run `run_id`, with no thread or resource,
    /// in the foreground.
    pub fn new(agent_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        AgentContext {
            agent_id: agent_id.into(),
            run_id: run_id.into(),
            thread_id: None,
            resource_id: None,
            background: false,
        }
    }

    /// Sets the conversation thread.
    #[must_use]
    pub fn with_thread(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// Sets who the thread belongs to.
    #[must_use]
    pub fn with_resource(mut self, resource_id: impl Into<String>) -> Self {
        self.resource_id = Some(resource_id.into());
        self
    }

    /// Marks the call as run in the background (or not).
    #[must_use]
    pub fn with_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }
}

/// The workflow step a tool runs as: set by the host with
/// [`CallContext::with_workflow`](crate::CallContext::with_workflow); the
/// tool reads it typed with [`ToolContext::workflow`](crate::ToolContext::workflow)
/// (Mastra's `context.workflow`).
///
/// `state` is the workflow's state as the host holds it. A tool that
/// declares a state type (`#[tool(workflow_state = Type)]`,
/// [`ToolBuilder::workflow_state_type`](crate::ToolBuilder::workflow_state_type) or
/// [`ToolBuilder::workflow_state_schema`](crate::ToolBuilder::workflow_state_schema)) has it
/// validated against that schema when the call is admitted.
///
/// ```
/// use serde_json::json;
/// use tool_core::WorkflowContext;
///
/// let workflow = WorkflowContext::new("order-flow", "run-3", json!({ "count": 1 }));
/// assert_eq!(workflow.workflow_id, "order-flow");
/// assert_eq!(workflow.run_id, "run-3");
/// assert_eq!(workflow.state, json!({ "count": 1 }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WorkflowContext {
    /// The id of the workflow run.
    pub run_id: String,
    /// The workflow's id.
    pub workflow_id: String,
    /// The workflow's state when the step starts.
    #[serde(default)]
    pub state: Value,
}

impl WorkflowContext {
    /// The run `run_id` of workflow `workflow_id`, with its current `state`.
    pub fn new(
        workflow_id: impl Into<String>,
        run_id: impl Into<String>,
        state: impl Into<Value>,
    ) -> Self {
        WorkflowContext {
            run_id: run_id.into(),
            workflow_id: workflow_id.into(),
            state: state.into(),
        }
    }
}

/// A type a tool keeps as its workflow state (`#[tool(workflow_state = Type)]`,
/// [`ToolBuilder::workflow_state_type`](crate::ToolBuilder::workflow_state_type)): read from
/// the host's JSON, written back as JSON, described by a JSON Schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's workflow state: it must implement `serde::Serialize`, `serde::Deserialize` and `schemars::JsonSchema`",
    label = "the workflow state is deserialized from the host, validated against its JSON Schema, and serialized by `set_state`",
    note = "derive them with `#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]`"
)]
pub trait WorkflowState: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static {}

impl<T: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static> WorkflowState for T {}

/// The erased state type of a tool: decodes the host's validated JSON once,
/// at admission.
#[derive(Clone, Copy)]
pub(crate) struct StateType {
    pub(crate) type_name: &'static str,
    pub(crate) decode: fn(&Value) -> Result<DecodedState, StateMismatch>,
}

/// The workflow state of one call, deserialized into the tool's state type.
pub(crate) type DecodedState = Arc<dyn Any + Send + Sync>;

/// Why a state did not deserialize: where (property names and array
/// indexes), and the message.
pub(crate) type StateMismatch = (Vec<String>, String);

impl StateType {
    pub(crate) fn of<T: WorkflowState>() -> Self {
        StateType {
            type_name: std::any::type_name::<T>(),
            // Read as a typed input is: the path and an excerpt of serde's
            // message.
            decode: |value| match crate::parameter::typed_input::<T>(value, None) {
                Ok(state) => Ok(Arc::new(state)),
                Err(mismatch) => Err((mismatch.path, mismatch.reason)),
            },
        }
    }
}

impl fmt::Debug for StateType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.type_name)
    }
}

/// The tool's typed view of the workflow step it runs as: from
/// [`ToolContext::workflow`](crate::ToolContext::workflow).
///
/// ```
/// use serde_json::json;
/// use tool_core::{tool, CallContext, Tool, ToolContext, ToolError, WorkflowContext};
///
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Counter { count: u32 }
///
/// /// Counts the visits of a workflow
/// #[tool(workflow_state = Counter)]
/// async fn visit(ctx: ToolContext) -> Result<u32, ToolError> {
///     let Some(workflow) = ctx.workflow::<Counter>() else { return Ok(0) };
///     let count = workflow.state().count + 1;
///     workflow.set_state(Counter { count });
///     Ok(count)
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let ctx = CallContext::new("c1")
///     .with_workflow(WorkflowContext::new("visits", "run-1", json!({ "count": 1 })));
/// let outcome = Tool::from(VisitTool).execute("{}", ctx).await;
/// assert_eq!(outcome.output(), Some(&json!(2)));
/// assert_eq!(outcome.state(), Some(&json!({ "count": 2 })));
/// # });
/// ```
pub struct Workflow<'a, T> {
    pub(crate) context: &'a WorkflowContext,
    pub(crate) state: &'a T,
    /// The call's slot for the new state (`CallShared::new_state`), which
    /// the pipeline reads when the call completes.
    pub(crate) new_state: &'a Mutex<Option<Result<Value, String>>>,
}

impl<T> fmt::Debug for Workflow<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workflow")
            .field("workflow_id", &self.context.workflow_id)
            .field("run_id", &self.context.run_id)
            .finish_non_exhaustive()
    }
}

impl<'a, T: WorkflowState> Workflow<'a, T> {
    /// The id of the workflow run.
    pub fn run_id(&self) -> &'a str {
        &self.context.run_id
    }

    /// The workflow's id.
    pub fn workflow_id(&self) -> &'a str {
        &self.context.workflow_id
    }

    /// The state the step started with, validated against the tool's state
    /// schema and deserialized when the call was admitted. It does not
    /// change with [`set_state`](Self::set_state).
    pub fn state(&self) -> &'a T {
        self.state
    }

    /// The state the step started with, as the host gave it.
    pub fn state_value(&self) -> &'a Value {
        &self.context.state
    }

    /// Replaces the workflow's state when the call completes: the new state
    /// is validated against the tool's state schema (an invalid one fails
    /// the call with a model-readable error) and returned with the outcome
    /// ([`Outcome::state`](crate::Outcome::state)). The last call wins; a
    /// call that fails, suspends or is aborted returns no state.
    pub fn set_state(&self, state: T) {
        let serialized = serde_json::to_value(&state).map_err(|e| e.to_string());
        *self
            .new_state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(serialized);
    }
}
