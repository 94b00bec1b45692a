//! MCP (Model Context Protocol), with the official [`rmcp`] crate
//! (feature `mcp`).
//!
//! - [`McpServer`] serves a [`Runtime`](tool_runtime::Runtime)'s tools over stdio
//!   ([`McpServer::serve_stdio`]), streamable HTTP
//!   ([`McpServer::serve_http`], loopback by default) or any rmcp
//!   transport ([`McpServer::serve`]). Calls go through the runtime's whole
//!   pipeline; approvals and suspensions are asked about through
//!   elicitation where the client supports it.
//! - [`McpClient`] connects to an MCP server (spawned over stdio, or any
//!   rmcp transport) and turns its tools into dynamic [`Tool`](tool_core::Tool)s,
//!   so one runtime can mix local and remote tools.
//!
//! How tools map to MCP:
//!
//! | tool-core | MCP |
//! |---|---|
//! | id | `name` |
//! | `title`, else `mcp(title)` | `title` |
//! | description | `description` |
//! | input schema | `inputSchema` |
//! | output schema with an object root | `outputSchema` |
//! | any other output schema `S` | `outputSchema` `{"type":"object","properties":{"result":S},"required":["result"]}`, and `structuredContent` `{"result": output}` |
//! | `mcp(read_only, destructive, idempotent, open_world, title)` | `annotations`, as declared |
//! | `mcp(meta)` and `strict` | `_meta`: the declared entries plus `"strict": bool` |
//! | `Completed` | `structuredContent` + text (strings as is, other values as JSON), or the `to_model_output` content |
//! | `Failed` (invalid arguments, tool error, panic...) | `isError: true`, text = the model-facing message |
//! | unknown tool | JSON-RPC error `-32602` (invalid params) |
//! | `Declined`, `Aborted` | `isError: true`, text = what the model reads |
//! | approval / suspension the client cannot be asked about | `isError: true`, text saying what is pending and how to approve or resume it, `_meta["tool-runtime/pending"]` = `{callId, kind, payload, resumeSchema}` |
//! | background call | waited for: the request returns the task's final outcome; for a client of the tasks extension (SEP-2663), a task: `tasks/get`, `tasks/update` with the answers to its questions (`input_required`), `tasks/cancel`; for a 2025-11-25 client that declares `capabilities.tasks`, a task when the call has a `task` param: `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`, `notifications/tasks/status` |
//!
//! `to_model_output` content: text and JSON are text content; image data
//! (and `data:` image URLs) image content; other image and file URLs
//! resource links; audio files audio content; other files embedded blob
//! resources; provider file ids and custom parts text.

mod call;
mod client;
mod context;
mod convert;
mod elicit;
mod http;
mod logging;
mod request_state;
mod resumption;
mod server;
#[allow(
    deprecated,
    reason = "MCP sampling in a task's questions (SEP-2577 deprecates sampling; older peers use it)"
)]
mod task_input;
mod tasks;
mod tasks_2025;

pub use client::McpClient;
pub use context::{ElicitFuture, Elicitation, Elicitor, McpContext, McpToolContext, SampleFuture};
pub use convert::{OUTPUT_WRAPPER, STRICT_META};
pub use http::{HttpOptions, HttpServer};
pub use server::{McpServer, McpServerBuilder};

/// The `_meta` key of a result that reports a pending call:
/// `{"callId", "kind": "approval" | "suspended", "payload", "resumeSchema"}`.
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::Runtime;
/// use rmcp::model::CallToolRequestParams;
/// use rmcp::ServiceExt as _;
/// use tool_mcp::{McpServer, PENDING_META};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let delete = Tool::builder("delete").description("Deletes").require_approval(true)
///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("deleted")) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(delete).build().unwrap();
/// let (server_end, client_end) = tokio::io::duplex(64 * 1024);
/// tokio::spawn(McpServer::new(runtime.clone()).serve(server_end));
/// let client = ().serve(client_end).await.unwrap(); // no elicitation support
///
/// let result = client.call_tool(CallToolRequestParams::new("delete")).await.unwrap();
/// assert_eq!(result.is_error, Some(true));
/// let pending = &result.meta.unwrap()[PENDING_META];
/// assert_eq!(pending["kind"], "approval");
/// // The application decides.
/// let outcome = runtime.approve(pending["callId"].as_str().unwrap()).await.unwrap();
/// assert_eq!(outcome.output(), Some(&json!("deleted")));
/// # });
/// ```
pub const PENDING_META: &str = call::PENDING_META;

/// What can go wrong serving or connecting over MCP (not tool failures:
/// those are results the model reads).
///
/// ```
/// use tool_mcp::McpError;
///
/// let error = McpError::from(std::io::Error::other("address in use"));
/// assert_eq!(error.to_string(), "I/O error: address in use");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// Binding, spawning or another I/O operation failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The MCP handshake failed (the peer went away, spoke another
    /// protocol...); the source is the MCP SDK's error, boxed so that its
    /// type is not part of this API.
    #[error("MCP initialization failed: {0}")]
    Initialize(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// An MCP request failed; the source is the MCP SDK's error, boxed.
    #[error("MCP request failed: {0}")]
    Service(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The task serving a connection failed.
    #[error("the MCP service task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// A remote tool could not be turned into a local tool (for example
    /// its input schema does not compile).
    #[error("remote MCP tool {name:?} cannot be used: {reason}")]
    RemoteTool {
        /// The remote tool's name.
        name: String,
        /// Why.
        reason: String,
    },
}
