//! [`McpServer`]: a runtime's tools as an MCP server (an rmcp
//! [`ServerHandler`]), served over stdio or any rmcp transport.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::context::McpContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::IntoTransport;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;

use super::McpError;
use super::call::{Call, Elicit, PeerElicitor};
use super::convert::{ServedTool, served_tool};
use super::logging::SessionLog;
use super::request_state::RequestStates;
use super::task_input::{TaskElicitor, TaskInputs};
use super::tasks;
use super::tasks_2025::{self, SessionTasks};
use tool_runtime::{CallOutcome, Runtime, ToolCall};

type RequestContextFn =
    dyn Fn(&RequestContext<RoleServer>) -> tool_core::RequestContext + Send + Sync;

/// Serves a [`Runtime`]'s tools over MCP, with the official `rmcp` crate.
///
/// - `tools/list`: every tool of the runtime, named by its id, with its
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
///   (it suspended, or its tool asks through [`McpContext`] while it runs)
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
    pub(crate) inner: Arc<ServerInner>,
    /// The session's state (its logging level); each HTTP session gets its own.
    pub(crate) session: Arc<SessionLog>,
    /// The 2025-11-25 tasks this session created, for its `tasks/list`.
    pub(crate) session_tasks: Arc<SessionTasks>,
}

