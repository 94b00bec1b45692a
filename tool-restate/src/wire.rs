//! What the `ToolCalls` object's handlers take and answer, as JSON: what a
//! client sends through the Restate ingress (this crate's
//! [`RestateClient`](crate::RestateClient), or `curl`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_runtime::store::RecordedOutcome;
use tool_runtime::{CallOutcome, Decider, Decision, Digest, Principal};

/// A call of a tool (handler `call`, keyed by the call's id).
///
/// ```
/// use serde_json::json;
/// use tool_restate::CallRequest;
///
/// let request = CallRequest::new("pay", json!({ "amount": 5 })).requester("alice");
/// assert_eq!(serde_json::to_value(&request).unwrap(), json!({ "toolId": "pay", "input": { "amount": 5 }, "requester": "alice" }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRequest {
    /// The tool called.
    pub tool_id: String,
    /// Its arguments, as the model gave them.
    pub input: Value,
    /// Who asked for the call (separation of duties: not its approver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
}

impl CallRequest {
    /// A call of `tool_id` with `input`.
    pub fn new(tool_id: impl Into<String>, input: Value) -> Self {
        CallRequest {
            tool_id: tool_id.into(),
            input,
            requester: None,
        }
    }

    /// Asked for by `requester`.
    #[must_use]
    pub fn requester(mut self, requester: impl Into<String>) -> Self {
        self.requester = Some(requester.into());
        self
    }
}

/// A decision on a waiting call (handler `decide`), by a principal who read
/// the version with `digest`, or by the application itself (neither).
///
/// ```
/// use serde_json::json;
/// use tool_restate::{DecideRequest, WireDecision};
/// use tool_runtime::{Decider, Digest, Principal};
///
/// let request = DecideRequest::new(WireDecision::Decline(Some("too much".into())))
///     .by(Decider::new(Principal::new("bob"), Digest::new("sha256:00")));
/// assert_eq!(
///     serde_json::to_value(&request).unwrap(),
///     json!({ "decision": { "decline": "too much" }, "principal": { "id": "bob" }, "digest": "sha256:00" })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecideRequest {
    /// The decision.
    pub decision: WireDecision,
    /// Who decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<Principal>,
    /// The digest of the version they decided on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl DecideRequest {
    /// `decision`, by the application (no principal).
    pub fn new(decision: WireDecision) -> Self {
        DecideRequest {
            decision,
            principal: None,
            digest: None,
        }
    }

    /// Taken by `decider`.
    #[must_use]
    pub fn by(mut self, decider: Decider) -> Self {
        self.principal = Some(decider.principal);
        self.digest = Some(decider.digest.into());
        self
    }

    /// The decider, when a principal decides (with the digest they read,
    /// empty when none was sent: refused as stale by the runtime).
    pub fn decider(&self) -> Option<Decider> {
        let principal = self.principal.clone()?;
        Some(Decider::new(
            principal,
            Digest::new(self.digest.clone().unwrap_or_default()),
        ))
    }
}

/// A [`Decision`] as JSON: `"approve"`, `{"decline": reason}`, `{"resume":
/// data}`, `{"respond": output}`, `{"edit": fields}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WireDecision {
    /// [`Decision::Approve`].
    Approve,
    /// [`Decision::Decline`].
    Decline(Option<String>),
    /// [`Decision::Resume`].
    Resume(Value),
    /// [`Decision::Respond`].
    Respond(Value),
    /// [`Decision::Edit`].
    Edit(Value),
}

impl From<WireDecision> for Decision {
    fn from(decision: WireDecision) -> Self {
        match decision {
            WireDecision::Approve => Decision::Approve,
            WireDecision::Decline(reason) => Decision::Decline(reason),
            WireDecision::Resume(data) => Decision::Resume(data),
            WireDecision::Respond(output) => Decision::Respond(output),
            WireDecision::Edit(fields) => Decision::Edit(fields),
        }
    }
}

