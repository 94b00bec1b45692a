//! An agent run's record, as a store keeps it: opaque JSON under a revision
//! that every save bumps, so that two instances saving one run at once
//! cannot lose each other's update ([`PendingStore::save_run`]).

use serde_json::Value;

#[cfg(doc)]
use super::PendingStore;

/// An agent run's record, as a store keeps it.
///
/// A store of another crate builds it with [`StoredRun::new`].
///
/// ```
/// use serde_json::json;
/// use tool_runtime::StoredRun;
///
/// let run = StoredRun::new("run-1", 1, false, json!({ "messages": [] }));
/// assert_eq!((run.run_id.as_str(), run.revision, run.finished), ("run-1", 1, false));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoredRun {
    /// The run's id (the key).
    pub run_id: String,
    /// Bumped by every save: a save names the revision it read. The first
    /// save (the one that creates the run) makes revision 1.
    pub revision: u64,
    /// Whether the run has finished (finished runs are purged with settled
    /// calls, [`PendingStore::purge_settled`]).
    pub finished: bool,
    /// The agent's record, opaque to the store.
    pub record: Value,
}

impl StoredRun {
    /// A run record as a store read it.
    pub fn new(run_id: impl Into<String>, revision: u64, finished: bool, record: Value) -> Self {
        StoredRun {
            run_id: run_id.into(),
            revision,
            finished,
            record,
        }
    }
}
