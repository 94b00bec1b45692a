//! The runs of a thread that await background tasks, so that the next
//! stream on the thread takes their results: an index kept in the run store
//! beside the runs (under an id no run has: run ids start with `run-`),
//! saved compare-and-set like a run.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use tool_runtime::Runs;

use crate::error::AgentError;
use crate::record::Thread;

/// How often a change of the index is made again after losing to another.
const SAVE_ATTEMPTS: usize = 8;

/// What the store keeps under the index's id.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Index {
    /// The runs that awaited background tasks when last saved.
    awaiting: BTreeSet<String>,
}

/// The index of the runs of one thread of one agent that await background
/// tasks. An entry may outlive its run's tasks (a continuation took them):
/// whoever reads it checks the run.
pub(crate) struct ThreadIndex {
    runs: Runs,
    id: String,
}

impl ThreadIndex {
    pub(crate) fn new(runs: Runs, agent_id: &str, thread: &Thread) -> Self {
        ThreadIndex {
            runs,
            id: format!("thread-index/{agent_id}/{}", thread.thread_id),
        }
    }

    /// The runs listed.
    pub(crate) async fn awaiting(&self) -> Result<BTreeSet<String>, AgentError> {
        Ok(self.load().await?.0.awaiting)
    }

    /// Lists `run_id`.
    pub(crate) async fn add(&self, run_id: &str) -> Result<(), AgentError> {
        self.update(|awaiting| {
            awaiting.insert(run_id.to_owned());
        })
        .await
    }

    /// Lists none of `run_ids`.
    pub(crate) async fn remove(&self, run_ids: &[String]) -> Result<(), AgentError> {
        if run_ids.is_empty() {
            return Ok(());
        }
        self.update(|awaiting| {
            for run_id in run_ids {
                awaiting.remove(run_id);
            }
        })
        .await
    }

    async fn load(&self) -> Result<(Index, Option<u64>), AgentError> {
        match self.runs.load(&self.id).await? {
            None => Ok((Index::default(), None)),
            Some(stored) => {
                let index =
                    serde_json::from_value(stored.record).map_err(|e| AgentError::Record {
                        run_id: self.id.clone(),
                        reason: e.to_string(),
                    })?;
                Ok((index, Some(stored.revision)))
            }
        }
    }

    /// Applies `change`, again on the index another save changed meanwhile.
    async fn update(&self, change: impl Fn(&mut BTreeSet<String>)) -> Result<(), AgentError> {
        for _ in 0..SAVE_ATTEMPTS {
            let (index, revision) = self.load().await?;
            let mut changed = index.clone();
            change(&mut changed.awaiting);
            if changed == index {
                return Ok(());
            }
            let value = serde_json::to_value(&changed).map_err(|e| AgentError::Record {
                run_id: self.id.clone(),
                reason: e.to_string(),
            })?;
            if self
                .runs
                .save(&self.id, revision, false, value)
                .await?
                .is_some()
            {
                return Ok(());
            }
        }
        Err(AgentError::Conflict {
            run_id: self.id.clone(),
        })
    }
}
