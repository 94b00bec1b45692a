//! Human approval's rule: the tool flag OR the runtime policy, a tool's
//! policy function authoritative. The call path asks it at its gate
//! (`pipeline.rs`); decisions come only from [`Runtime::approve`](crate::Runtime::approve)
//! and [`Runtime::decline`](crate::Runtime::decline), never from the model's
//! arguments, and claim the stored call once, atomically (`decide.rs`).

use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{RequestContext, Tool};

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
    /// Who asked for the call ([`CallHead::requester`](crate::CallHead::requester)),
    /// when the caller said.
    pub requester: Option<&'a str>,
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
            requester: None,
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