pub(crate) struct ServerInner {
    pub(crate) runtime: Runtime,
    tools: Vec<Arc<ServedTool>>,
    by_name: HashMap<String, usize>,
    implementation: Implementation,
    instructions: Option<String>,
    elicitation: bool,
    request_context: Option<Arc<RequestContextFn>>,
    states: RequestStates,
    /// What the tasks running here ask their clients.
    pub(crate) inputs: TaskInputs,
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
        }
    }

    /// The runtime whose tools are served.
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
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
    /// assert_eq!(listed["_meta"], json!({ "strict": false }));
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
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
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
        let (server_end, edge_end) = tokio::io::duplex(LINE_BUFFER);
        let mut edge = tokio::spawn(tasks_2025::line_edge(reader, writer, edge_end));
        let served = self.serve(server_end).await;
        // What the server wrote last still reaches the client; a client
        // that did not close its end is not waited for.
        if tokio::time::timeout(std::time::Duration::from_secs(1), &mut edge)
            .await
            .is_err()
        {
            edge.abort();
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

    /// One `tools/call`, served for `tasks`: a deferred background tool's
    /// call is a task for a client of either task protocol (the response's
    /// handle is SEP-2663's, which the 2025-11-25 path reshapes).
    pub(crate) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        tasks: TaskMode,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let Some(served) = self.served(name) else {
            let message = self
                .inner
                .runtime
                .tools()
                .unknown_tool(name)
                .message()
                .to_owned();
            return Err(ErrorData::invalid_params(message, None));
        };
        let tool = &served.tool;
        let client_tasks = tasks != TaskMode::None;
        let background = tool.definition().background.as_ref().filter(|b| b.enabled);
        // A task at once (deferred), or once its client answered a question
        // on the way (foreground: waited for until then).
        let taskable = client_tasks && background.is_some();
        let as_task = taskable
            && background.is_some_and(|b| b.disposition == tool_core::Disposition::Deferred);
        let call_id = match &request.request_state {
            None => tasks::new_call_id(taskable),
            // The retry of an `input_required` result: the state names the
            // pending call, signed by a server with this key.
            Some(state) => self.inner.states.verify(name, state).ok_or_else(|| {
                ErrorData::invalid_params(
                    format!(
                        "requestState {state:?} does not name a call of tool {name:?} this server asked about: it was never issued, is for another tool, or expired"
                    ),
                    None,
                )
            })?,
        };
        let call = Call {
            runtime: self.inner.runtime.clone(),
            served: Arc::clone(served),
            call_id,
            ct: context.ct.clone(),
            peer: context.peer.clone(),
            progress: context.meta.get_progress_token(),
            // Logging is not part of the 2026-07-28 protocol (SEP-2577).
            log: (!modern(&context)).then(|| Arc::clone(&self.session)),
            wraps_output: served.wraps_output_for(modern(&context)),
            elicit: self.elicit_mode(&context),
            states: self.inner.states.clone(),
            tasks: client_tasks,
        };
        if request.request_state.is_some() {
            // The responses carry the user's answer.
            tracing::debug!(call_id = %call.call_id, "MCP input responses for a pending call");
            return call
                .answered(request.input_responses.unwrap_or_default())
                .await;
        }
        let request_context = self
            .inner
            .request_context
            .as_ref()
            .map(|from_request| from_request(&context))
            .unwrap_or_default();
        let input = request.arguments.map_or(Value::Null, Value::Object);
        let mut tool_call =
            ToolCall::new(call.call_id.clone(), name, input).with_request_context(request_context);
        // Sampling is not part of the 2026-07-28 protocol.
        let sampling = !modern(&context)
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.sampling.is_some());
        if as_task
            && tasks == TaskMode::Extension
            && (call.elicit != Elicit::Unsupported || sampling)
        {
            // A task's questions wait for `tasks/update` (no request is open).
            let asker = TaskElicitor {
                inputs: self.inner.inputs.clone(),
                task_id: call.call_id.clone(),
                forms: call.elicit != Elicit::Unsupported,
                sampling,
            };
            tool_call = tool_call.with_extension(McpContext::new(asker));
        } else if call.elicit == Elicit::Request || sampling {
            // The tool itself may ask this client's user, or its model (`ToolContext::mcp`).
            let asker = PeerElicitor::new(&call, sampling);
            tool_call = tool_call.with_extension(McpContext::new(asker));
        }
        let runtime = self.inner.runtime.clone();
        let task_required = tool
            .definition()
            .mcp
            .as_ref()
            .is_some_and(|mcp| mcp.task_required);
        if task_required && !client_tasks && tasks_2025::peer_declared(&context) {
            // 2025-11-25: a tool whose taskSupport is "required" called
            // without a `task` param is method not found.
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "tool {:?} runs only as a task: call it with a `task` param (its execution.taskSupport is \"required\")",
                    tasks::quote(name)
                ),
                None,
            ));
        }
        if task_required && !client_tasks {
            // Served only as a task (SEP-2663, "Required Capabilities").
            return Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            ));
        }
        if as_task {
            // A task handle at once; a pause (approval) is settled as usual.
            let outcome = runtime.call(tool_call).await;
            if let CallOutcome::BackgroundStarted { task_id } = &outcome {
                return Ok(tasks::started(&runtime, task_id));
            }
            return Ok(call.run(Box::pin(std::future::ready(outcome)), None).await);
        }
        Ok(call
            .run(Box::pin(async move { runtime.call(tool_call).await }), None)
            .await)
    }

    pub(crate) fn served(&self, name: &str) -> Option<&Arc<ServedTool>> {
        self.inner.by_name.get(name).map(|&i| &self.inner.tools[i])
    }

    /// How this request's client can be asked for input.
    fn elicit_mode(&self, context: &RequestContext<RoleServer>) -> Elicit {
        if !self.inner.elicitation {
            return Elicit::Unsupported;
        }
        let form = context
            .client_capabilities()
            .and_then(|caps| caps.elicitation)
            // No mode named means form (2025-06-18).
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if !form {
            return Elicit::Unsupported;
        }
        if modern(context) {
            Elicit::InputRequired
        } else {
            Elicit::Request
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
}

/// The buffer between [`McpServer::serve_lines`]'s edge and the server.
const LINE_BUFFER: usize = 1 << 16;

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

    /// Builds the server; each tool's MCP declaration is computed once, here.
    pub fn build(self) -> McpServer {
        let tools: Vec<Arc<ServedTool>> = self
            .runtime
            .tools()
            .iter()
            .map(|tool| Arc::new(served_tool(tool)))
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
            inner: Arc::new(ServerInner {
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
        let modern = modern(&context);
        let tools = self.inner.tools.iter().map(|t| t.declaration_for(modern));
        Ok(ListToolsResult::with_all_items(tools.collect()))
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
        self.served(name).map(|t| t.declaration.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tasks = if context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks())
        {
            TaskMode::Extension
        } else {
            TaskMode::None
        };
        // Boxed, as every handler with real work here: rmcp spawns each
        // request's future, whose size is that of the largest handler's,
        // and moves it on the way; a box moves as one pointer.
        Box::pin(self.call(request, context, tasks)).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        Box::pin(tasks::get(self, &request.task_id, modern(&context))).await
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
        Box::pin(tasks_2025::custom(self, request, context)).await
    }
}

/// Which task protocol a `tools/call` is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskMode {
    /// No tasks: the request waits for the call's outcome.
    None,
    /// The tasks extension (SEP-2663): questions wait for `tasks/update`.
    Extension,
    /// 2025-11-25's experimental tasks (SEP-1686), asked for by the
    /// request's `task` param: questions are requests to the client.
    Experimental,
}

/// Whether the request's peer speaks the 2026-07-28 protocol or newer.
pub(crate) fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}
