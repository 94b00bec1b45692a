//! MCP (Model Context Protocol) for tool-runtime, with the official
//! [`rmcp`] crate, on the runtime's public API.
//!
//! Use it to offer your tools to MCP clients (desktop assistants, IDEs,
//! other agents), over stdio for a local process or streamable HTTP for a
//! service, or to use another MCP server's tools as local ones next to
//! your own. Both protocol eras are served: the `initialize` handshake
//! (2025-11-25 and older) and the stateless 2026-07-28 protocol.
//!
//! A server and a client over an in-memory pipe (a real server calls
//! [`McpServer::serve_stdio`] or [`McpServer::serve_http`]):
//!
//! ```
//! use serde_json::json;
//! use tool_core::{ToolError, tool};
//! use tool_mcp::{McpClient, McpServer};
//! use tool_runtime::{Runtime, ToolCall};
//!
//! /// Get the current weather for a location
//! #[tool(id = "weather-tool", mcp(title = "Weather Lookup", read_only))]
//! async fn weather(location: String) -> Result<String, ToolError> {
//!     Ok(format!("{location}: sunny"))
//! }
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let server = McpServer::builder(Runtime::builder().tool(WeatherTool).build().unwrap())
//!     .name("weather", "1.0.0")
//!     .build();
//! let (server_end, client_end) = tokio::io::duplex(64 * 1024);
//! tokio::spawn(server.serve(server_end));
//!
//! // The remote tools, as local dynamic tools of another runtime.
//! let remote = McpClient::connect(client_end).await.unwrap();
//! let tools = remote.tools_with_prefix("remote_").await.unwrap();
//! assert_eq!(tools[0].definition().title.as_deref(), Some("Weather Lookup"));
//! let runtime = Runtime::builder().tools(tools).build().unwrap();
//! let call = ToolCall::new("c1", "remote_weather-tool", json!({ "location": "Paris" }));
//! // A string output travels wrapped in an object (`OUTPUT_WRAPPER`), as MCP
//! // before 2026-07-28 asks.
//! let output = runtime.call(call).await.output().cloned();
//! assert_eq!(output, Some(json!({ "result": "Paris: sunny" })));
//! remote.close().await.unwrap();
//! # });
//! ```
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
mod compat_2025;
mod context;
mod convert;
mod dispatch;
mod elicit;
mod error;
mod generation;
mod http;
mod inbound;
#[allow(
    deprecated,
    reason = "MCP sampling in a tool's questions (SEP-2577 deprecates sampling; SEP-2322's input rounds carry it)"
)]
mod input_rounds;
mod logging;
mod request_state;
mod resumption;
mod server;
mod shared;
mod stdio;
#[allow(
    deprecated,
    reason = "MCP sampling in a task's questions (SEP-2577 deprecates sampling; older peers use it)"
)]
mod task_input;
mod tasks;

pub use call::PENDING_META;
pub use client::McpClient;
pub use context::{
    ElicitFuture, Elicitation, Elicitor, McpContext, McpToolContext, Root, RootsFuture,
    SampleFuture,
};
pub use convert::{OUTPUT_WRAPPER, STRICT_META};
pub use error::McpError;
pub use http::{HttpOptions, HttpServer};
pub use server::{McpServer, McpServerBuilder};
