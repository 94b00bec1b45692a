//! [`McpServer`]: a runtime's tools as an MCP server (an rmcp
//! [`ServerHandler`]), served over stdio or any rmcp transport.

use std::fmt;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::IntoTransport;
use rmcp::{ErrorData, ServerHandler, ServiceExt};

use crate::McpError;
use crate::compat_2025::{self, SessionTasks, StdioEdge};
use crate::convert::{ServedTool, served_tool};
use crate::dispatch;
use crate::generation::{Protocol, modern};
use crate::inbound;
use crate::logging::SessionLog;
use crate::request_state::RequestStates;
use crate::shared::{RequestContextFn, Shared};
use crate::stdio;
use crate::task_input::TaskInputs;
use crate::tasks;
use tool_core::Tool;
use tool_runtime::Runtime;

/// Serves a [`Runtime`]'s tools over MCP, with the official `rmcp` crate.
///
/// - `tools/list`: every tool of the runtime that runs here (not a
///   declaration-only tool, built without an execute function, whose result
///   the application gives: it is neither listed nor called), named by its id, with its
///   title, description, input schema, output schema (wrapped as
///   `{"result": ...}` when its root is not an object, since MCP requires
///   object roots), annotations as declared in `mcp(...)`, and `_meta`
///   (the declared entries plus `"strict": bool`).
/// - `tools/call` runs [`Runtime::call`]: the whole pipeline (validation,
///   hooks, events, approval, suspend, background, abort). Output comes
///   back as `structuredContent` plus text (or the `to_model_output`
///   content); failures (invalid arguments, tool errors, panics) as
///   `isError: true` results carrying the model-facing message; an unknown
///   tool as a JSON-RPC "invalid params" error.
/// - `notifications/cancelled` fires the call's abort signal; progress the
///   tool reports reaches the client as `notifications/progress` when the
///   request carries a progress token.
/// - A call that needs approval, or that suspends, asks the user through
///   form elicitation when the client supports it (an `elicitation/create`
///   request, or on protocol 2026-07-28 an `input_required` result);
///   otherwise the result says what is pending, and the call stays in the
///   runtime's store for [`Runtime::approve`] / [`Runtime::resume`].
/// - For a client of the tasks extension (SEP-2663), a background tool's
///   call is a task: `tasks/get` reads it from the store; a task that asks
///   (it suspended, or its tool asks through [`McpContext`](crate::McpContext) while it runs)
///   is `input_required` with its questions, answered by `tasks/update`;
///   `tasks/cancel` fires its abort signal.
/// - For a 2025-11-25 client that declares `capabilities.tasks` (over
///   [`serve_stdio`](Self::serve_stdio), [`serve_lines`](Self::serve_lines)
///   or [`serve_http`](Self::serve_http)), a call with a `task` param of a
///   deferred background tool is a task of that protocol (SEP-1686):
///   `tasks/get`, `tasks/result` (waits, asking the task's questions),
///   `tasks/list` (this session's), `tasks/cancel` and
///   `notifications/tasks/status`, from the same store.
///
/// Cheap to clone; clones serve the same runtime.
///
/// ```no_run
/// use tool_core::{tool, ToolError};
/// use tool_runtime::Runtime;
/// use tool_mcp::McpServer;
///
/// /// Add two numbers
/// #[tool]
/// async fn add(a: f64, b: f64) -> Result<f64, ToolError> {
///     Ok(a + b)
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::builder().tool(AddTool).build()?;
/// McpServer::builder(runtime)
///     .name("calculator", "1.0.0")
///     .build()
///     .serve_stdio() // until stdin closes
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    pub(crate) inner: Arc<Shared>,
    /// The session's state (its logging level); each HTTP session gets its own.
    pub(crate) session: Arc<SessionLog>,
    /// The 2025-11-25 tasks this session created, for its `tasks/list`.
    pub(crate) session_tasks: Arc<SessionTasks>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("runtime", &self.inner.runtime)
            .field("name", &self.inner.implementation.name)
            .field("elicitation", &self.inner.elicitation)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for `runtime` with the defaults (see [`McpServerBuilder`]).
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_mcp::McpServer;
    ///
    /// let server = McpServer::new(Runtime::builder().build().unwrap());
    /// assert!(server.tools().is_empty());
    /// ```
    pub fn new(runtime: Runtime) -> Self {
        McpServer::builder(runtime).build()
    }

    /// Starts configuring a server for `runtime`.
    pub fn builder(runtime: Runtime) -> McpServerBuilder {
        McpServerBuilder {
            runtime,
            name: "tool-runtime".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            title: None,
            instructions: None,
            elicitation: true,
            request_context: None,
            request_state_key: None,
            request_state_lifetime: REQUEST_STATE_LIFETIME,
            max_message_size: inbound::MAX_MESSAGE,
            structured_output: std::collections::HashSet::new(),
            served: None,
        }
    }

    /// The runtime whose tools are served.
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// The largest message a client may send, on either transport
    /// ([`McpServerBuilder::max_message_size`]).
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_mcp::McpServer;
    ///
    /// let server = McpServer::new(Runtime::builder().build().unwrap());
    /// assert_eq!(server.max_message_size(), 4 * 1024 * 1024);
    /// ```
    pub fn max_message_size(&self) -> usize {
        self.inner.max_message_size
    }

    /// The tools as `tools/list` declares them.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{McpOptions, Tool, ToolError};
    /// use tool_runtime::Runtime;
    /// use tool_mcp::McpServer;
    ///
    /// let count = Tool::builder("count")
    ///     .description("Counts the items")
    ///     .output_schema(json!({ "type": "integer" }))
    ///     .mcp(McpOptions::default().title("Counter").read_only(true))
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!(3)) })
    ///     .build()
    ///     .unwrap();
    /// let server = McpServer::new(Runtime::builder().tool(count).build().unwrap());
    /// let listed = serde_json::to_value(&server.tools()[0]).unwrap();
    /// assert_eq!(listed["title"], "Counter");
    /// assert_eq!(listed["annotations"], json!({ "title": "Counter", "readOnlyHint": true }));
    /// // Before 2026-07-28, MCP output schemas have an object root: others
    /// // are wrapped (peers of 2026-07-28 get them as declared).
    /// assert_eq!(listed["outputSchema"]["properties"]["result"], json!({ "type": "integer" }));
    /// assert_eq!(listed["_meta"], json!({ "tool-runtime/strict": false }));
    /// ```
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.inner
            .tools
            .iter()
            .map(|t| t.declaration.clone())
            .collect()
    }

    /// Serves over stdin/stdout until stdin closes (or the client goes
    /// away). Only JSON-RPC goes to stdout: send logs to stderr.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let (stdin, stdout) = stdio::standard_streams();
        self.serve_lines(stdin, stdout).await
    }

    /// Serves newline-delimited JSON-RPC (stdio's framing) read from
    /// `reader` and written to `writer`, until `reader` ends: as
    /// [`serve_stdio`](Self::serve_stdio) does, with 2025-11-25's tasks for
    /// the clients that declare them (which [`serve`](Self::serve) cannot
    /// see through rmcp's types).
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_mcp::McpServer;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    /// let (reader, writer) = tokio::io::split(server_end);
    /// let server = McpServer::new(Runtime::builder().build().unwrap());
    /// let serving = tokio::spawn(server.serve_lines(reader, writer));
    /// drop(client_end); // the client went away
    /// assert!(serving.await.unwrap().is_err()); // it never initialized
    /// # });
    /// ```
    pub async fn serve_lines<R, W>(self, reader: R, writer: W) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        // 2025-11-25's tasks need lines rewritten in front of rmcp (`compat_2025`).
        let limit = self.max_message_size();
        let (server_end, mut relay) = stdio::relay(reader, writer, limit, StdioEdge::default());
        let served = self.serve(server_end).await;
        // What the server wrote last still reaches the client; a client
        // that did not close its end is not waited for.
        if tokio::time::timeout(std::time::Duration::from_secs(1), &mut relay)
            .await
            .is_err()
        {
            relay.abort();
        }
        served
    }

    /// Serves over any rmcp transport (a `(reader, writer)` pair, a duplex
    /// stream, ...) until it closes.
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_mcp::McpServer;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    /// let server = McpServer::new(Runtime::builder().build().unwrap());
    /// let serving = tokio::spawn(server.serve(server_end));
    /// drop(client_end); // the client went away
    /// assert!(serving.await.unwrap().is_err()); // it never initialized
    /// # });
    /// ```
    pub async fn serve<T, E, A>(self, transport: T) -> Result<(), McpError>
    where
        T: IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let running = ServiceExt::serve(self, transport)
            .await
            .map_err(|e| McpError::Initialize(Box::new(e)))?;
        let reason = running.waiting().await?;
        tracing::debug!(?reason, "MCP session ended");
        Ok(())
    }

    /// The same server for a new session: its tools, with a logging level of its own.
    pub(crate) fn new_session(&self) -> McpServer {
        McpServer {
            inner: Arc::clone(&self.inner),
            session: Arc::default(),
            session_tasks: Arc::default(),
        }
    }
}

