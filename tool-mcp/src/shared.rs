//! What every session of an [`McpServer`](crate::McpServer) shares: the
//! runtime, its tools as MCP declares them, the server's settings, and
//! what its running tasks ask. A leaf below the server, so that the layers
//! serving a request (the call, tasks, 2025-11-25's edge) take it without
//! depending on the server that holds them.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{Implementation, ListToolsResult};
use rmcp::service::{RequestContext, RoleServer};
use tool_core::ModelError;
use tool_runtime::Runtime;

use crate::convert::ServedTool;
use crate::request_state::RequestStates;
use crate::task_input::TaskInputs;

/// Builds a call's request context from its MCP request
/// ([`McpServerBuilder::request_context`](crate::McpServerBuilder::request_context)).
pub(crate) type RequestContextFn =
    dyn Fn(&RequestContext<RoleServer>) -> tool_core::RequestContext + Send + Sync;

pub(crate) struct Shared {
    pub(crate) runtime: Runtime,
    pub(crate) tools: Vec<Arc<ServedTool>>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) implementation: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) elicitation: bool,
    pub(crate) request_context: Option<Arc<RequestContextFn>>,
    pub(crate) states: RequestStates,
    /// What the tasks running here ask their clients.
    pub(crate) inputs: TaskInputs,
    /// The largest message a client may send.
    pub(crate) max_message_size: usize,
}

impl Shared {
    pub(crate) fn served(&self, name: &str) -> Option<&Arc<ServedTool>> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The model-facing error for a tool this server does not serve,
    /// naming the ones it does (not the runtime's declaration-only tools).
    pub(crate) fn unknown_tool(&self, name: &str) -> ModelError {
        ModelError::unknown_tool(name, self.tools.iter().map(|served| served.tool.id()))
    }

    /// `tools/list` for a peer of the 2026-07-28 protocol (`modern`) or an older one.
    pub(crate) fn list_tools(&self, modern: bool) -> ListToolsResult {
        let tools = self.tools.iter().map(|t| t.declaration_for(modern));
        ListToolsResult::with_all_items(tools.collect())
    }
}
