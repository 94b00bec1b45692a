//! Streamable HTTP: rmcp's `StreamableHttpService` behind a small hyper
//! accept loop, bound to loopback by default.

use std::convert::Infallible;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::resumption::SkipReceived;
use super::tasks_2025;
use super::{McpError, McpServer};

type Service = StreamableHttpService<McpServer, LocalSessionManager>;

/// The `Origin`s served by default: pages on this machine.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// Where and how [`McpServer::serve_http`] listens.
///
/// Defaults: `127.0.0.1:8000`, endpoint `/mcp`, and rmcp's
/// [`StreamableHttpServerConfig`] defaults: sessions for clients of the
/// handshake protocols (stateless for 2026-07-28), only loopback `Host`
/// headers accepted (against DNS rebinding), and only loopback `Origin`s
/// (`http://localhost`, `127.0.0.1`, `[::1]`, any port, http or https): a
/// request with another `Origin` is refused with 403, as the MCP
/// specification requires of servers; requests without one (not from a
/// browser) pass. Binding another interface takes an explicit address,
/// serving other host names an explicit [`allowed_hosts`](Self::allowed_hosts)
/// list, and pages of other origins an explicit
/// [`allowed_origins`](Self::allowed_origins) list.
///
/// ```
/// use tool_mcp::HttpOptions;
///
/// let options = HttpOptions::default();
/// assert_eq!(options.addr().to_string(), "127.0.0.1:8000");
/// let options = HttpOptions::new(([0, 0, 0, 0], 9000).into())
///     .path("/tools/mcp")
///     .allowed_hosts(["tools.example.com"])
///     .allowed_origins(["https://app.example.com:443"]);
/// assert_eq!(options.endpoint(), "/tools/mcp");
/// ```
#[must_use]
#[derive(Clone)]
pub struct HttpOptions {
    addr: SocketAddr,
    path: String,
    config: StreamableHttpServerConfig,
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("path", &self.path)
            .field("allowed_hosts", &self.config.allowed_hosts)
            .field("allowed_origins", &self.config.allowed_origins)
            .finish_non_exhaustive()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions::new(SocketAddr::from((Ipv4Addr::LOCALHOST, 8000)))
    }
}

impl HttpOptions {
    /// Listens on `addr` (port 0: any free port), endpoint `/mcp`.
    pub fn new(addr: SocketAddr) -> Self {
        HttpOptions {
            addr,
            path: "/mcp".to_owned(),
            config: StreamableHttpServerConfig::default().with_allowed_origins(LOOPBACK_ORIGINS),
        }
    }

    /// The address to listen on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint path.
    pub fn endpoint(&self) -> &str {
        &self.path
    }

    /// Serves MCP at `path` (default `/mcp`); other paths answer 404.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The `Host` names (or `host:port`) accepted, instead of loopback only.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config = self.config.with_allowed_hosts(hosts);
        self
    }

    /// The `Origin`s accepted (`scheme://host:port`, `:*` for any port,
    /// `"null"` for a browser's opaque origin), instead of loopback only.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config = self.config.with_allowed_origins(origins);
        self
    }

    /// rmcp's transport settings (sessions, JSON responses, keep-alive,
    /// allowed hosts and origins...), replacing the defaults.
    pub fn config(mut self, config: StreamableHttpServerConfig) -> Self {
        self.config = config;
        self
    }
}

/// A running streamable HTTP server; see [`McpServer::serve_http`].
/// Dropping the handle leaves the server running; [`shutdown`](Self::shutdown) stops it.
///
/// ```
/// use tool_runtime::Runtime;
/// use tool_mcp::{HttpOptions, McpServer};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = McpServer::new(Runtime::builder().build().unwrap())
///     .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
///     .await
///     .unwrap();
/// assert!(server.local_addr().ip().is_loopback());
/// assert_eq!(server.url(), format!("http://{}/mcp", server.local_addr()));
/// server.shutdown();
/// server.wait().await.unwrap();
/// # });
/// ```
#[derive(Debug)]
pub struct HttpServer {
    local_addr: SocketAddr,
    path: String,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// The address it listens on (with the actual port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The MCP endpoint URL, e.g. `http://127.0.0.1:8000/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr, self.path)
    }

    /// Stops accepting connections and ends the sessions.
    pub fn shutdown(&self) {
        self.stop.cancel();
    }

    /// Waits until the server has stopped (after [`shutdown`](Self::shutdown)).
    pub async fn wait(self) -> Result<(), McpError> {
        Ok(self.task.await?)
    }
}

