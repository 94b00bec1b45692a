//! The agent runs kept in a runtime's store: [`Runs`].

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::store::{DynRunStore, StoreError, StoredRun};

/// The agent runs kept in a runtime's store, from [`Runtime::runs`](crate::Runtime::runs):
/// what an agent loop saves between steps so that another instance sharing
/// the store can continue a paused run. A record is opaque JSON to the store;
/// saves are compare-and-set on a revision, so of two instances continuing
/// one run exactly one save wins. Cheap to clone.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::Runtime;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let runs = Runtime::builder().build().unwrap().runs();
/// assert_eq!(runs.save("run-1", None, false, json!({ "step": 1 })).await.unwrap(), Some(1));
/// // A save that read revision 1 wins once; a second one that read it too loses.
/// assert_eq!(runs.save("run-1", Some(1), false, json!({ "step": 2 })).await.unwrap(), Some(2));
/// assert_eq!(runs.save("run-1", Some(1), false, json!({ "step": 2 })).await.unwrap(), None);
/// let run = runs.load("run-1").await.unwrap().unwrap();
/// assert_eq!((run.revision, run.record), (2, json!({ "step": 2 })));
/// # });
/// ```
#[derive(Clone)]
pub struct Runs {
    store: Arc<dyn DynRunStore>,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs").finish_non_exhaustive()
    }
}

impl Runs {
    pub(crate) fn new(store: Arc<dyn DynRunStore>) -> Self {
        Runs { store }
    }

    /// The run `run_id` as last saved, or `None`.
    pub fn load(
        &self,
        run_id: &str,
    ) -> impl Future<Output = Result<Option<StoredRun>, StoreError>> + Send + 'static {
        let (store, run_id) = (Arc::clone(&self.store), run_id.to_owned());
        async move { store.load_run(&run_id).await }
    }

    /// Saves `record` as the run `run_id` if its revision is still
    /// `expected_revision` (`None`: creates it, if it does not exist);
    /// `finished` runs are purged with settled calls. The new revision, or
    /// `None` when another save came first.
    pub fn save(
        &self,
        run_id: &str,
        expected_revision: Option<u64>,
        finished: bool,
        record: Value,
    ) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send + 'static {
        let (store, run_id) = (Arc::clone(&self.store), run_id.to_owned());
        async move {
            store
                .save_run(&run_id, expected_revision, finished, record)
                .await
        }
    }
}
