//! The declarative part of a tool: everything createTool takes except the
//! functions, as plain data.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool's declaration: id, description, schemas and options.
///
/// Obtained from [`Tool::definition`](crate::Tool::definition); built by the
/// `#[tool]` attribute or [`Tool::builder`](crate::Tool::builder).
///
/// ```
/// use serde_json::json;
/// use tool_core::Tool;
///
/// let tool = Tool::builder("echo")
///     .description("Echo the text back")
///     .input_schema(json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }))
///     .execute(|input, _ctx| async move { Ok::<_, tool_core::ToolError>(input) })
///     .build()
///     .unwrap();
/// let def = tool.definition();
/// assert_eq!(def.id, "echo");
/// assert_eq!(def.input_schema["required"][0], "text");
/// assert!(!def.strict);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolDefinition {
    /// Unique id, `^[a-zA-Z0-9_-]{1,64}$`; the name the model calls.
    pub id: String,
    /// What the tool does, for the model.
    pub description: String,
    /// Human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the output, when the tool declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// JSON Schema of the suspend payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend_schema: Option<Value>,
    /// JSON Schema of the resume data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_schema: Option<Value>,
    /// JSON Schema of the request context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_context_schema: Option<Value>,
    /// JSON Schema of the workflow state, when the tool keeps one
    /// (`#[tool(workflow_state = Type)]`, `ToolBuilder::workflow_state_schema`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_state_schema: Option<Value>,
    /// Provider strict mode (OpenAI, Anthropic).
    pub strict: bool,
    /// Whether calls always need human approval (a policy function may also decide).
    pub require_approval: bool,
    /// The top-level input properties a reviewer may change before approving
    /// a call ([`ToolBuilder::editable`](crate::ToolBuilder::editable),
    /// `#[tool(require_approval(editable(..)))]`); empty when none is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub editable: Vec<String>,
    /// Whether a stored call (approved or resumed) whose run was interrupted
    /// by a crash may run again when it is recovered. `false`: it is settled
    /// as failed with an "interrupted" error instead. A tool that sets this
    /// should make its side effects idempotent, keyed by the call id.
    pub retry_safe: bool,
    /// Whether the tool's database work runs in the runtime's own
    /// transaction and commits together with the call's outcome (see
    /// [`ToolBuilder::transactional`](crate::ToolBuilder::transactional)).
    /// Only the effects inside that transaction are exactly-once; the
    /// tool's other effects are at-least-once, as for any tool.
    pub transactional: bool,
    /// MCP annotations and `_meta`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpOptions>,
    /// Provider-specific options, keyed by provider name (`openai`, `anthropic`, ...).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub provider_options: Map<String, Value>,
    /// Example arguments, shown to providers that read them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_examples: Vec<Value>,
    /// Background execution settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundConfig>,
    /// What happens when the output does not match its schema.
    pub output_validation: OutputValidation,
}

/// What happens when a tool's output does not match its output schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputValidation {
    /// The call fails with an output validation error (the reference's behaviour).
    #[default]
    Strict,
    /// The mismatch is logged with `tracing::warn!` and the output returned.
    Warn,
}

/// MCP tool annotations (hints for clients) and `_meta`.
///
/// ```
/// use tool_core::McpOptions;
///
/// let mcp = McpOptions::default().title("Weather Lookup").read_only(true).idempotent(true);
/// let json = serde_json::to_value(&mcp.annotations).unwrap();
/// assert_eq!(json, serde_json::json!({ "title": "Weather Lookup", "readOnlyHint": true, "idempotentHint": true }));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct McpOptions {
    /// The annotations, serialized as MCP names them.
    pub annotations: McpAnnotations,
    /// `_meta` entries.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// The tool is served only as an MCP task (tasks extension): a client
    /// that does not declare the extension is refused (`-32021`) rather
    /// than kept waiting. For background tools.
    #[serde(rename = "taskRequired", skip_serializing_if = "std::ops::Not::not")]
    pub task_required: bool,
}

/// MCP `ToolAnnotations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct McpAnnotations {
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeated calls with the same arguments have no additional effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl McpOptions {
    /// Sets the annotation title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.annotations.title = Some(title.into());
        self
    }

    /// Sets `readOnlyHint`.
    #[must_use]
    pub fn read_only(mut self, value: bool) -> Self {
        self.annotations.read_only_hint = Some(value);
        self
    }

    /// Sets `destructiveHint`.
    #[must_use]
    pub fn destructive(mut self, value: bool) -> Self {
        self.annotations.destructive_hint = Some(value);
        self
    }

    /// Sets `idempotentHint`.
    #[must_use]
    pub fn idempotent(mut self, value: bool) -> Self {
        self.annotations.idempotent_hint = Some(value);
        self
    }

    /// Sets `openWorldHint`.
    #[must_use]
    pub fn open_world(mut self, value: bool) -> Self {
        self.annotations.open_world_hint = Some(value);
        self
    }

    /// Sets `_meta`.
    #[must_use]
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Serves the tool only as an MCP task (see [`task_required`](Self::task_required)):
    /// for a background tool whose calls should never keep a request open.
    ///
    /// ```
    /// let mcp = tool_core::McpOptions::default().task_required(true);
    /// assert!(mcp.task_required);
    /// ```
    #[must_use]
    pub fn task_required(mut self, required: bool) -> Self {
        self.task_required = required;
        self
    }
}

/// Whether a background call returns at once or the caller waits for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Disposition {
    /// The call returns `Started { task_id }` at once and completes later.
    #[default]
    Deferred,
    /// The call runs as a background task but the caller waits for its result.
    Foreground,
}

/// Background execution settings (`background(...)` in the attribute).
///
/// ```
/// use tool_core::{BackgroundConfig, Disposition};
///
/// let bg = BackgroundConfig::new().timeout_ms(30_000).max_retries(2);
/// assert!(bg.enabled);
/// assert_eq!(bg.disposition, Disposition::Deferred);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BackgroundConfig {
    /// Whether calls run in the background.
    pub enabled: bool,
    /// Deferred or foreground.
    pub disposition: Disposition,
    /// Time limit of one attempt, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Retries after a failed or timed-out attempt.
    pub max_retries: u32,
}

impl Default for BackgroundConfig {
    fn default() -> Self {
        BackgroundConfig::new()
    }
}

impl BackgroundConfig {
    /// Enabled, deferred, no timeout, no retries.
    pub fn new() -> Self {
        BackgroundConfig {
            enabled: true,
            disposition: Disposition::Deferred,
            timeout_ms: None,
            max_retries: 0,
        }
    }

    /// Sets `enabled`.
    #[must_use]
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Sets the disposition.
    #[must_use]
    pub fn disposition(mut self, disposition: Disposition) -> Self {
        self.disposition = disposition;
        self
    }

    /// Sets the time limit of one attempt.
    #[must_use]
    pub fn timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = Some(timeout_ms);
        self
    }

    /// Sets the number of retries.
    #[must_use]
    pub fn max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }
}