impl McpServer {
    /// Serves over streamable HTTP at `options` (by default
    /// `http://127.0.0.1:8000/mcp`), in a background task, until
    /// [`HttpServer::shutdown`].
    ///
    /// ```no_run
    /// use tool_runtime::Runtime;
    /// use tool_mcp::{HttpOptions, McpServer};
    ///
    /// # async fn run(runtime: Runtime) -> Result<(), tool_mcp::McpError> {
    /// let server = McpServer::new(runtime)
    ///     .serve_http(HttpOptions::new(([127, 0, 0, 1], 0).into()))
    ///     .await?;
    /// println!("MCP endpoint: {}", server.url());
    /// tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    /// server.shutdown();
    /// server.wait().await
    /// # }
    /// ```
    pub async fn serve_http(&self, options: HttpOptions) -> Result<HttpServer, McpError> {
        let listener = TcpListener::bind(options.addr).await?;
        let local_addr = listener.local_addr()?;
        let stop = options.config.cancellation_token.clone();
        let server = self.clone();
        let service: Service = StreamableHttpService::new(
            // Each session has its own logging level.
            move || Ok(server.new_session()),
            Arc::new(LocalSessionManager::default()),
            options.config,
        );
        let path: Arc<str> = Arc::from(options.path.as_str());
        tracing::info!(%local_addr, path = %path, "serving MCP over streamable HTTP");
        let task = tokio::spawn(accept(listener, service, path, stop.clone()));
        Ok(HttpServer {
            local_addr,
            path: options.path,
            stop,
            task,
        })
    }
}

async fn accept(listener: TcpListener, service: Service, path: Arc<str>, stop: CancellationToken) {
    let tasks_sessions = Arc::new(TasksSessions::default());
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "could not accept an HTTP connection");
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let (service, path, stop) = (service.clone(), Arc::clone(&path), stop.clone());
        let tasks_sessions = Arc::clone(&tasks_sessions);
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let (service, path) = (service.clone(), Arc::clone(&path));
                let tasks_sessions = Arc::clone(&tasks_sessions);
                async move {
                    Ok::<_, Infallible>(route(&service, &path, &tasks_sessions, request).await)
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "HTTP connection ended with an error");
                    }
                }
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
}

/// The largest request body read (a JSON-RPC message): 4 MiB.
const MAX_BODY: usize = 4 * 1024 * 1024;

async fn route(
    service: &Service,
    path: &str,
    tasks_sessions: &TasksSessions,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if request.uri().path() != path {
        return plain(StatusCode::NOT_FOUND, "Not Found");
    }
    if request.method() == hyper::Method::DELETE
        && let Some(session) = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
    {
        tasks_sessions.remove(session);
    }
    if request.method() != hyper::Method::POST {
        let resumed_after = request
            .headers()
            .get("last-event-id")
            .and_then(|id| id.to_str().ok())
            .map(SkipReceived::new);
        let response = service.handle(request).await;
        return match resumed_after {
            Some(mut skip) => response.map(|body| body.map_frame(move |f| skip.frame(f)).boxed()),
            None => response,
        };
    }
    // The body is read here, so that a message rmcp would answer with the
    // wrong JSON-RPC error (or none) is answered as the specification says.
    let (parts, body) = request.into_parts();
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "request body over 4 MiB"),
    };
    let mut message: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(error) => {
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                serde_json::Value::Null,
                -32700,
                &format!("Parse error: {error}"),
            );
        }
    };
    if let Some(response) = protocol_error(&message) {
        return response;
    }
    // What rmcp's types would drop of 2025-11-25's tasks is kept, and a
    // session that declared them has its task requests renamed.
    let seen = tasks_2025::inbound(&mut message);
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok());
    let renamed =
        session.is_some_and(|id| tasks_sessions.contains(id)) && tasks_2025::rename(&mut message);
    let mut parts = parts;
    let body = if seen.changed || renamed {
        let body = Bytes::from(message.to_string());
        parts
            .headers
            .insert(hyper::header::CONTENT_LENGTH, body.len().into());
        body
    } else {
        body
    };
    let response = service
        .handle(Request::from_parts(parts, Full::new(body)))
        .await;
    let created = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok());
    match created {
        // Only a session can have its requests renamed.
        Some(session) if seen.declares_tasks => {
            tasks_sessions.insert(session);
            with_server_tasks(response).await
        }
        _ => response,
    }
}

