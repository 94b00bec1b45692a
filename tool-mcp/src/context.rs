//! Asking the user something while a tool runs: MCP elicitation, reached
//! through [`McpToolContext::mcp`] (`ctx.mcp()`) when the tool was called
//! over MCP by a client that can show forms. The [`McpContext`] travels to
//! the tool as an extension of its call (`tool_core::Extensions`), so
//! tool-core knows nothing of MCP.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use tool_core::{ToolContext, ToolError, schema_for};

/// What the user did with a form.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Elicitation {
    /// The user submitted the form with this content.
    Accepted(Value),
    /// The user said no.
    Declined,
    /// The user dismissed the form without answering.
    Cancelled,
}

/// The future an [`Elicitor`] returns: the answer, or why there is none.
pub type ElicitFuture<'a> = Pin<Box<dyn Future<Output = Result<Elicitation, String>> + Send + 'a>>;

/// The future of [`Elicitor::sample`]: the model's text, or why there is none.
pub type SampleFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// The future of [`Elicitor::roots`]: the client's roots, or why there are none.
pub type RootsFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<Root>, String>> + Send + 'a>>;

/// One of the client's roots (MCP `roots/list`): a place, by URI (most
/// often `file://`), the client lets servers work in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Root {
    /// Where it is.
    pub uri: String,
    /// What the client calls it, if it named it.
    pub name: Option<String>,
}

impl Root {
    /// A root at `uri`, named `name` if given.
    ///
    /// ```
    /// let root = tool_mcp::Root::new("file:///work", Some("Work".to_owned()));
    /// assert_eq!(root.uri, "file:///work");
    /// ```
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Root {
            uri: uri.into(),
            name,
        }
    }
}

/// Asks the client that called a tool: implemented by the MCP server (and
/// by tests), with what the client supports.
pub trait Elicitor: Send + Sync + 'static {
    /// Asks `message` with a form following `schema` (a flat object of
    /// primitive properties, as MCP form elicitation allows).
    fn elicit(&self, message: String, schema: Value) -> ElicitFuture<'_>;

    /// Asks the client's model to answer `prompt` (one user message) in at
    /// most `max_tokens` tokens (MCP sampling); by default, this host cannot.
    fn sample(&self, prompt: String, max_tokens: u32) -> SampleFuture<'_> {
        let _ = (prompt, max_tokens);
        Box::pin(async { Err("this client cannot be asked for a model's answer".to_owned()) })
    }

    /// Asks the client for its roots (MCP `roots/list`, for a client that
    /// declares roots); by default, this host cannot.
    fn roots(&self) -> RootsFuture<'_> {
        Box::pin(async { Err("this client cannot be asked for its roots".to_owned()) })
    }

    /// [`roots`](Self::roots), the question named `key` where questions
    /// have names; by default the name is not used.
    fn roots_keyed(&self, key: &str) -> RootsFuture<'_> {
        let _ = key;
        self.roots()
    }

    /// [`elicit`](Self::elicit), the question named `key` where questions
    /// have names (the `inputRequests` of an `input_required` result, on
    /// protocol 2026-07-28); by default the name is not used.
    fn elicit_keyed(&self, key: &str, message: String, schema: Value) -> ElicitFuture<'_> {
        let _ = key;
        self.elicit(message, schema)
    }

    /// [`sample`](Self::sample), the question named `key` where questions
    /// have names; by default the name is not used.
    fn sample_keyed(&self, key: &str, prompt: String, max_tokens: u32) -> SampleFuture<'_> {
        let _ = key;
        self.sample(prompt, max_tokens)
    }
}

/// The MCP side of a call: what a tool can ask the client that called it.
///
/// ```
/// use serde_json::{json, Value};
/// use tool_mcp::{ElicitFuture, Elicitation, Elicitor, McpContext};
///
/// /// Always picks the window seat.
/// struct Scripted;
/// impl Elicitor for Scripted {
///     fn elicit(&self, _message: String, _schema: Value) -> ElicitFuture<'_> {
///         Box::pin(async { Ok(Elicitation::Accepted(json!({ "seat": "12A" }))) })
///     }
/// }
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Seat { seat: String }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mcp = McpContext::new(Scripted);
/// let seat: Option<Seat> = mcp.elicit_as("Which seat?").await.unwrap();
/// assert_eq!(seat.unwrap().seat, "12A");
/// # });
/// ```
#[derive(Clone)]
pub struct McpContext {
    elicitor: Arc<dyn Elicitor>,
    /// The name of the questions asked through this context, if it has one.
    key: Option<String>,
}

