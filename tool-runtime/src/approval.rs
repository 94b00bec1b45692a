//! Human approval: the gate (tool flag OR runtime policy, a tool's policy
//! function authoritative), the stored pending call, `approve` and `decline`.
//!
//! Decisions come only from [`Runtime::approve`] and [`Runtime::decline`],
//! never from the model's arguments; how a decision claims the stored call
//! (once, atomically) is in `decide.rs`.

use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::transform::Phase;
use tool_core::{ErrorKind, ModelError, RequestContext, Tool};

use crate::decide::Decision;
use crate::error::RuntimeError;
use crate::events::{EventKind, Payload};
use crate::outcome::CallOutcome;
use crate::pipeline::CallRecord;
use crate::runtime::Runtime;
use crate::store::PendingKind;

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

impl ApprovalPolicy {
    /// Whether a call needs approval: the tool's policy function when it has
    /// one (authoritative); otherwise its flag OR this policy. A policy that
    /// panics means yes.
    pub(crate) fn requires(&self, check: &ApprovalCheck<'_>) -> bool {
        let tool = check.tool;
        if tool.has_approval_policy() {
            return tool.requires_approval(check.input, check.request_context);
        }
        if tool.definition().require_approval {
            return true;
        }
        match self {
            ApprovalPolicy::Never => false,
            ApprovalPolicy::Always => true,
            ApprovalPolicy::Custom(policy) => tool_core::catch_panic(|| policy(check))
                .unwrap_or_else(|_| {
                    tracing::error!(
                        tool_id = tool.id(),
                        call_id = check.call_id,
                        "approval policy panicked; approval is required"
                    );
                    true
                }),
        }
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
    /// Whether a call needs approval (see [`ApprovalPolicy::requires`]).
    pub(crate) fn needs_approval(&self, record: &CallRecord, input: &Value) -> bool {
        self.inner.approval.requires(&ApprovalCheck {
            tool: &record.tool,
            call_id: &record.call_id,
            input,
            request_context: &record.request_context,
        })
    }

    /// Stores the call and asks for a decision.
    pub(crate) async fn request_approval(&self, record: &CallRecord, input: Value) -> CallOutcome {
        let (tool, call_id) = (&record.tool, record.call_id.as_str());
        let tool_id = tool.id();
        let pending = self.pending_call(record, PendingKind::Approval, input.clone(), None);
        if let Err(error) = self.inner.calls.insert(pending).await {
            tracing::error!(%error, "could not store the call awaiting approval");
            let error = ModelError::new(
                ErrorKind::Execution,
                format!("Tool {tool_id} needs approval, but the call could not be stored: {error}"),
            );
            return self.failed(Some(tool), call_id, tool_id, error);
        }
        tracing::info!("tool call waits for approval");
        self.inner
            .events
            .emit(call_id, tool_id, || EventKind::ApprovalRequired {
                payload: Payload::of(Some(tool), call_id, tool_id, Phase::Approval, &input),
                resume_schema: decision_schema(),
            });
        CallOutcome::ApprovalRequired {
            call_id: record.call_id.clone(),
            input,
            resume_schema: Some(decision_schema()),
        }
    }

    /// Approves a call that waits for approval and runs it (once): its
    /// outcome is what the call would have returned without the gate. The
    /// stored arguments are admitted again (validated) before they run.
    ///
    /// The approval is one atomic transition of the store (pending →
    /// running, claimed by this instance), and the call then runs as a task
    /// of its own: dropping this future does not stop it, and its outcome is
    /// recorded. Asked again once the call settled (from any instance
    /// sharing the store), approve returns the recorded outcome; while the
    /// call runs, [`RuntimeError::Running`].
    ///
    /// Errors: no such stored call, the call is suspended rather than
    /// awaiting approval, it is running, this runtime lacks its tool (it
    /// stays pending), the store failed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, RuntimeError, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let delete = Tool::builder("delete-file").description("Delete a file")
    ///     .require_approval(true)
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "deleted": input["path"] })) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(delete).build().unwrap();
    ///
    /// let outcome = runtime.call(ToolCall::new("c1", "delete-file", json!({ "path": "/tmp/x" }))).await;
    /// assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
    /// let outcome = tokio::spawn(runtime.approve("c1")).await.unwrap().unwrap();
    /// assert_eq!(outcome.output(), Some(&json!({ "deleted": "/tmp/x" })));
    /// // Asked again (a client that lost the answer): the recorded outcome, not a second run.
    /// assert_eq!(runtime.approve("c1").await.unwrap(), outcome);
    /// assert!(matches!(runtime.approve("c2").await, Err(RuntimeError::UnknownCall { .. })));
    /// # });
    /// ```
    pub fn approve(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.decide(call_id, Decision::Approve, None)
    }

    /// Declines a call that waits for approval: it never runs, and the model
    /// receives `reason` or `Tool call was not approved by the user`. The
    /// decline is recorded in one atomic transition (pending → settled), so
    /// an approval that races it, or comes later, gets the decline.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ModelFacing, Tool, ToolError};
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
    /// // An approval that comes too late gets the decline: the call never runs.
    /// assert_eq!(runtime.approve("c1").await.unwrap(), outcome);
    /// # });
    /// ```
    pub fn decline(
        &self,
        call_id: &str,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        self.decide(call_id, Decision::Decline(reason.map(str::to_owned)), None)
    }
}

#[cfg(test)]
mod tests {
    use tool_core::ToolError;

    use super::*;

    fn tool(configure: impl FnOnce(tool_core::ToolBuilder) -> tool_core::ToolBuilder) -> Tool {
        let builder = Tool::builder("t")
            .description("A tool")
            .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) });
        configure(builder).build().unwrap()
    }

    fn requires(policy: &ApprovalPolicy, tool: &Tool, input: Value) -> bool {
        policy.requires(&ApprovalCheck {
            tool,
            call_id: "c1",
            input: &input,
            request_context: &RequestContext::default(),
        })
    }

    #[test]
    fn the_tool_flag_or_the_runtime_policy_decides() {
        let plain = tool(|b| b);
        let flagged = tool(|b| b.require_approval(true));
        assert!(!requires(&ApprovalPolicy::Never, &plain, json!({})));
        assert!(requires(&ApprovalPolicy::Never, &flagged, json!({})));
        assert!(requires(&ApprovalPolicy::Always, &plain, json!({})));
        let big = ApprovalPolicy::Custom(Arc::new(|check: &ApprovalCheck<'_>| {
            check.input["amount"].as_u64() > Some(100)
        }));
        assert!(requires(&big, &plain, json!({ "amount": 500 })));
        assert!(!requires(&big, &plain, json!({ "amount": 5 })));
        assert!(
            requires(&big, &flagged, json!({ "amount": 5 })),
            "flag OR policy"
        );
    }

    #[test]
    fn a_tool_policy_is_authoritative_and_a_panicking_policy_means_approval() {
        let never = tool(|b| b.approval_policy(|_, _| false));
        assert!(!requires(&ApprovalPolicy::Always, &never, json!({})));
        let panicking = ApprovalPolicy::Custom(Arc::new(|_: &ApprovalCheck<'_>| panic!("boom")));
        assert!(requires(&panicking, &tool(|b| b), json!({})));
    }
}