/// Configures an [`McpServer`].
///
/// ```
/// use tool_runtime::Runtime;
/// use tool_mcp::McpServer;
///
/// let server = McpServer::builder(Runtime::builder().build().unwrap())
///     .name("weather", "2.1.0")
///     .title("Weather tools")
///     .instructions("Call weather-tool with a city name.")
///     .elicitation(false) // pending calls are always reported, never asked about
///     .request_context(|request| {
///         tool_core::RequestContext::new().with("mcpRequestId", request.id.to_string())
///     })
///     .build();
/// # let _ = server;
/// ```
#[must_use]
pub struct McpServerBuilder {
    runtime: Runtime,
    name: String,
    version: String,
    title: Option<String>,
    instructions: Option<String>,
    elicitation: bool,
    request_context: Option<Arc<RequestContextFn>>,
    request_state_key: Option<Vec<u8>>,
    request_state_lifetime: std::time::Duration,
    max_message_size: usize,
    structured_output: std::collections::HashSet<String>,
    served: Option<Arc<ToolFilter>>,
}

/// Which of the runtime's tools a server serves ([`McpServerBuilder::serve_only`]).
type ToolFilter = dyn Fn(&Tool) -> bool + Send + Sync;

/// How long an `input_required` result's `requestState` is accepted by default.
const REQUEST_STATE_LIFETIME: std::time::Duration = std::time::Duration::from_secs(60 * 60);

