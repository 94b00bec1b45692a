//! A set of tools with unique ids, looked up by the name the model calls.

use std::collections::HashMap;
use std::future::Future;

use crate::context::CallContext;
use crate::error::{BuildError, ModelError};
use crate::input::RawInput;
use crate::outcome::Outcome;
use crate::tool::Tool;

/// Tools keyed by id; two tools with one id is an error, not a silent replace.
///
/// ```
/// use serde_json::json;
/// use tool_core::{CallContext, Tool, ToolError, ToolSet};
///
/// let echo = Tool::builder("echo")
///     .description("Echo")
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
/// let set = ToolSet::new([echo.clone()]).unwrap();
/// assert!(ToolSet::new([echo.clone(), echo]).is_err());
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let outcome = set.execute("ehco", json!({}), CallContext::new("c1")).await;
/// assert_eq!(outcome.error().unwrap().message(), r#"Tool "ehco" not found. Available tools: echo."#);
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    tools: Vec<Tool>,
    by_id: HashMap<String, usize>,
}

impl ToolSet {
    /// A set of `tools`; fails on a repeated id.
    pub fn new<I, T>(tools: I) -> Result<Self, BuildError>
    where
        I: IntoIterator<Item = T>,
        T: Into<Tool>,
    {
        let mut set = ToolSet::default();
        for tool in tools {
            set.insert(tool.into())?;
        }
        Ok(set)
    }

    /// Adds a tool; fails when its id is taken, or when building it found
    /// it misconfigured (what a `#[tool]` type could not report at compile
    /// time: an editable field its input struct does not have, a schema
    /// refused), so that a runtime refuses to start rather than fail every
    /// call with it. Schemas that compile only on first use are checked
    /// then.
    pub fn insert(&mut self, tool: Tool) -> Result<(), BuildError> {
        if let Some(error) = &tool.inner.config_error {
            return Err(error.clone());
        }
        let id = tool.id().to_owned();
        if self.by_id.contains_key(&id) {
            return Err(BuildError::DuplicateId { id });
        }
        self.by_id.insert(id, self.tools.len());
        self.tools.push(tool);
        Ok(())
    }

    /// The tool named `id`.
    pub fn get(&self, id: &str) -> Option<&Tool> {
        self.by_id.get(id).map(|&i| &self.tools[i])
    }

    /// The tools, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter()
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when the set has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The error the model receives for a tool that does not exist.
    pub fn unknown_tool(&self, id: &str) -> ModelError {
        ModelError::unknown_tool(id, self.tools.iter().map(Tool::id))
    }

    /// Runs the tool named `tool_id` ([`Tool::execute`]), or fails with the
    /// unknown-tool error. The future owns what it needs.
    pub fn execute(
        &self,
        tool_id: &str,
        input: impl Into<RawInput>,
        ctx: CallContext,
    ) -> impl Future<Output = Outcome> + Send + 'static {
        let found = self
            .get(tool_id)
            .cloned()
            .ok_or_else(|| self.unknown_tool(tool_id));
        let input = input.into();
        async move {
            match found {
                Ok(tool) => tool.execute(input, ctx).await,
                Err(error) => Outcome::Failed { error },
            }
        }
    }
}
