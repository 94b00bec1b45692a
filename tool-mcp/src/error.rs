//! [`McpError`]: what can go wrong serving or connecting over MCP.

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
