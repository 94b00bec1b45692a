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

use crate::compat_2025::{self, HttpEdge};
use crate::inbound::{self, Refusal};
use crate::resumption::SkipReceived;
use crate::{McpError, McpServer};

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
    max_sessions: usize,
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("path", &self.path)
            .field("allowed_hosts", &self.config.allowed_hosts)
            .field("allowed_origins", &self.config.allowed_origins)
            .field("max_sessions", &self.max_sessions)
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
            max_sessions: MAX_SESSIONS,
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

    /// The most live sessions the server holds (default 10,000: about
    /// 550 MiB at the 56 KiB an idle session takes, BENCHMARKS.md). An
    /// `initialize` beyond it is answered `503 Service Unavailable` naming
    /// this setting; a session ends with its client's `DELETE` or when it
    /// has been idle too long (rmcp's keep-alive).
    ///
    /// ```
    /// use tool_mcp::HttpOptions;
    ///
    /// let options = HttpOptions::new(([127, 0, 0, 1], 0).into()).max_sessions(500);
    /// # drop(options);
    /// ```
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
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
        let sessions = Arc::new(LocalSessionManager::default());
        let service: Service = StreamableHttpService::new(
            // Each session has its own logging level.
            move || Ok(server.new_session()),
            Arc::clone(&sessions),
            options.config,
        );
        let path: Arc<str> = Arc::from(options.path.as_str());
        tracing::info!(%local_addr, path = %path, "serving MCP over streamable HTTP");
        let limits = Arc::new(Limits {
            max_message: self.max_message_size(),
            max_sessions: options.max_sessions,
            sessions,
        });
        let task = tokio::spawn(accept(listener, service, path, limits, stop.clone()));
        Ok(HttpServer {
            local_addr,
            path: options.path,
            stop,
            task,
        })
    }
}

/// Live sessions held at most by default: an idle session takes about
/// 56 KiB (BENCHMARKS.md, "Memory per idle MCP session"), so 10,000 is
/// about 550 MiB.
const MAX_SESSIONS: usize = 10_000;

/// What the server refuses before rmcp reads a request.
struct Limits {
    /// The largest JSON-RPC message read.
    max_message: usize,
    /// The most live sessions.
    max_sessions: usize,
    /// rmcp's sessions, counted against `max_sessions`.
    sessions: Arc<LocalSessionManager>,
}

async fn accept(
    listener: TcpListener,
    service: Service,
    path: Arc<str>,
    limits: Arc<Limits>,
    stop: CancellationToken,
) {
    let edge = Arc::new(HttpEdge::default());
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
        let (edge, limits) = (Arc::clone(&edge), Arc::clone(&limits));
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let (service, path) = (service.clone(), Arc::clone(&path));
                let (edge, limits) = (Arc::clone(&edge), Arc::clone(&limits));
                async move { Ok::<_, Infallible>(route(&service, &path, &edge, &limits, request).await) }
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

async fn route(
    service: &Service,
    path: &str,
    edge: &HttpEdge,
    limits: &Limits,
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
        edge.closed(session);
    }
    if request.method() != hyper::Method::POST {
        let resumed_after = request
            .headers()
            .get("last-event-id")
            .and_then(|id| id.to_str().ok())
            .map(SkipReceived::new);
        let mut response = service.handle(request).await;
        // A session's DELETE: 204, as clients expect (rmcp answers 202,
        // on which the Python SDK warns).
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        return match resumed_after {
            Some(mut skip) => response.map(|body| body.map_frame(move |f| skip.frame(f)).boxed()),
            None => response,
        };
    }
    // The body is read here, so that a message rmcp would answer with the
    // wrong JSON-RPC error (or none) is answered as the specification says.
    let (parts, body) = request.into_parts();
    let max_message = limits.max_message;
    let body = match http_body_util::Limited::new(body, max_message)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Refusal::too_large(max_message),
            );
        }
    };
    let mut message: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(error) => return refused(StatusCode::BAD_REQUEST, &Refusal::parse_error(&error)),
    };
    if let Some(refusal) = inbound::check(&message) {
        // Invalid params answer a valid request; the rest is a bad request.
        let status = if refusal.code == -32602 {
            StatusCode::OK
        } else {
            StatusCode::BAD_REQUEST
        };
        return refused(status, &refusal);
    }
    // 2025-11-25's tasks, which rmcp does not model: what its types would
    // drop is kept, and a session that declared them has its task requests
    // renamed (`compat_2025`).
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok());
    let initializes =
        message.get("method").and_then(serde_json::Value::as_str) == Some("initialize");
    if session.is_none()
        && initializes
        && limits.sessions.sessions.read().await.len() >= limits.max_sessions
    {
        return plain_owned(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the server holds its most live sessions ({}): try again later, or raise HttpOptions::max_sessions",
                limits.max_sessions
            ),
        );
    }
    let posted = edge.request(&mut message, session);
    let mut parts = parts;
    let body = if posted.changed {
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
        Some(session) if edge.opened(posted, session) => {
            compat_2025::with_server_tasks(response).await
        }
        _ => response,
    }
}

/// The header naming a streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The JSON-RPC error for a `tools/call` whose params are not a tool name
/// with an object of arguments (`-32602`, with the request's id); `None`
/// for anything else.
fn refused(status: StatusCode, refusal: &Refusal) -> Response<BoxBody<Bytes, Infallible>> {
    let body = refusal.to_json();
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    plain_owned(status, text.to_owned())
}

fn plain_owned(status: StatusCode, text: String) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}
