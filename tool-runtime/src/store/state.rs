//! The lifecycle of a stored call, as a store records it: pending → running
//! (claimed by one runtime, under a lease) → settled (its outcome recorded).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{ErrorKind, ModelError, ModelOutput};

use super::{PendingCall, PendingKind};
use crate::call_outcome::CallOutcome;

/// Where a stored call is in its lifecycle.
///
/// ```
/// use tool_runtime::CallState;
///
/// assert!(CallState::Pending.is_pending());
/// ```
/// Not `non_exhaustive`: the lifecycle is closed, stores of other crates
/// build every state, and transports of other crates answer for each.
#[derive(Debug, Clone, PartialEq)]
pub enum CallState {
    /// Waiting for a decision: approval, or resume data (see the call's
    /// [`kind`](PendingCall::kind)).
    Pending,
    /// Claimed by one runtime instance, which runs it and renews its lease.
    /// A lease that expires (the instance died) makes the call recoverable.
    Running {
        /// The instance that runs it ([`RuntimeBuilder::instance_id`](crate::RuntimeBuilder::instance_id)).
        owner: String,
        /// When the lease ends unless renewed, by the store's clock.
        lease_expires_at: SystemTime,
    },
    /// Finished; the outcome is kept for the runtime's retention.
    Settled {
        /// How it ended.
        outcome: RecordedOutcome,
        /// When it settled, by the store's clock.
        settled_at: SystemTime,
    },
}

impl CallState {
    /// Whether the call waits for a decision.
    pub fn is_pending(&self) -> bool {
        matches!(self, CallState::Pending)
    }
}

/// A call as the store has it: what it is, where it is in its lifecycle,
/// and what the decision that claimed it brought. (Not `non_exhaustive`:
/// a store of another crate builds it.)
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCall {
    /// The call (for a running or settled call, `kind` is what it was pending for).
    pub call: PendingCall,
    /// Its state.
    pub state: CallState,
    /// Runs started since it last became pending: 0 while pending, 1 once
    /// claimed, more after recoveries.
    pub attempt: u32,
    /// The fencing token of its latest claim (0 before the first): a
    /// number the store draws anew for every claim and takeover, larger
    /// than every one it drew before and never repeated, across suspend and
    /// resume too. [`renew`](super::CallStore::renew) and
    /// [`finish`](super::CallStore::finish) act only for the current one, so
    /// an execution whose claim was taken over (even by the same instance)
    /// changes nothing.
    pub epoch: u64,
    /// The resume data of the resume that claimed it, kept so that a
    /// recovered call runs with it again.
    pub resume_data: Option<Value>,
}

impl StoredCall {
    /// A newly stored call: pending, never run.
    pub fn pending(call: PendingCall) -> Self {
        StoredCall {
            call,
            state: CallState::Pending,
            attempt: 0,
            epoch: 0,
            resume_data: None,
        }
    }

    /// Whether the call is running and its lease has ended at `now`.
    pub fn lease_expired(&self, now: SystemTime) -> bool {
        matches!(&self.state, CallState::Running { lease_expires_at, .. } if *lease_expires_at <= now)
    }
}

/// What a decision expects of the call it decides
/// ([`CallStore::decide`](super::CallStore::decide)): pending for `kind`
/// and, when `epoch` is set, still under that fencing token. A decision
/// taken on one version of a call (the digest a person saw names it) then
/// never applies to a later one, such as the same call resumed and
/// suspended again in between.
///
/// ```
/// use tool_runtime::PendingKind;
/// use tool_runtime::store::Expected;
///
/// let any_version = Expected::from(PendingKind::Suspended);
/// assert_eq!(any_version.epoch, None);
/// assert_eq!(any_version.at(7).epoch, Some(7));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// What the call must be pending for.
    pub kind: PendingKind,
    /// The fencing token ([`StoredCall::epoch`]) the call must still have;
    /// `None`: any.
    pub epoch: Option<u64>,
}

impl Expected {
    /// Also expects the call to be still under fencing token `epoch`.
    #[must_use]
    pub fn at(self, epoch: u64) -> Self {
        Expected {
            epoch: Some(epoch),
            ..self
        }
    }

    /// Whether `stored` is as expected.
    pub fn matches(&self, stored: &StoredCall) -> bool {
        stored.state.is_pending()
            && stored.call.kind == self.kind
            && self.epoch.is_none_or(|epoch| epoch == stored.epoch)
    }
}

impl From<PendingKind> for Expected {
    fn from(kind: PendingKind) -> Self {
        Expected { kind, epoch: None }
    }
}

