//! Agent runs as a store keeps them: the [`RunStore`] trait, and a run's
//! record, opaque JSON under a revision that every save bumps, so that two
//! instances saving one run at once cannot lose each other's update
//! ([`RunStore::save_run`]).

use std::future::Future;

use serde_json::Value;

#[cfg(doc)]
use super::CallStore;
use super::StoreError;

/// An agent run's record, as a store keeps it.
///
/// A store of another crate builds it with [`StoredRun::new`].
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::StoredRun;
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
    /// calls, [`CallStore::purge_settled`]).
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

/// Storage of agent runs' records, keyed by run id: what an agent loop saves
/// between steps (through [`Runs`](crate::Runs)) so that a paused run is
/// continued by any instance sharing the store. A job of its own beside the
/// calls' lifecycle ([`CallStore`]), the audit log
/// ([`AuditLog`](super::AuditLog)) and standing rules
/// ([`RuleStore`](super::RuleStore)); the stores of this crate do all four,
/// and a runtime's store must ([`IntoStore`](super::IntoStore)). Finished
/// runs are purged with settled calls ([`CallStore::purge_settled`]).
///
/// The contract (the contract tests run it against every store):
/// - [`save_run`](Self::save_run) is a compare-and-set: of any number of
///   concurrent saves of one run naming the same revision (or creating the
///   same run), exactly one wins; the others change nothing.
/// - The times runs were saved are the store's own clock.
// Adding a method costs this trait and the three stores; when the runtime
// calls it, also one line in the list of `DynRunStore` (erased.rs).
pub trait RunStore: Send + Sync + 'static {
    /// The run `run_id` as last saved; `None` when no run has that id (or
    /// it finished and was purged). A stored record that does not read back
    /// is an error naming the run.
    fn load_run(
        &self,
        run_id: &str,
    ) -> impl Future<Output = Result<Option<StoredRun>, StoreError>> + Send;

    /// Saves the run `run_id`, compare-and-set: with `expected_revision`
    /// `None` it creates the run, unless a run with that id exists; with
    /// `Some(r)` it replaces the run only if its revision is still `r`.
    /// Returns the new revision (1 for a created run, `r + 1` for a
    /// replaced one), or `None` when nothing changed: someone else saved
    /// (or created) it first, or there is no such run to replace. Of any
    /// number of concurrent saves naming one revision, from any number of
    /// runtimes sharing the store, exactly one wins.
    ///
    /// `record` is opaque to the store; one nested deeper than a JSON
    /// parser reads back (127 levels) is refused with an error naming the
    /// run, and nothing is saved.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::store::{MemoryStore, RunStore};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = MemoryStore::new();
    /// let first = store.save_run("run-1", None, false, json!({ "step": 1 })).await.unwrap();
    /// assert_eq!(first, Some(1));
    /// assert_eq!(store.save_run("run-1", None, false, json!({})).await.unwrap(), None); // exists
    ///
    /// let run = store.load_run("run-1").await.unwrap().unwrap();
    /// assert_eq!((run.revision, run.record), (1, json!({ "step": 1 })));
    /// // Two instances read revision 1 and save: the first wins, the second
    /// // is told to load again.
    /// assert_eq!(store.save_run("run-1", Some(1), false, json!({ "step": 2 })).await.unwrap(), Some(2));
    /// assert_eq!(store.save_run("run-1", Some(1), false, json!({ "step": 9 })).await.unwrap(), None);
    /// assert_eq!(store.load_run("run-1").await.unwrap().unwrap().record, json!({ "step": 2 }));
    /// # });
    /// ```
    fn save_run(
        &self,
        run_id: &str,
        expected_revision: Option<u64>,
        finished: bool,
        record: Value,
    ) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send;
}