/// A [`CallOutcome`] as JSON, what the handlers answer: settled (its
/// recorded outcome), or waiting for a decision.
///
/// ```
/// use serde_json::json;
/// use tool_restate::Answer;
/// use tool_runtime::CallOutcome;
///
/// let waiting = CallOutcome::ApprovalRequired { call_id: "c1".into(), input: json!({ "amount": 5 }), resume_schema: None };
/// let answer = Answer::from(&waiting);
/// assert_eq!(CallOutcome::from(answer), waiting);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Answer {
    /// Finished: completed, failed, aborted or declined.
    Settled(RecordedOutcome),
    /// [`CallOutcome::ApprovalRequired`].
    #[serde(rename_all = "camelCase")]
    ApprovalRequired {
        /// The call.
        call_id: String,
        /// Its input, as stored.
        input: Value,
        /// What a resume decision gives the tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume_schema: Option<Value>,
    },
    /// [`CallOutcome::Suspended`].
    #[serde(rename_all = "camelCase")]
    Suspended {
        /// The call.
        call_id: String,
        /// Its input.
        input: Value,
        /// What the tool said when it suspended.
        payload: Value,
        /// What it expects to resume with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume_schema: Option<Value>,
    },
    /// [`CallOutcome::AwaitingOutput`].
    #[serde(rename_all = "camelCase")]
    AwaitingOutput {
        /// The call.
        call_id: String,
        /// Its input.
        input: Value,
        /// The output it expects.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_schema: Option<Value>,
    },
    /// [`CallOutcome::BackgroundStarted`].
    #[serde(rename_all = "camelCase")]
    BackgroundStarted {
        /// The task.
        task_id: String,
    },
}

impl From<&CallOutcome> for Answer {
    fn from(outcome: &CallOutcome) -> Self {
        match outcome.clone() {
            CallOutcome::ApprovalRequired {
                call_id,
                input,
                resume_schema,
            } => Answer::ApprovalRequired {
                call_id,
                input,
                resume_schema,
            },
            CallOutcome::Suspended {
                call_id,
                input,
                payload,
                resume_schema,
            } => Answer::Suspended {
                call_id,
                input,
                payload,
                resume_schema,
            },
            CallOutcome::AwaitingOutput {
                call_id,
                input,
                output_schema,
            } => Answer::AwaitingOutput {
                call_id,
                input,
                output_schema,
            },
            CallOutcome::BackgroundStarted { task_id } => Answer::BackgroundStarted { task_id },
            // Every other outcome is one the runtime records.
            settled => Answer::Settled(
                RecordedOutcome::from_outcome(&settled).unwrap_or(RecordedOutcome::Aborted),
            ),
        }
    }
}

impl From<Answer> for CallOutcome {
    fn from(answer: Answer) -> Self {
        match answer {
            Answer::Settled(recorded) => CallOutcome::from(recorded),
            Answer::ApprovalRequired {
                call_id,
                input,
                resume_schema,
            } => CallOutcome::ApprovalRequired {
                call_id,
                input,
                resume_schema,
            },
            Answer::Suspended {
                call_id,
                input,
                payload,
                resume_schema,
            } => CallOutcome::Suspended {
                call_id,
                input,
                payload,
                resume_schema,
            },
            Answer::AwaitingOutput {
                call_id,
                input,
                output_schema,
            } => CallOutcome::AwaitingOutput {
                call_id,
                input,
                output_schema,
            },
            Answer::BackgroundStarted { task_id } => CallOutcome::BackgroundStarted { task_id },
        }
    }
}

/// What the handlers `call` and `decide` answer: the call's outcome, or,
/// for a decision on a call decided already, the outcome it was decided
/// with (the runtime's `RuntimeError::AlreadyDecided`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Reply {
    /// The outcome of this call or decision.
    Outcome(Answer),
    /// The decision came after another: the call's outcome, unchanged.
    AlreadyDecided(Answer),
}
