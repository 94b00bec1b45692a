//! Background tasks: calls of tools with `background(enabled)` run as tokio
//! tasks with a per-attempt time limit and retries. A deferred call returns
//! `CallOutcome::BackgroundStarted { task_id }` at once; [`Runtime::wait`](crate::Runtime::wait) gives the final
//! outcome; callbacks and events report the end.
//!
//! A task is a stored call (kind `Task`, its id the call id) that the
//! runtime which created it claims at once (or, when it leaves tasks to
//! workers, a [`Worker`](crate::Worker) of any runtime sharing the store)
//! and runs under a lease: its outcome is recorded in the store, so `wait`
//! works from any runtime sharing the store and after a restart, and a task
//! whose runtime died is recovered by a worker or [`Runtime::recover`](crate::Runtime::recover).
//!
//! The call path runs a task's attempts (`call_path.rs`); [`Tasks`] keeps
//! what `wait` reads.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use crate::call_outcome::CallOutcome;
use crate::claims::StoredCalls;
use crate::error::RuntimeError;
use crate::store::{CallState, StoredCall};

/// How a background task ended, given to the runtime's callbacks.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BackgroundResult {
    /// The task.
    pub task_id: String,
    /// The call it runs.
    pub call_id: String,
    /// The tool.
    pub tool_id: String,
    /// The final outcome.
    pub outcome: CallOutcome,
    /// How many attempts ran (1 + retries used).
    pub attempts: u32,
}

pub(crate) type BackgroundCallback = Arc<dyn Fn(&BackgroundResult) + Send + Sync>;

pub(crate) type Slot = watch::Receiver<Option<CallOutcome>>;

/// The background tasks of a runtime, the component behind `wait`: where
/// the outcomes of the tasks it runs appear first, its callbacks, and the
/// store it reads any other task's outcome from.
pub(crate) struct Tasks {
    stored: StoredCalls,
    slots: Mutex<HashMap<String, Slot>>,
    finished: Mutex<VecDeque<String>>,
    retention: usize,
    on_complete: Option<BackgroundCallback>,
    on_failed: Option<BackgroundCallback>,
}

impl fmt::Debug for Tasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tasks")
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    pub(crate) fn new(
        stored: StoredCalls,
        retention: usize,
        on_complete: Option<BackgroundCallback>,
        on_failed: Option<BackgroundCallback>,
    ) -> Self {
        Tasks {
            stored,
            slots: Mutex::default(),
            finished: Mutex::default(),
            retention,
            on_complete,
            on_failed,
        }
    }

    /// Remembers a started task's slot, where its outcome will be.
    pub(crate) fn start(&self, task_id: String, slot: Slot) {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(task_id, slot);
    }

    fn slot(&self, task_id: &str) -> Option<Slot> {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(task_id)
            .cloned()
    }

    /// Remembers a finished task, forgetting the oldest beyond the retention.
    pub(crate) fn finished(&self, task_id: String) {
        let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        finished.push_back(task_id);
        while finished.len() > self.retention {
            if let Some(old) = finished.pop_front() {
                self.slots
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&old);
            }
        }
    }

    pub(crate) fn callback(&self, result: &BackgroundResult) {
        let callback = match result.outcome {
            CallOutcome::Completed { .. } => &self.on_complete,
            CallOutcome::Failed { .. } | CallOutcome::Aborted => &self.on_failed,
            _ => &None,
        };
        if let Some(callback) = callback
            && tool_core::catch_panic(|| callback(result)).is_err()
        {
            tracing::error!(task_id = %result.task_id, "background callback panicked");
        }
    }
}

impl Tasks {
    /// Waits for the task `task_id` and returns its final outcome (see
    /// [`Runtime::wait`](crate::Runtime::wait)): watched in memory when it
    /// runs here, read from the store otherwise.
    pub(crate) fn wait(
        &self,
        task_id: &str,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        let slot = self.slot(task_id);
        let (stored, task_id) = (self.stored.clone(), task_id.to_owned());
        async move {
            let Some(mut slot) = slot else {
                return wait_in_store(&stored, &task_id).await;
            };
            let outcome = match slot.wait_for(Option::is_some).await {
                Ok(done) => done.clone(),
                Err(_) => None,
            };
            match outcome {
                Some(outcome) => Ok(outcome),
                // The task here ended without a result (its tokio runtime
                // stopped): another runtime recovers it; the store will say.
                None => wait_in_store(&stored, &task_id).await,
            }
        }
    }