impl fmt::Debug for McpServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl McpServerBuilder {
    /// The server's name and version in `serverInfo` (default: `tool-runtime`
    /// and this crate's version).
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// A display title in `serverInfo`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Instructions for the client's model, sent at initialization.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Whether approvals and resume data are asked for through elicitation
    /// when the client supports it (default: true). When false, or when the
    /// client cannot elicit, such calls return a result saying what is
    /// pending and stay in the runtime's store.
    pub fn elicitation(mut self, enabled: bool) -> Self {
        self.elicitation = enabled;
        self
    }

    /// Builds each call's request context from the MCP request (its `_meta`,
    /// and over HTTP its extensions, such as the request's headers).
    /// Default: an empty request context.
    pub fn request_context(
        mut self,
        from_request: impl Fn(&RequestContext<RoleServer>) -> tool_core::RequestContext
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.request_context = Some(Arc::new(from_request));
        self
    }

    /// The key that signs the `requestState` of `input_required` results
    /// (HMAC-SHA256; at least 32 random bytes), so that the client's retry
    /// with the user's answer is accepted by any server with this key: this
    /// one after a restart, or another instance sharing the runtime's store.
    /// Default: a random key per server, so only this server, until it
    /// stops, accepts its states. A client cannot forge a state for a call
    /// it was not asked about.
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_mcp::McpServer;
    ///
    /// let key = std::env::var("MCP_STATE_KEY").unwrap_or_else(|_| "a shared secret of 32+ bytes....".into());
    /// let server = McpServer::builder(Runtime::builder().build().unwrap())
    ///     .request_state_key(key)
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn request_state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.request_state_key = Some(key.into());
        self
    }

    /// How long the `requestState` of an `input_required` result is
    /// accepted (default one hour).
    pub fn request_state_lifetime(mut self, lifetime: std::time::Duration) -> Self {
        self.request_state_lifetime = lifetime;
        self
    }

    /// The largest message a client may send, in bytes (default 4 MiB), on
    /// both transports: over HTTP a larger body is answered `413`; over
    /// stdio a longer line is answered with a JSON-RPC error (`-32600`,
    /// id `null`) and skipped up to its newline without being buffered,
    /// and the next message is served. Either way the answer names this
    /// setting.
    ///
    /// ```
    /// use tool_runtime::Runtime;
    /// use tool_mcp::McpServer;
    ///
    /// let server = McpServer::builder(Runtime::builder().build().unwrap())
    ///     .max_message_size(16 * 1024 * 1024)
    ///     .build();
    /// assert_eq!(server.max_message_size(), 16 * 1024 * 1024);
    /// ```
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Serves the raw output of tool `tool_id` as `structuredContent` (and
    /// its `outputSchema`) although the tool maps its output with
    /// `to_model_output`. By default such a tool's results carry its model
    /// output only, as a model reads it; opting in shows the MCP client
    /// everything `to_model_output` left out (a token, an internal id), so
    /// opt in only a tool whose whole output the client may see.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ModelOutput, Tool, ToolError};
    /// use tool_runtime::Runtime;
    /// use tool_mcp::McpServer;
    ///
    /// let report = Tool::builder("report").description("Sales report")
    ///     .output_schema(json!({ "type": "object", "properties": { "total": { "type": "number" } } }))
    ///     .to_model_output(|output| ModelOutput::text(format!("Total: {}", output["total"])))
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!({ "total": 12 })) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(report).build().unwrap();
    /// assert!(McpServer::new(runtime.clone()).tools()[0].output_schema.is_none());
    /// let opted_in = McpServer::builder(runtime).structured_output("report").build();
    /// assert!(opted_in.tools()[0].output_schema.is_some());
    /// ```
    pub fn structured_output(mut self, tool_id: impl Into<String>) -> Self {
        self.structured_output.insert(tool_id.into());
        self
    }

    /// Serves only the runtime's tools that `serve` accepts (by default,
    /// every tool it can run): the others are neither listed nor callable
    /// (a call to one is answered as a call to an unknown tool), though
    /// they stay the runtime's for its other users. A public server next
    /// to an internal one on the same runtime and store, say, the public
    /// one serving the read-only tools. The last filter given wins.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{McpOptions, Tool, ToolError};
    /// use tool_mcp::McpServer;
    /// use tool_runtime::Runtime;
    ///
    /// let tool = |id: &str, read_only: bool| Tool::builder(id).description("A tool")
    ///     .mcp(McpOptions::default().read_only(read_only))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder()
    ///     .tool(tool("lookup", true))
    ///     .tool(tool("refund", false))
    ///     .build().unwrap();
    /// let public = McpServer::builder(runtime.clone())
    ///     .serve_only(|tool| tool.definition().mcp.as_ref().is_some_and(|mcp| mcp.annotations.read_only_hint == Some(true)))
    ///     .build();
    /// let names: Vec<_> = public.tools().into_iter().map(|t| t.name.to_string()).collect();
    /// assert_eq!(names, ["lookup"]);
    /// let by_id = McpServer::builder(runtime).serve_tools(["refund"]).build();
    /// assert_eq!(by_id.tools()[0].name, "refund");
    /// ```
    pub fn serve_only(mut self, serve: impl Fn(&Tool) -> bool + Send + Sync + 'static) -> Self {
        self.served = Some(Arc::new(serve));
        self
    }

    /// Serves only the runtime's tools with these ids (see
    /// [`serve_only`](Self::serve_only)).
    pub fn serve_tools<I, S>(self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let ids: std::collections::HashSet<String> = ids.into_iter().map(Into::into).collect();
        self.serve_only(move |tool| ids.contains(tool.id()))
    }

    /// Builds the server; each tool's MCP declaration is computed once, here.
    pub fn build(self) -> McpServer {
        let tools: Vec<Arc<ServedTool>> = self
            .runtime
            .tools()
            .iter()
            // A declaration-only tool runs in the application: served, its
            // calls would only wait for a result no MCP client can give.
            .filter(|tool| tool.has_execute())
            .filter(|tool| self.served.as_ref().is_none_or(|serve| serve(tool)))
            .map(|tool| {
                let opted_in = self.structured_output.contains(tool.id());
                Arc::new(served_tool(tool, opted_in))
            })
            .collect();
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.declaration.name.to_string(), i))
            .collect();
        let mut implementation = Implementation::new(self.name, self.version);
        implementation.title = self.title;
        McpServer {
            session: Arc::default(),
            session_tasks: Arc::default(),
            inner: Arc::new(Shared {
                runtime: self.runtime,
                tools,
                by_name,
                implementation,
                instructions: self.instructions,
                elicitation: self.elicitation,
                request_context: self.request_context,
                states: RequestStates::new(
                    self.request_state_key
                        .unwrap_or_else(RequestStates::random_key),
                    self.request_state_lifetime,
                ),
                inputs: TaskInputs::default(),
                max_message_size: self.max_message_size,
            }),
        }
    }
}

