//! Human approval: the gate (tool flag OR runtime policy, a tool's policy
//! function authoritative), the stored pending call, `approve` and `decline`.
//!
//! Decisions come only from [`Runtime::approve`] and [`Runtime::decline`],
//! never from the model's arguments; each pending call is taken from the
//! store once, so it runs at most once.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::transform::Phase;
use tool_core::{AbortSignal, ErrorKind, ModelError, Outcome, RequestContext, Tool};

use tracing::Instrument as _;

use crate::error::RuntimeError;
use crate::events::{EventKind, payload};
use crate::pipeline::{Run, call_span};
use crate::runtime::Runtime;
use crate::store::{PendingCall, PendingKind};

/// What a runtime-wide approval policy decides on.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ApprovalCheck<'a> {
    /// The tool called.
    pub tool: &'a Tool,
    /// The call's id.
    pub call_id: &'a str,
    /// The validated arguments.
    pub input: &'a Value,
    /// The request context.
    pub request_context: &'a RequestContext,
}

type PolicyFn = Arc<dyn Fn(&ApprovalCheck<'_>) -> bool + Send + Sync>;

/// The runtime-wide approval rule.
#[derive(Clone, Default)]
pub(crate) enum ApprovalPolicy {
    /// Only tools that ask for it.
    #[default]
    Never,
    /// Every call.
    Always,
    /// A function decides per call.
    Custom(PolicyFn),
}

impl fmt::Debug for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApprovalPolicy::Never => "Never",
            ApprovalPolicy::Always => "Always",
            ApprovalPolicy::Custom(_) => "Custom",
        })
    }
}

/// The schema of an approval decision, sent with approval requests.
pub(crate) fn decision_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approved": { "type": "boolean", "description": "Whether the user approves the tool call" }
        },
        "required": ["approved"]
    })
}

impl Runtime {
    /// Whether a call needs approval: the tool's policy function when it has
    /// one; otherwise its flag OR the runtime policy. A panic means yes.
    pub(crate) fn needs_approval(
        &self,
        tool: &Tool,
        call_id: &str,
        input: &Value,
        rc: &RequestContext,
    ) -> bool {
        if tool.has_approval_policy() {
            return tool.requires_approval(input, rc);
        }
        if tool.definition().require_approval {
            return true;
        }
        match &self.inner.approval {
            ApprovalPolicy::Never => false,
            ApprovalPolicy::Always => true,
            ApprovalPolicy::Custom(policy) => {
                let check = ApprovalCheck {
                    tool,
                    call_id,
                    input,
                    request_context: rc,
                };
                catch_unwind(AssertUnwindSafe(|| policy(&check))).unwrap_or_else(|_| {
                    tracing::error!(
                        tool_id = tool.id(),
                        call_id,
                        "approval policy panicked; approval is required"
                    );
                    true
                })
            }
        }
    }

    /// Stores the call and asks for a decision.
    pub(crate) fn request_approval(
        &self,
        tool: &Tool,
        call_id: String,
        input: Value,
        rc: &RequestContext,
        messages: &[Value],
    ) -> Outcome {
        let tool_id = tool.id();
        let mut pending = PendingCall::new(call_id.as_str(), tool_id, PendingKind::Approval, input);
        pending.request_context = rc.values().clone();
        pending.messages = messages.to_vec();
        if let Err(error) = self.inner.store.insert(&pending) {
            tracing::error!(%error, "could not store the call awaiting approval");
            let error = ModelError::new(
                ErrorKind::Execution,
                format!("Tool {tool_id} needs approval, but the call could not be stored: {error}"),
            );
            return self.failed(Some(tool), &call_id, tool_id, error);
        }
        tracing::info!("tool call waits for approval");
        let input = pending.input;
        self.inner
            .events
            .emit(&call_id, tool_id, || EventKind::ApprovalRequested {
                payload: payload(Some(tool), &call_id, tool_id, Phase::Approval, &input),
                resume_schema: decision_schema(),
            });
        Outcome::ApprovalRequired {
            call_id,
            input,
            resume_schema: Some(decision_schema()),
        }
    }

