//! The client side: a remote MCP server's tools as dynamic [`Tool`]s, so an
//! agent's runtime can mix local and remote tools.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, ProgressNotificationParam, ProgressToken,
    ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::{IntoTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt as _};
use serde_json::Value;
use tokio::sync::mpsc;
use tool_core::{Tool, ToolContext, ToolError};

use crate::McpError;
use crate::convert::{content_model_output, local_id, remote_mcp_options, remote_output};

/// A connection to an MCP server whose tools can join a [`Runtime`](tool_runtime::Runtime).
///
/// Each remote tool becomes a dynamic [`Tool`] (built with
/// [`Tool::builder`]) with the remote input and output schemas, title,
/// annotations and `_meta` (as [`McpOptions`](tool_core::McpOptions); a
/// `"strict": true` entry turns on strict mode). Calling it validates the
/// arguments locally, then calls the remote tool: its abort signal cancels
/// the remote request (`notifications/cancelled`), the remote progress
/// notifications become the call's progress, an `isError` result becomes
/// the tool's error (the remote message), `structuredContent` the output,
/// and other content the output as text or content parts.
///
/// The connection lives while the client or any of its tools does; the
/// spawned server process is stopped when the last goes away, or by
/// [`close`](Self::close).
///
/// The client declares no elicitation support: a remote tool that needs
/// the user's input reports it in its result, which becomes the tool's error.
///
/// ```no_run
/// use tool_runtime::{Runtime, ToolCall};
/// use tool_mcp::McpClient;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut command = tokio::process::Command::new("my-mcp-server");
/// command.arg("--stdio");
/// let remote = McpClient::spawn(command).await?;
/// let runtime = Runtime::builder()
///     .tools(remote.tools_with_prefix("remote_").await?)
///     .build()?;
/// let outcome = runtime
///     .call(ToolCall::new("call-1", "remote_weather-tool", r#"{"location": "Paris"}"#))
///     .await;
/// println!("{}", outcome.to_model_value());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    peer: Peer<RoleClient>,
    progress: ProgressRoutes,
    /// Kept for [`McpClient::close`]; dropping it ends the connection.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field(
                "server",
                &self.inner.peer.peer_info().map(|i| i.server_info.clone()),
            )
            .finish_non_exhaustive()
    }
}

/// Progress notifications routed to the call that asked for them, by token.
#[derive(Clone, Default)]
struct ProgressRoutes {
    routes: Arc<Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>>>,
}

impl ProgressRoutes {
    fn open(&self, token: ProgressToken) -> ProgressRoute {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().insert(token.clone(), tx);
        ProgressRoute {
            routes: self.clone(),
            token,
            rx,
        }
    }