impl ServerHandler for McpServer {
    #[allow(
        deprecated,
        reason = "MCP logging (SEP-2577 deprecates it; older peers use it)"
    )]
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .enable_tasks()
            .build();
        let mut config =
            ServerConfig::new(capabilities).with_server_info(self.inner.implementation.clone());
        if let Some(instructions) = &self.inner.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(self.inner.list_tools(modern(&context)))
    }

    #[allow(
        deprecated,
        reason = "MCP logging (SEP-2577 deprecates it; older peers use it)"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.set(request.level);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.inner.served(name).map(|t| t.declaration.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let protocol = Protocol::of_call(&context, self.inner.elicitation);
        // Boxed, as every handler with real work here: rmcp spawns each
        // request's future, whose size is that of the largest handler's,
        // and moves it on the way; a box moves as one pointer.
        Box::pin(dispatch::call(
            &self.inner,
            &self.session,
            request,
            context,
            protocol,
        ))
        .await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        Box::pin(tasks::get(&self.inner, &request.task_id, modern(&context))).await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(tasks::update(
            &self.inner.runtime,
            &self.inner.inputs,
            &request.task_id,
            &request.input_responses,
        ))
        .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(tasks::cancel(&self.inner.runtime, &request.task_id)).await
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        Box::pin(compat_2025::custom(
            &self.inner,
            &self.session,
            &self.session_tasks,
            request,
            context,
        ))
        .await
    }
}