/// The header naming a streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Most sessions remembered as having declared 2025-11-25 tasks (the
/// oldest are forgotten first: their task requests are then refused).
const MAX_TASKS_SESSIONS: usize = 10_000;

/// The sessions whose `initialize` declared 2025-11-25 tasks: their task
/// requests are [renamed](tasks_2025::rename).
#[derive(Debug, Default)]
struct TasksSessions(
    std::sync::Mutex<(
        std::collections::HashSet<String>,
        std::collections::VecDeque<String>,
    )>,
);

impl TasksSessions {
    fn insert(&self, session: &str) {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *guard;
        if !set.insert(session.to_owned()) {
            return;
        }
        order.push_back(session.to_owned());
        if order.len() > MAX_TASKS_SESSIONS
            && let Some(oldest) = order.pop_front()
        {
            set.remove(&oldest);
        }
    }

    fn contains(&self, session: &str) -> bool {
        let guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.contains(session)
    }

    fn remove(&self, session: &str) {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *guard;
        if set.remove(session) {
            order.retain(|s| s != session);
        }
    }
}

/// An `initialize` response (JSON, or an SSE stream) with the server's
/// 2025-11-25 `capabilities.tasks` in its result.
async fn with_server_tasks(
    response: Response<BoxBody<Bytes, Infallible>>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let sse = response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let (mut parts, body) = response.into_parts();
    if sse {
        let mut events = InitializeEvents::default();
        return Response::from_parts(parts, body.map_frame(move |f| events.frame(f)).boxed());
    }
    // A JSON response: one message, complete.
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let body = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(mut message) => match tasks_2025::outbound_initialize(&mut message) {
            true => Bytes::from(message.to_string()),
            false => bytes,
        },
        Err(_) => bytes,
    };
    parts.headers.remove(hyper::header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(body).boxed())
}

/// Rewrites the first message event of an SSE stream (the `initialize`
/// result) with [`tasks_2025::outbound_initialize`]; every other byte
/// passes unchanged.
#[derive(Debug, Default)]
struct InitializeEvents {
    partial: Vec<u8>,
    done: bool,
}

impl InitializeEvents {
    fn frame(&mut self, frame: hyper::body::Frame<Bytes>) -> hyper::body::Frame<Bytes> {
        match frame.into_data() {
            Ok(data) if !self.done => hyper::body::Frame::data(self.data(&data)),
            Ok(data) => hyper::body::Frame::data(data),
            Err(frame) => frame,
        }
    }

    fn data(&mut self, data: &[u8]) -> Bytes {
        self.partial.extend_from_slice(data);
        let mut out = Vec::with_capacity(self.partial.len());
        let mut start = 0;
        while !self.done {
            let Some(end) = self.partial[start..]
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|at| start + at + 2)
            else {
                break;
            };
            let event = &self.partial[start..end];
            match std::str::from_utf8(event).ok().and_then(rewrite_event) {
                Some(rewritten) => {
                    out.extend_from_slice(rewritten.as_bytes());
                    self.done = true;
                }
                None => out.extend_from_slice(event),
            }
            start = end;
        }
        if self.done {
            out.extend_from_slice(&self.partial[start..]);
            self.partial = Vec::new();
        } else {
            self.partial.drain(..start);
        }
        Bytes::from(out)
    }
}

