//! A decision on a stored call ([`Decision`]): what a person, an
//! application or the system decides, as a value the approval rules
//! (`approval_rules.rs`) check and the decisions (`decide.rs`) carry out.

use serde_json::Value;

use crate::store::PendingKind;

/// A person's (or a system's) decision on a stored call, for
/// [`Runtime::decide`](crate::Runtime::decide): what [`Runtime::approve`](crate::Runtime::approve), [`Runtime::decline`](crate::Runtime::decline),
/// [`Runtime::resume`](crate::Runtime::resume) and [`Runtime::respond`](crate::Runtime::respond) make.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decision {
    /// Run the call waiting for approval.
    Approve,
    /// Do not run the call waiting for approval (or for its output); the
    /// model reads the reason.
    Decline(Option<String>),
    /// Continue the suspended call with this resume data.
    Resume(Value),
    /// Give the call this output without running its tool: the result of a
    /// declaration-only tool's call, or an answer instead of running a call
    /// waiting for approval. Validated against the tool's output schema.
    Respond(Value),
    /// Run the call waiting for approval with some of its arguments
    /// changed: an object of the tool's editable fields
    /// ([`ToolBuilder::editable`](tool_core::ToolBuilder::editable),
    /// `#[tool(require_approval(editable(..)))]`) and their new values. The
    /// edit is checked against the tool's edit schema and the edited input
    /// like any input before anything changes (a refused edit leaves the
    /// call waiting); the stored input is replaced in the same atomic step
    /// as the claim, and the before and after go to the audit log.
    Edit(Value),
}

impl Decision {
    /// What the call may be pending for to take this decision.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::{Decision, PendingKind};
    ///
    /// assert_eq!(Decision::Approve.pending_kinds(), [PendingKind::Approval]);
    /// assert_eq!(Decision::Resume(json!({})).pending_kinds(), [PendingKind::Suspended]);
    /// assert_eq!(Decision::Respond(json!(1)).pending_kinds(), [PendingKind::Approval, PendingKind::Output]);
    /// ```
    pub fn pending_kinds(&self) -> &'static [PendingKind] {
        match self {
            Decision::Approve | Decision::Edit(_) => &[PendingKind::Approval],
            Decision::Decline(_) | Decision::Respond(_) => {
                &[PendingKind::Approval, PendingKind::Output]
            }
            Decision::Resume(_) => &[PendingKind::Suspended],
        }
    }

    /// Whether it makes the call go on (run it, answer it, resume it),
    /// rather than stop it: what separation of duties and the count of
    /// approvals govern.
    pub(crate) fn goes_on(&self) -> bool {
        !matches!(self, Decision::Decline(_))
    }

    /// How the log says it happened.
    pub(crate) fn step_past(&self) -> &'static str {
        match self {
            Decision::Approve => "approved",
            Decision::Decline(_) => "declined",
            Decision::Resume(_) => "resumed",
            Decision::Respond(_) => "responded to",
            Decision::Edit(_) => "approved with edits",
        }
    }

    /// The `step` of the call's span (and the action of its audit entry).
    pub(crate) fn step(&self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Decline(_) => "decline",
            Decision::Resume(_) => "resume",
            Decision::Respond(_) => "respond",
            Decision::Edit(_) => "edit",
        }
    }
}