impl fmt::Debug for McpContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpContext").finish_non_exhaustive()
    }
}

impl McpContext {
    /// An MCP context that asks through `elicitor`.
    pub fn new(elicitor: impl Elicitor) -> Self {
        McpContext {
            elicitor: Arc::new(elicitor),
            key: None,
        }
    }

    /// This context, its questions named `key`: on protocol 2026-07-28 a
    /// question is an entry of an `input_required` result's
    /// `inputRequests`, under a key the client answers by (without one, the
    /// `n`th unnamed question of a run is `elicit-n` or `sample-n`). Name a
    /// question when a client looks for a known key; one name, one question.
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use tool_mcp::{ElicitFuture, Elicitation, Elicitor, McpContext};
    ///
    /// /// Answers by the question's name.
    /// struct ByName;
    /// impl Elicitor for ByName {
    ///     fn elicit(&self, _message: String, _schema: Value) -> ElicitFuture<'_> {
    ///         Box::pin(async { Ok(Elicitation::Declined) })
    ///     }
    ///     fn elicit_keyed(&self, key: &str, _message: String, _schema: Value) -> ElicitFuture<'_> {
    ///         let answer = json!({ "name": key });
    ///         Box::pin(async move { Ok(Elicitation::Accepted(answer)) })
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mcp = McpContext::new(ByName);
    /// let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
    /// let named = mcp.with_key("user_name").elicit("Your name?", schema.clone()).await.unwrap();
    /// assert_eq!(named, Elicitation::Accepted(json!({ "name": "user_name" })));
    /// assert_eq!(mcp.elicit("Your name?", schema).await.unwrap(), Elicitation::Declined);
    /// # });
    /// ```
    pub fn with_key(&self, key: impl Into<String>) -> McpContext {
        McpContext {
            elicitor: Arc::clone(&self.elicitor),
            key: Some(key.into()),
        }
    }

    /// Asks the user `message` with a form following `schema`.
    pub async fn elicit(
        &self,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Elicitation, ToolError> {
        let asked = match &self.key {
            Some(key) => self.elicitor.elicit_keyed(key, message.into(), schema),
            None => self.elicitor.elicit(message.into(), schema),
        };
        asked
            .await
            .map_err(|reason| ToolError::new(format!("could not ask the user: {reason}")))
    }

    /// Asks the client's model to answer `prompt` in at most `max_tokens`
    /// tokens (MCP `sampling/createMessage`, for a client that declares
    /// sampling); its text.
    ///
    /// ```
    /// use serde_json::Value;
    /// use tool_mcp::{ElicitFuture, Elicitor, McpContext, SampleFuture};
    ///
    /// /// A client whose model always agrees.
    /// struct Agreeable;
    /// impl Elicitor for Agreeable {
    ///     fn elicit(&self, _message: String, _schema: Value) -> ElicitFuture<'_> {
    ///         Box::pin(async { Err("no forms here".to_owned()) })
    ///     }
    ///     fn sample(&self, prompt: String, _max_tokens: u32) -> SampleFuture<'_> {
    ///         Box::pin(async move { Ok(format!("Yes: {prompt}")) })
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mcp = McpContext::new(Agreeable);
    /// assert_eq!(mcp.sample("ship it?", 100).await.unwrap(), "Yes: ship it?");
    /// # });
    /// ```
    pub async fn sample(
        &self,
        prompt: impl Into<String>,
        max_tokens: u32,
    ) -> Result<String, ToolError> {
        let asked = match &self.key {
            Some(key) => self.elicitor.sample_keyed(key, prompt.into(), max_tokens),
            None => self.elicitor.sample(prompt.into(), max_tokens),
        };
        asked
            .await
            .map_err(|reason| ToolError::new(format!("could not ask the client's model: {reason}")))
    }

    /// Asks the client for its roots (MCP `roots/list`, for a client that
    /// declares roots): the places it lets servers work in.
    ///
    /// ```
    /// use serde_json::Value;
    /// use tool_mcp::{ElicitFuture, Elicitor, McpContext, Root, RootsFuture};
    ///
    /// /// A client that works in one directory.
    /// struct OneRoot;
    /// impl Elicitor for OneRoot {
    ///     fn elicit(&self, _message: String, _schema: Value) -> ElicitFuture<'_> {
    ///         Box::pin(async { Err("no forms here".to_owned()) })
    ///     }
    ///     fn roots(&self) -> RootsFuture<'_> {
    ///         Box::pin(async { Ok(vec![Root::new("file:///work", None)]) })
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let roots = McpContext::new(OneRoot).roots().await.unwrap();
    /// assert_eq!(roots, [Root::new("file:///work", None)]);
    /// # });
    /// ```
    pub async fn roots(&self) -> Result<Vec<Root>, ToolError> {
        let asked = match &self.key {
            Some(key) => self.elicitor.roots_keyed(key),
            None => self.elicitor.roots(),
        };
        asked
            .await
            .map_err(|reason| ToolError::new(format!("could not ask the client's roots: {reason}")))
    }

    /// Asks the user for a `T`, the form derived from its schema: `Some`
    /// when they answered, `None` when they declined or dismissed the form.
    pub async fn elicit_as<T: DeserializeOwned + JsonSchema + 'static>(
        &self,
        message: impl Into<String>,
    ) -> Result<Option<T>, ToolError> {
        let schema = schema_for::<T>()
            .ok_or_else(|| ToolError::new("cannot ask the user for `()`: it has no fields"))?;
        match self.elicit(message, schema).await? {
            Elicitation::Accepted(content) => T::deserialize(&content).map(Some).map_err(|e| {
                ToolError::new(format!(
                    "the user's answer does not have the expected shape: {e}"
                ))
            }),
            Elicitation::Declined | Elicitation::Cancelled => Ok(None),
        }
    }
}