    /// The final outcome of the task `task_id`, as [`wait`](Self::wait)
    /// gives it, for a caller of the call path: a store that cannot be read
    /// is asked again for up to one lease; after that, or on another error,
    /// a failure saying the outcome is not known here and to ask again,
    /// never an outcome the store did not record.
    pub(crate) async fn outcome(&self, task_id: &str) -> CallOutcome {
        let until = tokio::time::Instant::now() + self.stored.lease();
        let mut pause = Duration::from_millis(50);
        loop {
            match self.wait(task_id).await {
                Ok(outcome) => return outcome,
                Err(RuntimeError::Store(error)) if tokio::time::Instant::now() < until => {
                    tracing::warn!(%error, task_id, "could not read the outcome of a call; trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(error) => return CallOutcome::not_recorded(task_id, error),
            }
        }
    }
}

/// Reads the stored task `task_id` until it settles, checking less and
/// less often (from 10 ms to 1 s).
async fn wait_in_store(stored: &StoredCalls, task_id: &str) -> Result<CallOutcome, RuntimeError> {
    let mut pause = Duration::from_millis(10);
    loop {
        match stored.get(task_id).await? {
            None => {
                return Err(RuntimeError::UnknownTask {
                    task_id: task_id.to_owned(),
                });
            }
            Some(StoredCall {
                state: CallState::Settled { outcome, .. },
                ..
            }) => return Ok(outcome.into()),
            Some(_) => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn result(task_id: &str, outcome: CallOutcome) -> BackgroundResult {
        BackgroundResult {
            task_id: task_id.into(),
            call_id: "c".into(),
            tool_id: "t".into(),
            outcome,
            attempts: 1,
        }
    }

    #[tokio::test]
    async fn wait_reads_a_task_this_instance_does_not_run_from_the_store() {
        let tasks = Tasks::new(StoredCalls::in_memory(), 4, None, None);
        let unknown = tasks.wait("task-9").await;
        assert!(
            matches!(unknown, Err(RuntimeError::UnknownTask { .. })),
            "{unknown:?}"
        );
        let (tx, slot) = watch::channel(None);
        tasks.start("task-1".into(), slot);
        let waiting = tokio::spawn(tasks.wait("task-1"));
        tx.send(Some(CallOutcome::Aborted)).unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), CallOutcome::Aborted);
    }

    #[test]
    fn finished_tasks_beyond_the_retention_are_forgotten_oldest_first() {
        let tasks = Tasks::new(StoredCalls::in_memory(), 2, None, None);
        for id in ["task-1", "task-2", "task-3"] {
            let (_tx, slot) = watch::channel(None);
            tasks.start(id.into(), slot);
            tasks.finished(id.into());
        }
        assert!(tasks.slot("task-1").is_none());
        assert!(tasks.slot("task-2").is_some() && tasks.slot("task-3").is_some());
    }

    #[test]
    fn callbacks_fire_by_outcome_and_a_panicking_one_is_contained() {
        let completed = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&completed);
        let on_complete: BackgroundCallback = Arc::new(move |_: &BackgroundResult| {
            seen.fetch_add(1, Ordering::SeqCst);
        });
        let on_failed: BackgroundCallback = Arc::new(|_: &BackgroundResult| panic!("boom"));
        let tasks = Tasks::new(
            StoredCalls::in_memory(),
            10,
            Some(on_complete),
            Some(on_failed),
        );
        let done = CallOutcome::Completed {
            output: serde_json::json!(1),
            model_output: None,
            state: None,
        };
        tasks.callback(&result("task-1", done));
        tasks.callback(&result("task-2", CallOutcome::Aborted));
        assert_eq!(completed.load(Ordering::SeqCst), 1);
    }
}
