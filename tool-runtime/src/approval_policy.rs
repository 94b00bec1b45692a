//! Human approval's rule: the tool flag OR the runtime policy, a tool's
//! policy function authoritative. The call path asks it at its gate
//! (`call_path.rs`); decisions come only from [`Runtime::approve`](crate::Runtime::approve)
//! and [`Runtime::decline`](crate::Runtime::decline), never from the model's
//! arguments, and claim the stored call once, atomically (`decide.rs`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{ApprovalRequirement, PolicyAnswer, RequestContext, Tool};

use crate::hook_queue::within;

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

type PolicyFn = Arc<dyn Fn(&ApprovalCheck<'_>) -> PolicyAnswer + Send + Sync>;

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

/// Why a policy gave no decision.
enum NoAnswer {
    TimedOut,
    Failed(String),
}

impl ApprovalPolicy {
    /// What a call needs: the tool's policy function's answer when it has
    /// one (authoritative); otherwise approval if its flag OR this policy
    /// says so. A policy that fails, panics or does not answer within
    /// `limit` means approval is required.
    pub(crate) async fn requirement(
        &self,
        check: &ApprovalCheck<'_>,
        limit: Duration,
    ) -> ApprovalRequirement {
        let tool = check.tool;
        let decision = if tool.has_approval_policy() {
            // A sync policy's answer is here already: no future to await.
            match tool
                .approval_answer(check.input, check.request_context)
                .now()
            {
                Ok(decision) => decision.map_err(NoAnswer::Failed),
                Err(pending) => within(limit, pending.resolve())
                    .await
                    .ok_or(NoAnswer::TimedOut)
                    .and_then(|decision| decision.map_err(NoAnswer::Failed)),
            }
        } else if tool.definition().require_approval {
            return ApprovalRequirement::required();
        } else {
            match self {
                ApprovalPolicy::Never => return ApprovalRequirement::NotRequired,
                ApprovalPolicy::Always => return ApprovalRequirement::required(),
                ApprovalPolicy::Custom(policy) => match tool_core::catch_panic(|| policy(check)) {
                    Err(panic) => Err(NoAnswer::Failed(format!("it panicked: {panic}"))),
                    Ok(answer) => within(limit, answer.resolve())
                        .await
                        .ok_or(NoAnswer::TimedOut)
                        .and_then(|decision| decision.map_err(NoAnswer::Failed)),
                },
            }
        };
        let (tool_id, call_id) = (tool.id(), check.call_id);
        match decision {
            Ok(requirement) => requirement,
            Err(NoAnswer::TimedOut) => {
                let timeout_ms = limit.as_millis();
                tracing::error!(
                    tool_id,
                    call_id,
                    timeout_ms,
                    "approval policy timed out; approval is required"
                );
                ApprovalRequirement::required()
            }
            Err(NoAnswer::Failed(error)) => {
                tracing::error!(tool_id, call_id, %error, "approval policy failed; approval is required");
                ApprovalRequirement::required()
            }
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

    fn requirement(policy: &ApprovalPolicy, tool: &Tool, input: Value) -> ApprovalRequirement {
        let check = ApprovalCheck {
            tool,
            call_id: "c1",
            input: &input,
            request_context: &RequestContext::default(),
            requester: None,
        };
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(policy.requirement(&check, Duration::from_millis(50)))
    }

    fn requires(policy: &ApprovalPolicy, tool: &Tool, input: Value) -> bool {
        requirement(policy, tool, input).is_required()
    }

    fn custom<R: tool_core::ApprovalPolicyReturn<M>, M>(
        policy: impl Fn(&ApprovalCheck<'_>) -> R + Send + Sync + 'static,
    ) -> ApprovalPolicy {
        ApprovalPolicy::Custom(Arc::new(move |check| policy(check).into_answer()))
    }

    #[test]
    fn the_tool_flag_or_the_runtime_policy_decides() {
        let plain = tool(|b| b);
        let flagged = tool(|b| b.require_approval(true));
        assert!(!requires(&ApprovalPolicy::Never, &plain, json!({})));
        assert!(requires(&ApprovalPolicy::Never, &flagged, json!({})));
        assert!(requires(&ApprovalPolicy::Always, &plain, json!({})));
        let big = custom(|check| check.input["amount"].as_u64() > Some(100));
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
        let panicking = custom(|_| -> bool { panic!("boom") });
        assert!(requires(&panicking, &tool(|b| b), json!({})));
    }

    #[test]
    fn a_tool_policy_answers_with_a_requirement_passed_on_as_it_is() {
        let refund = tool(|b| {
            b.approval_policy(|input, _| match input["amount"].as_u64() {
                Some(0..=1_000) => ApprovalRequirement::required(),
                Some(_) => ApprovalRequirement::approvals(2).from_group("finance"),
                None => ApprovalRequirement::refused("no amount"),
            })
        });
        let always = ApprovalPolicy::Always;
        assert_eq!(
            requirement(&always, &refund, json!({ "amount": 5_000 })),
            ApprovalRequirement::approvals(2).from_group("finance")
        );
        assert_eq!(
            requirement(&always, &refund, json!({ "amount": 5 })),
            ApprovalRequirement::required()
        );
        assert_eq!(
            requirement(&always, &refund, json!({})),
            ApprovalRequirement::refused("no amount")
        );
    }

    #[test]
    fn a_policy_that_does_not_answer_in_time_means_approval() {
        let stuck = || std::future::pending::<bool>();
        assert!(requires(&custom(move |_| stuck()), &tool(|b| b), json!({})));
        let tool_stuck = tool(|b| b.approval_policy(move |_, _| stuck()));
        assert!(requires(&ApprovalPolicy::Never, &tool_stuck, json!({})));
    }
}