/// `ctx.mcp()` on a tool's context: the MCP client that called the tool,
/// when it can be asked for input (elicitation, sampling or its roots);
/// `None` otherwise (another transport, or a client before 2026-07-28 that
/// declared none of them): have
/// a fallback, or suspend. Asking for what the client did not declare fails
/// with an error that names it and the protocol.
///
/// How a question reaches the client depends on the protocol:
///
/// - Before 2026-07-28: a request of the server's (`elicitation/create`,
///   `sampling/createMessage`, `roots/list`) on the session; the tool waits
///   for the answer.
/// - 2026-07-28 (SEP-2322): the client takes no requests, so a question
///   without an answer ends the `tools/call` with an `input_required`
///   result carrying it (and every other question the run asked before it
///   ended: ask several at once with `tokio::join!` to ask them in one
///   round). The ask returns an error to the tool, and the call's abort
///   signal fires: let the error end the run. The client's retry runs
///   the tool **again from the start**, each question now answered (the
///   answers of earlier rounds travel signed in the `requestState`): the
///   tool's code before an ask runs once per round, so do side effects
///   after the last question, or make them idempotent. A run that fails
///   after asking for what the client did not declare is answered with
///   `MissingRequiredClientCapability` (-32021) naming it.
/// - In an MCP task, each question is one of the task's `inputRequests`,
///   answered by the client's `tasks/update`; it waits on the instance that
///   runs the task (a task rerun after its instance died has no `mcp()`):
///   suspend for a question that must outlive it.
///
/// A call that paused first (approval, a suspension) runs on without
/// `mcp()` once decided, on every protocol: a stored call carries no
/// extensions.
///
/// ```
/// use tool_core::{tool, ToolContext, ToolError};
/// use tool_mcp::McpToolContext as _;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Seat { seat: String }
///
/// /// Books a seat, asking the user which one when it can.
/// #[tool]
/// async fn book_seat(flight: String, ctx: ToolContext) -> Result<String, ToolError> {
///     let seat = match ctx.mcp() {
///         Some(mcp) => mcp.elicit_as::<Seat>("Which seat?").await?.map(|s| s.seat),
///         None => None,
///     };
///     Ok(format!("{flight}: {}", seat.as_deref().unwrap_or("any seat")))
/// }
/// ```
pub trait McpToolContext {
    /// The MCP side of the call, when there is one that can be asked.
    fn mcp(&self) -> Option<&McpContext>;
}

impl<S, R> McpToolContext for ToolContext<S, R> {
    fn mcp(&self) -> Option<&McpContext> {
        self.extension::<McpContext>()
    }
}
