//! Compatibility with the 2025-11-25 protocol's tasks (SEP-1686,
//! "experimental tasks"), which rmcp 3.11 does not model: it models the
//! tasks extension (SEP-2663) only. Everything here exists for that gap.
//!
//! What rmcp 3.11's types drop or shape otherwise:
//! - a client's `capabilities.tasks`: `rmcp::model::ClientCapabilities` has
//!   no `tasks` field (its `supports_tasks` is SEP-2663's extension), nor
//!   has `ServerCapabilities` one for the server's;
//! - the `task` param of `tools/call` (`CallToolRequestParams`) and the
//!   `execution.taskSupport` of a tool (`rmcp::model::Tool`);
//! - `tasks/get` and `tasks/cancel`: `ServerHandler::get_task` and
//!   `cancel_task` answer SEP-2663's shapes (`GetTaskResult`,
//!   `DetailedTask`, a `Task` with `ttlMs` and `pollIntervalMs`), to
//!   SEP-2663 clients alone; `tasks/result` and `tasks/list` have no
//!   handler.
//!
//! So, in front of rmcp ([`wire`]), the transport edges keep the client's
//! declaration where rmcp keeps it (under `capabilities.experimental`),
//! add the server's `capabilities.tasks` to the `initialize` result, and,
//! for a session that declared tasks, rename the requests rmcp would answer
//! in other shapes to methods rmcp hands over as they came; [`serve`]
//! answers those (`ServerHandler::on_custom_request`) in 2025-11-25's
//! shapes, from the same stored tasks as SEP-2663's (`tasks.rs`). The
//! transports stay transports: stdio calls this module's [`StdioEdge`]
//! through its line hook (`crate::stdio::LineHook`), streamable HTTP calls
//! [`HttpEdge`] on each POST.
//!
//! Removable when rmcp models 2025-11-25's tasks: a `tasks` capability on
//! `ClientCapabilities` and `ServerCapabilities`, a `task` field on
//! `CallToolRequestParams` answered with a 2025-11-25 `CreateTaskResult`,
//! an `execution` on `Tool`, and `ServerHandler` methods for `tasks/get`,
//! `tasks/result`, `tasks/list` and `tasks/cancel` in that protocol's
//! shapes. Then [`serve`]'s handlers become those methods, over `tasks.rs`,
//! and the rest goes. Or when 2025-11-25 clients need no tasks any more.
//! Either way, with this folder go its hooks: `McpServer`'s `session_tasks`
//! and `on_custom_request`, the relay's hook in `McpServer::serve_lines`
//! (rmcp's own stdio transport then serves as is), the `HttpEdge` calls
//! and `with_server_tasks` in `crate::http`, and `Generation::Tasks2025` and
//! `Generation::Handshake`'s `declared_tasks` (`generation.rs`).

mod http;
mod serve;
mod stdio;
mod wire;

pub(crate) use http::{HttpEdge, with_server_tasks};
pub(crate) use serve::{SessionTasks, custom};
pub(crate) use stdio::StdioEdge;
pub(crate) use wire::peer_declared;