/// The event with its `data` (a JSON-RPC message) rewritten, when it
/// carries an `initialize` result.
fn rewrite_event(event: &str) -> Option<String> {
    let mut out = String::with_capacity(event.len() + 96);
    let mut rewritten = false;
    for line in event.split_inclusive('\n') {
        let data = line
            .strip_prefix("data:")
            .map(|d| d.trim_end_matches(['\r', '\n']).trim_start());
        let message = data.and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok());
        match message {
            Some(mut message) if !rewritten => {
                if tasks_2025::outbound_initialize(&mut message) {
                    out.push_str(&format!("data: {message}\n"));
                    rewritten = true;
                } else {
                    out.push_str(line);
                }
            }
            _ => out.push_str(line),
        }
    }
    rewritten.then_some(out)
}

/// The JSON-RPC error for a `tools/call` whose params are not a tool name
/// with an object of arguments (`-32602`, with the request's id); `None`
/// for anything else.
fn protocol_error(message: &serde_json::Value) -> Option<Response<BoxBody<Bytes, Infallible>>> {
    if message.get("method").and_then(serde_json::Value::as_str) != Some("tools/call") {
        return None;
    }
    let id = message.get("id").cloned()?;
    let problem = match message.get("params") {
        None => "tools/call needs params: the tool's `name` and its `arguments`",
        Some(serde_json::Value::Object(params)) => {
            match (params.get("name"), params.get("arguments")) {
                (Some(serde_json::Value::String(_)), None | Some(serde_json::Value::Object(_))) => {
                    return None;
                }
                (Some(serde_json::Value::String(_)), Some(_)) => {
                    "tools/call `arguments` must be an object"
                }
                (None, _) => "tools/call params need the tool's `name`",
                (Some(_), _) => "tools/call `name` must be a string",
            }
        }
        Some(_) => "tools/call params must be an object",
    };
    Some(json_rpc_error(
        StatusCode::OK,
        id,
        -32602,
        &format!("Invalid params: {problem}"),
    ))
}

fn json_rpc_error(
    status: StatusCode,
    id: serde_json::Value,
    code: i64,
    message: &str,
) -> Response<BoxBody<Bytes, Infallible>> {
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(chunks: &[&str]) -> String {
        let mut events = InitializeEvents::default();
        chunks
            .iter()
            .map(|chunk| {
                let frame = events.frame(hyper::body::Frame::data(Bytes::from(chunk.to_string())));
                String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
            })
            .collect()
    }

    #[test]
    fn an_initialize_result_gets_the_servers_tasks_wherever_the_frames_split() {
        let result = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}"#;
        let stream =
            format!("data: \nid: 0\nretry: 3000\n\ndata: {result}\nid: 1\n\ndata: after\n\n");
        let whole = rewritten(&[&stream]);
        let bytes: Vec<String> = stream.chars().map(String::from).collect();
        let bytes: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(rewritten(&bytes), whole);
        assert!(
            whole.starts_with("data: \nid: 0\nretry: 3000\n\n"),
            "{whole}"
        );
        assert!(whole.ends_with("\nid: 1\n\ndata: after\n\n"), "{whole}");
        let message = whole
            .lines()
            .find_map(|line| line.strip_prefix("data: {"))
            .expect("the result");
        let message: serde_json::Value = serde_json::from_str(&format!("{{{message}")).unwrap();
        assert!(
            message["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object()
        );
        // Any other first message passes unchanged.
        let other = "data: {\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{\"code\":-32600,\"message\":\"no\"}}\n\n";
        assert_eq!(rewritten(&[other]), other);
        assert_eq!(rewritten(&["data: not json\n\n"]), "data: not json\n\n");
    }
}