/// What a decision does to a pending call, in one atomic step of the store.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// Claim it to run: pending → running, owned by `owner` for `lease`.
    Run {
        /// The claiming instance.
        owner: String,
        /// How long the claim holds unless renewed.
        lease: Duration,
        /// The resume data, for a resume.
        resume_data: Option<Value>,
    },
    /// Settle it without running (a decline, or a response with its
    /// output): pending → settled.
    Settle(RecordedOutcome),
    /// Claim it to run with the input a person edited (an approval with
    /// edits): the stored input is replaced by `input`, then as
    /// [`Run`](Transition::Run) without resume data, in the same atomic
    /// step, so a recovered call runs the edited input too.
    RunEdited {
        /// The claiming instance.
        owner: String,
        /// How long the claim holds unless renewed.
        lease: Duration,
        /// The edited input, validated by the runtime.
        input: Value,
    },
    /// Revise it without running it (a person's edit of a call that waits
    /// for several approvals): the stored input and the approvals it needs
    /// are replaced, and it stays pending as a new version (a new epoch,
    /// so a digest of the earlier version no longer matches and the
    /// earlier version's grants no longer count).
    Revise {
        /// The edited input, validated by the runtime.
        input: Value,
        /// What the edited call needs, as its approval policy now says.
        approvals: Option<super::RequiredApprovals>,
    },
}

/// The answer of [`CallStore::decide`](super::CallStore::decide).
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// This decision made the transition; the call as it is now.
    Won(StoredCall),
    /// The call was not pending for that kind; the call as it is (`None`: no
    /// such call). Nothing changed.
    Lost(Option<StoredCall>),
}

/// How a running call ends, given to [`CallStore::finish`](super::CallStore::finish).
#[derive(Debug, Clone, PartialEq)]
pub enum Settlement {
    /// It finished: running → settled with this outcome.
    Settled(RecordedOutcome),
    /// It suspended (again): running → pending for resume, with this payload.
    Suspended {
        /// What it suspended with.
        payload: Value,
    },
}

/// The final outcome of a stored call, as a store keeps it (JSON, through
/// serde): what a decision on a settled call returns.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::RecordedOutcome;
/// use tool_runtime::CallOutcome;
///
/// let outcome = CallOutcome::Completed { output: json!(3), model_output: None, state: None };
/// let recorded = RecordedOutcome::from_outcome(&outcome).unwrap();
/// let text = serde_json::to_string(&recorded).unwrap();
/// assert_eq!(text, r#"{"status":"completed","output":3}"#);
/// let back: RecordedOutcome = serde_json::from_str(&text).unwrap();
/// assert_eq!(CallOutcome::from(back), outcome);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RecordedOutcome {
    /// The tool returned output.
    Completed {
        /// The raw output.
        output: Value,
        /// The model-facing form, when the tool defines one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_output: Option<ModelOutput>,
        /// The workflow state the tool set, when it set one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Value>,
    },
    /// The call failed.
    Failed {
        /// Which stage failed.
        kind: ErrorKind,
        /// The error object the model read.
        error: Value,
    },
    /// The call was cancelled or timed out.
    Aborted,
    /// A human declined it.
    Declined {
        /// Why, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl RecordedOutcome {
    /// The record of a final outcome; `None` for the states that are not
    /// final (approval required, suspended, background started).
    pub fn from_outcome(outcome: &CallOutcome) -> Option<Self> {
        Some(match outcome {
            CallOutcome::Completed {
                output,
                model_output,
                state,
            } => RecordedOutcome::Completed {
                output: output.clone(),
                model_output: model_output.clone(),
                state: state.clone(),
            },
            CallOutcome::Failed { error } => RecordedOutcome::Failed {
                kind: error.kind(),
                error: error.to_json(),
            },
            CallOutcome::Aborted => RecordedOutcome::Aborted,
            CallOutcome::Declined { reason } => RecordedOutcome::Declined {
                reason: reason.clone(),
            },
            CallOutcome::Suspended { .. }
            | CallOutcome::ApprovalRequired { .. }
            | CallOutcome::AwaitingOutput { .. }
            | CallOutcome::BackgroundStarted { .. } => return None,
        })
    }
}

impl From<RecordedOutcome> for CallOutcome {
    fn from(recorded: RecordedOutcome) -> Self {
        match recorded {
            RecordedOutcome::Completed {
                output,
                model_output,
                state,
            } => CallOutcome::Completed {
                output,
                model_output,
                state,
            },
            RecordedOutcome::Failed { kind, error } => CallOutcome::failed(
                ModelError::from_json(kind, &error)
                    .unwrap_or_else(|| ModelError::new(kind, error.to_string())),
            ),
            RecordedOutcome::Aborted => CallOutcome::Aborted,
            RecordedOutcome::Declined { reason } => CallOutcome::Declined { reason },
        }
    }
}
