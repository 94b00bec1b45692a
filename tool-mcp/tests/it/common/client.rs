//! An rmcp client of the server, in process over a duplex stream, for
//! both protocol eras.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability,
    Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceError, ServiceExt};
use serde_json::Value;
use tool_mcp::McpServer;
use tool_runtime::Runtime;

pub type Answerer = Arc<dyn Fn(&str, &Value) -> ElicitResult + Send + Sync>;

/// An MCP client that records progress and answers elicitations with `answer`
/// (and declares no elicitation support without one).
#[derive(Clone, Default)]
pub struct TestClient {
    pub answer: Option<Answerer>,
    pub asked: Arc<Mutex<Vec<(String, Value)>>>,
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    pub logged: Arc<Mutex<Vec<(String, String, Value)>>>,
    /// Declares the tasks extension.
    pub tasks: bool,
    /// Declares sampling, and answers each prompt with "echo: <prompt>".
    pub sampling: bool,
    /// Declares roots, and lists one: `file:///work`, named "Work".
    pub roots: bool,
}

impl TestClient {
    pub fn answering(
        answer: impl Fn(&str, &Value) -> ElicitResult + Send + Sync + 'static,
    ) -> Self {
        TestClient {
            answer: Some(Arc::new(answer)),
            ..TestClient::default()
        }
    }
}

impl ClientHandler for TestClient {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap();
        self.asked
            .lock()
            .unwrap()
            .push((message.clone(), schema.clone()));
        let answer = self
            .answer
            .as_ref()
            .expect("elicitation without an answerer");
        Ok(answer(&message, &schema))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    #[allow(deprecated, reason = "MCP sampling (SEP-2577 deprecates it)")]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let prompt: String = params.messages[0]
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        assert_eq!(params.max_tokens, 50);
        let answer = rmcp::model::SamplingMessage::assistant_text(format!("echo: {prompt}"));
        Ok(rmcp::model::CreateMessageResult::new(
            answer,
            "test-model".into(),
        ))
    }

    #[allow(deprecated, reason = "MCP logging (SEP-2577 deprecates it)")]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level).unwrap();
        self.logged.lock().unwrap().push((
            level.as_str().unwrap().to_owned(),
            params.logger.unwrap_or_default(),
            params.data,
        ));
    }

    #[allow(deprecated, reason = "MCP roots (SEP-2577 deprecates them)")]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        assert!(
            self.roots,
            "roots/list from a client that declared no roots"
        );
        let mut root = rmcp::model::Root::new("file:///work");
        root.name = Some("Work".to_owned());
        Ok(rmcp::model::ListRootsResult::new(vec![root]))
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.tasks {
            capabilities = ClientCapabilities::builder().enable_tasks().build();
        }
        if self.sampling {
            capabilities.sampling = Some(Default::default());
        }
        if self.roots {
            capabilities.roots = Some(Default::default());
        }
        if self.answer.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        }
        ClientConfig::new(capabilities, Implementation::new("test-client", "0.1.0"))
    }
}

pub type Client = RunningService<RoleClient, TestClient>;

/// Serves `runtime` and connects `client` with the `initialize` handshake
/// (protocol 2025-11-25), or with `server/discover` (2026-07-28).
pub async fn connect(runtime: Runtime, client: TestClient, modern: bool) -> Client {
    connect_to(McpServer::new(runtime), client, modern).await
}

pub async fn connect_to(server: McpServer, client: TestClient, modern: bool) -> Client {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    tokio::spawn(server.serve(server_end));
    if modern {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        client
            .serve_with_lifecycle(client_end, lifecycle)
            .await
            .unwrap()
    } else {
        client.serve(client_end).await.unwrap()
    }
}

pub async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
}

pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn accept(content: Value) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

/// Calls `probe` with the attempt's number (from 0) every 10 ms until it
/// succeeds, `tries` times at most; its last failure when it never did.
pub async fn eventually<T, E, F>(tries: u32, mut probe: impl FnMut(u32) -> F) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    let mut attempt = 0;
    loop {
        match probe(attempt).await {
            Ok(value) => return Ok(value),
            Err(last) if attempt + 1 >= tries => return Err(last),
            Err(_) => attempt += 1,
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