    /// Approves a call that waits for approval and runs it (once): its
    /// outcome is what the call would have returned without the gate.
    ///
    /// Errors: no such pending call (never pending, or already decided),
    /// the call is suspended rather than awaiting approval, the store failed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Outcome, Tool, ToolError};
    /// use tool_runtime::{Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let delete = Tool::builder("delete-file").description("Delete a file")
    ///     .require_approval(true)
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "deleted": input["path"] })) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(delete).build().unwrap();
    ///
    /// let outcome = runtime.call(ToolCall::new("c1", "delete-file", json!({ "path": "/tmp/x" }))).await;
    /// assert!(matches!(outcome, Outcome::ApprovalRequired { .. }));
    /// let outcome = runtime.approve("c1").await.unwrap();
    /// assert_eq!(outcome.output(), Some(&json!({ "deleted": "/tmp/x" })));
    /// assert!(matches!(runtime.approve("c1").await, Err(RuntimeError::UnknownCall { .. })));
    /// # });
    /// ```
    pub async fn approve(&self, call_id: &str) -> Result<Outcome, RuntimeError> {
        let pending = self.take(call_id, PendingKind::Approval)?;
        let span = call_span("approve", &pending.tool_id, call_id);
        let approved = async move {
            let tool = self.tool_of(&pending)?;
            tracing::info!("tool call approved");
            let (call_id, tool_id) = (pending.call_id.as_str(), tool.id());
            self.inner
                .events
                .emit(call_id, tool_id, || EventKind::Resumed {
                    payload: payload(
                        Some(&tool),
                        call_id,
                        tool_id,
                        Phase::Resume,
                        &json!({ "approved": true }),
                    ),
                });
            let timeout = self.timeout_of(&tool);
            let messages = pending.messages;
            let run = Run {
                tool,
                call_id: pending.call_id,
                input: pending.input,
                request_context: RequestContext::from(pending.request_context),
                messages: (!messages.is_empty()).then(|| messages.into()),
                abort: AbortSignal::new(),
                timeout,
                mcp: None,
                resume: None,
                guard: None,
            };
            Ok(self.execute(run).await)
        };
        approved.instrument(span).await
    }

    /// Declines a call that waits for approval: it never runs, and the model
    /// receives `reason` or `Tool call was not approved by the user`.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Outcome, Tool, ToolError};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let delete = Tool::builder("delete-file").description("Delete a file")
    ///     .require_approval(true)
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("deleted")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(delete).build().unwrap();
    /// runtime.call(ToolCall::new("c1", "delete-file", json!({}))).await;
    /// let outcome = runtime.decline("c1", None).await.unwrap();
    /// assert_eq!(outcome.to_model_value(), "Tool call was not approved by the user");
    /// # });
    /// ```
    pub async fn decline(
        &self,
        call_id: &str,
        reason: Option<&str>,
    ) -> Result<Outcome, RuntimeError> {
        let pending = self.take(call_id, PendingKind::Approval)?;
        let span = call_span("decline", &pending.tool_id, call_id);
        let _entered = span.enter();
        tracing::info!(reason, "tool call declined");
        let reason = reason.map(str::to_owned);
        self.inner
            .events
            .emit(call_id, &pending.tool_id, || EventKind::OutputDenied {
                reason: reason.clone(),
            });
        Ok(Outcome::Declined { reason })
    }

    /// Takes a pending call of `kind` from the store, or says why not.
    pub(crate) fn take(
        &self,
        call_id: &str,
        kind: PendingKind,
    ) -> Result<PendingCall, RuntimeError> {
        if let Some(pending) = self.inner.store.take(call_id, kind)? {
            return Ok(pending);
        }
        let call_id = call_id.to_owned();
        Err(match self.inner.store.get(&call_id)?.map(|p| p.kind) {
            Some(PendingKind::Suspended) => RuntimeError::NotAwaitingApproval { call_id },
            Some(PendingKind::Approval) => RuntimeError::NotSuspended { call_id },
            None => RuntimeError::UnknownCall { call_id },
        })
    }

    /// The tool of a taken call; when this runtime lacks it, the call is put
    /// back and the error names the tool.
    pub(crate) fn tool_of(&self, pending: &PendingCall) -> Result<Tool, RuntimeError> {
        match self.inner.tools.get(&pending.tool_id) {
            Some(tool) => Ok(tool.clone()),
            None => {
                self.inner.store.insert(pending)?;
                Err(RuntimeError::MissingTool {
                    call_id: pending.call_id.clone(),
                    tool_id: pending.tool_id.clone(),
                })
            }
        }
    }
}
