//! Why an agent could not be built, or a run not continued.

use tool_core::provider::ExportError;
use tool_runtime::{RuntimeError, StoreError};

/// Why an agent could not be built, or a run not continued.
///
/// ```
/// use tool_agent::AgentError;
///
/// let error = AgentError::UnknownRun { run_id: "run-1".into() };
/// assert_eq!(error.to_string(), "no agent run \"run-1\" is stored");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A tool cannot be exported for the model's provider.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// No run with this id is stored.
    #[error("no agent run {run_id:?} is stored")]
    UnknownRun {
        /// The run.
        run_id: String,
    },
    /// The run is another agent's.
    #[error("run {run_id:?} belongs to agent {owner:?}, not {agent:?}")]
    OtherAgent {
        /// The run.
        run_id: String,
        /// The agent whose run it is.
        owner: String,
        /// This agent.
        agent: String,
    },
    /// The decision names a call that does not wait in the run (for this
    /// kind of decision).
    #[error(
        "call {call_id:?} is not waiting for {expected} in run {run_id:?}{}",
        describe_waiting(waiting)
    )]
    NotWaiting {
        /// The run.
        run_id: String,
        /// The call named.
        call_id: String,
        /// What the decision needed it to wait for.
        expected: &'static str,
        /// The calls that do wait, and for what.
        waiting: Vec<(String, &'static str)>,
    },
    /// A reply came while calls wait for approval: approval is a consent
    /// boundary, decided only by a decision.
    #[error("run {run_id:?} has calls waiting for approval ({}): approve or decline them first", call_ids.join(", "))]
    ApprovalPending {
        /// The run.
        run_id: String,
        /// The calls.
        call_ids: Vec<String>,
    },
    /// A reply came while calls wait for their output from the application
    /// (declaration-only tools): only the application answers them.
    #[error("run {run_id:?} has calls waiting for their output from the application ({}): respond to or decline them first", call_ids.join(", "))]
    OutputPending {
        /// The run.
        run_id: String,
        /// The calls.
        call_ids: Vec<String>,
    },
    /// A continuation ([`Agent::continue_run`](crate::Agent::continue_run))
    /// of a run that awaits no background task, or whose calls wait for a
    /// decision first.
    #[error(
        "run {run_id:?} cannot continue for background tasks: {}{}",
        if waiting.is_empty() { "it awaits none" } else { "calls wait for a decision" },
        describe_waiting(waiting)
    )]
    NoBackgroundTasks {
        /// The run.
        run_id: String,
        /// The calls that wait, and for what.
        waiting: Vec<(String, &'static str)>,
    },
    /// Another instance changed the run at the same time, again and again.
    #[error("run {run_id:?} was changed by another instance while this one saved it")]
    Conflict {
        /// The run.
        run_id: String,
    },
    /// The stored run could not be read.
    #[error("the record of run {run_id:?} cannot be read: {reason}")]
    Record {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// The runtime refused the decision.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn describe_waiting(waiting: &[(String, &'static str)]) -> String {
    if waiting.is_empty() {
        return "; no call waits in it".to_owned();
    }
    let calls: Vec<String> = waiting
        .iter()
        .map(|(id, what)| format!("{id} ({what})"))
        .collect();
    format!("; waiting: {}", calls.join(", "))
}