    fn deliver(&self, progress: ProgressNotificationParam) {
        if let Some(tx) = self.lock().get(&progress.progress_token) {
            let _ = tx.send(progress);
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>,
    > {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One call's progress; unregistered when dropped.
struct ProgressRoute {
    routes: ProgressRoutes,
    token: ProgressToken,
    rx: mpsc::UnboundedReceiver<ProgressNotificationParam>,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

/// What the client answers to the server: progress routing; no sampling,
/// roots or elicitation.
#[derive(Clone)]
struct Handler {
    progress: ProgressRoutes,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.deliver(params);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tool-runtime", env!("CARGO_PKG_VERSION")),
        )
    }
}

impl McpClient {
    /// Spawns an MCP server with `command` and connects to it over its
    /// stdin/stdout (its stderr is inherited).
    pub async fn spawn(command: tokio::process::Command) -> Result<McpClient, McpError> {
        McpClient::connect(TokioChildProcess::new(command)?).await
    }

    /// Connects over any rmcp client transport (a child process, a duplex
    /// stream, streamable HTTP...), with the `initialize` handshake.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{Runtime, ToolCall};
    /// use tool_mcp::{McpClient, McpServer};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let echo = Tool::builder("echo").description("Echoes its input")
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    /// tokio::spawn(McpServer::new(Runtime::builder().tool(echo).build().unwrap()).serve(server_end));
    ///
    /// let remote = McpClient::connect(client_end).await.unwrap();
    /// let runtime = Runtime::builder().tools(remote.tools().await.unwrap()).build().unwrap();
    /// let outcome = runtime.call(ToolCall::new("c1", "echo", json!({ "hi": 1 }))).await;
    /// assert_eq!(outcome.output(), Some(&json!({ "hi": 1 })));
    ///
    /// remote.close().await.unwrap();
    /// let closed = runtime.call(ToolCall::new("c2", "echo", json!({}))).await;
    /// assert!(closed.error().is_some());
    /// # });
    /// ```
    pub async fn connect<T, E, A>(transport: T) -> Result<McpClient, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let progress = ProgressRoutes::default();
        let handler = Handler {
            progress: progress.clone(),
        };
        let service = handler
            .serve(transport)
            .await
            .map_err(|e| McpError::Initialize(Box::new(e)))?;
        Ok(McpClient {
            inner: Arc::new(ClientInner {
                peer: service.peer().clone(),
                progress,
                service: tokio::sync::Mutex::new(Some(service)),
            }),
        })
    }

    /// The rmcp peer, for requests this type does not wrap.
    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.inner.peer
    }

    /// The remote tools as dynamic tools, with their MCP names as ids
    /// (characters outside `[a-zA-Z0-9_-]` become `_`).
    pub async fn tools(&self) -> Result<Vec<Tool>, McpError> {
        self.tools_with_prefix("").await
    }

    /// The remote tools as dynamic tools, with ids `prefix` + their MCP
    /// names (so that they cannot clash with local tools).
    pub async fn tools_with_prefix(&self, prefix: &str) -> Result<Vec<Tool>, McpError> {
        let remote = self
            .inner
            .peer
            .list_all_tools()
            .await
            .map_err(|e| McpError::Service(Box::new(e)))?;
        remote
            .iter()
            .map(|tool| self.tool(tool, local_id(prefix, &tool.name)))
            .collect()
    }

    /// Ends the connection (a spawned server sees its stdin close, then is
    /// stopped); calls of its tools fail afterwards.
    pub async fn close(&self) -> Result<(), McpError> {
        if let Some(mut service) = self.inner.service.lock().await.take() {
            service.close().await?;
        }
        Ok(())
    }

    fn tool(&self, remote: &rmcp::model::Tool, id: String) -> Result<Tool, McpError> {
        let name = remote.name.to_string();
        let description = remote
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(str::to_owned)
            .or_else(|| remote.title.clone())
            .unwrap_or_else(|| format!("The {name} tool of an MCP server"));
        let (mcp, strict) = remote_mcp_options(remote);
        let mut builder = Tool::builder(id)
            .description(description)
            .input_schema(Value::Object(remote.input_schema.as_ref().clone()))
            .strict(strict);
        if let Some(title) = &remote.title {
            builder = builder.title(title.clone());
        }
        if let Some(mcp) = mcp {
            builder = builder.mcp(mcp);
        }
        match &remote.output_schema {
            Some(schema) => builder = builder.output_schema(Value::Object(schema.as_ref().clone())),
            // Unstructured results: text, or content parts for the model.
            None => builder = builder.to_model_output(content_model_output),
        }
        let inner = Arc::clone(&self.inner);
        let remote_name = name.clone();
        builder
            .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
                let inner = Arc::clone(&inner);
                let name = remote_name.clone();
                async move { inner.call(&name, input, &ctx).await }
            })
            .build()
            .map_err(|e| McpError::RemoteTool {
                name,
                reason: e.to_string(),
            })
    }
}

impl ClientInner {
    /// Calls the remote tool `name`, relaying progress and the abort signal.
    async fn call(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext<Value, Value>,
    ) -> Result<Value, ToolError> {
        let arguments = match input {
            Value::Object(arguments) => Some(arguments),
            Value::Null => None,
            other => {
                return Err(ToolError::new(format!(
                    "MCP tool arguments must be a JSON object, got {other}"
                )));
            }
        };
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| ToolError::new(format!("MCP request to tool {name} failed: {e}")))?;
        let mut progress = self.progress.open(handle.progress_token.clone());
        let abort = ctx.abort_signal().clone();
        let response = loop {
            tokio::select! {
                biased;
                response = &mut handle.rx => break Some(response),
                Some(p) = progress.rx.recv() => ctx.progress(p.progress, p.total, p.message.as_deref()),
                () = abort.aborted() => break None,
            }
        };
        let Some(response) = response else {
            let cancel = CancelledNotificationParam::new(
                Some(handle.id.clone()),
                Some("the tool call was aborted".to_owned()),
            );
            if let Err(error) = self.peer.notify_cancelled(cancel).await {
                tracing::debug!(%error, "could not cancel the remote call");
            }
            return Err(ToolError::new(format!(
                "the call of MCP tool {name} was aborted"
            )));
        };
        // Progress sent just before the result.
        while let Ok(p) = progress.rx.try_recv() {
            ctx.progress(p.progress, p.total, p.message.as_deref());
        }
        match response {
            Ok(Ok(ServerResult::CallToolResult(result))) => remote_output(result),
            Ok(Ok(ServerResult::InputRequiredResult(_))) => Err(ToolError::new(format!(
                "MCP tool {name} asked for the user's input, which this client cannot provide"
            ))),
            Ok(Ok(other)) => Err(ToolError::new(format!(
                "MCP tool {name} returned an unexpected result: {}",
                serde_json::to_string(&other).unwrap_or_default()
            ))),
            Ok(Err(error)) => Err(ToolError::new(format!("MCP tool {name} failed: {error}"))),
            Err(_) => Err(ToolError::new(format!(
                "the connection to the MCP server of tool {name} closed"
            ))),
        }
    }
}
