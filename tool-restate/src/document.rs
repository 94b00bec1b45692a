//! A stored call as the state of its virtual object: one JSON document per
//! call, written at the end of each step.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tool_runtime::store::{PendingCall, PendingKind, RecordedOutcome};
use tool_runtime::{CallState, StoredCall};

/// A call as its `ToolCalls` object keeps it (state key `call`): waiting
/// for a decision, queued to run in the background, or settled. A step
/// never ends with the call running: the step runs it to its end or to its
/// next wait.
///
/// ```
/// use serde_json::json;
/// use tool_restate::CallDocument;
/// use tool_runtime::store::{PendingCall, PendingKind};
/// use tool_runtime::StoredCall;
///
/// let stored = StoredCall::pending(PendingCall::new("c1", "pay", PendingKind::Approval, json!({ "amount": 5 })));
/// let document = CallDocument::of(&stored).unwrap();
/// assert_eq!(document.into_stored(), stored);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallDocument {
    /// The call, as it was asked (or last edited).
    pub call: PendingCall,
    /// Waiting or settled.
    pub state: DocumentState,
    /// Runs started since it last became pending.
    pub attempt: u32,
    /// The fencing token of its latest claim: part of its version's digest.
    pub epoch: u64,
    /// The resume data it was last resumed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_data: Option<Value>,
}

/// Where a [`CallDocument`]'s call is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum DocumentState {
    /// Waiting for a decision (approval, resume data or its output).
    Pending,
    /// A background task queued to run: it waits for nobody (the object
    /// runs it in an invocation of its own).
    Queued,
    /// Finished.
    Settled {
        /// How it ended.
        outcome: Box<RecordedOutcome>,
        /// When, in milliseconds since the Unix epoch.
        settled_at_ms: u64,
    },
}

impl CallDocument {
    /// `stored` as a document; `None` while it runs (a step that ends with
    /// its call running is a step this crate does not take).
    pub fn of(stored: &StoredCall) -> Option<Self> {
        let state = match &stored.state {
            CallState::Pending if stored.call.kind == PendingKind::Task => DocumentState::Queued,
            CallState::Pending => DocumentState::Pending,
            CallState::Settled {
                outcome,
                settled_at,
            } => DocumentState::Settled {
                outcome: Box::new(outcome.clone()),
                settled_at_ms: millis(*settled_at),
            },
            CallState::Running { .. } => return None,
        };
        Some(CallDocument {
            call: stored.call.clone(),
            state,
            attempt: stored.attempt,
            epoch: stored.epoch,
            resume_data: stored.resume_data.clone(),
        })
    }

    /// The stored call it keeps.
    pub fn into_stored(self) -> StoredCall {
        let state = match self.state {
            DocumentState::Pending | DocumentState::Queued => CallState::Pending,
            DocumentState::Settled {
                outcome,
                settled_at_ms,
            } => CallState::Settled {
                outcome: *outcome,
                settled_at: UNIX_EPOCH + Duration::from_millis(settled_at_ms),
            },
        };
        StoredCall {
            call: self.call,
            state,
            attempt: self.attempt,
            epoch: self.epoch,
            resume_data: self.resume_data,
        }
    }

    /// The recorded outcome, once settled.
    pub fn outcome(&self) -> Option<&RecordedOutcome> {
        match &self.state {
            DocumentState::Settled { outcome, .. } => Some(outcome),
            DocumentState::Pending | DocumentState::Queued => None,
        }
    }
}

/// Milliseconds since the Unix epoch, by this process's clock (as the
/// runtime's expiry reads it).
pub(crate) fn now_ms() -> u64 {
    millis(SystemTime::now())
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}
