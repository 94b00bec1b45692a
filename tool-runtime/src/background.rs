//! Background tasks: calls of tools with `background(enabled)` run as tokio
//! tasks with a per-attempt time limit and retries. A deferred call returns
//! `CallOutcome::BackgroundStarted { task_id }` at once; [`Runtime::wait`] gives the final
//! outcome; callbacks and events report the end.
//!
//! A task is a stored call (kind `Task`, its id the call id) that the
//! runtime which created it claims at once (or, when it leaves tasks to
//! workers, a [`Worker`](crate::Worker) of any runtime sharing the store)
//! and runs under a lease: its outcome is recorded in the store, so `wait`
//! works from any runtime sharing the store and after a restart, and a task
//! whose runtime died is recovered by a worker or [`Runtime::recover`].

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tool_core::{Admitted, BackgroundConfig, Disposition, ErrorKind, ModelError, Outcome};
use tracing::Instrument as _;

use crate::abort::RunningGuard;
use crate::error::RuntimeError;
use crate::events::EventKind;
use crate::outcome::CallOutcome;
use crate::pipeline::{CallRecord, Ran};
use crate::runtime::Runtime;
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

type Slot = watch::Receiver<Option<CallOutcome>>;

/// The background tasks this runtime runs: where their outcomes appear
/// first, before `wait` needs the store.
pub(crate) struct Tasks {
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
        retention: usize,
        on_complete: Option<BackgroundCallback>,
        on_failed: Option<BackgroundCallback>,
    ) -> Self {
        Tasks {
            slots: Mutex::default(),
            finished: Mutex::default(),
            retention,
            on_complete,
            on_failed,
        }
    }

    /// Remembers a started task's slot, where its outcome will be.
    fn start(&self, task_id: String, slot: Slot) {
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
    fn finished(&self, task_id: String) {
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

    fn callback(&self, result: &BackgroundResult) {
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

impl Runtime {
    /// Waits for a background task and returns its final outcome (any
    /// number of times, while its outcome is kept). A task this runtime
    /// runs is watched in memory; any other (run by another runtime sharing
    /// the store, or before a restart) is read from the store until it
    /// settles.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{BackgroundConfig, ModelFacing, Tool, ToolError};
    /// use tool_runtime::{CallOutcome, Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let report = Tool::builder("report").description("Builds a long report")
    ///     .background(BackgroundConfig::new().timeout_ms(5_000).max_retries(1))
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("report ready")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(report).build().unwrap();
    ///
    /// let started = runtime.call(ToolCall::new("c1", "report", json!({}))).await;
    /// let CallOutcome::BackgroundStarted { task_id } = &started else { panic!("{started:?}") };
    /// assert!(started.to_model_value().as_str().unwrap().starts_with("Background task started. Task ID: "));
    /// let done = runtime.wait(task_id).await.unwrap();
    /// assert_eq!(done.output(), Some(&json!("report ready")));
    /// # });
    /// ```
    pub fn wait(
        &self,
        task_id: &str,
    ) -> impl Future<Output = Result<CallOutcome, RuntimeError>> + Send + 'static {
        let slot = self.inner.tasks.slot(task_id);
        let (runtime, task_id) = (self.clone(), task_id.to_owned());
        async move {
            let Some(mut slot) = slot else {
                return runtime.wait_in_store(&task_id).await;
            };
            let outcome = match slot.wait_for(Option::is_some).await {
                Ok(done) => done.clone(),
                Err(_) => None,
            };
            match outcome {
                Some(outcome) => Ok(outcome),
                // The task here ended without a result (its tokio runtime
                // stopped): another runtime recovers it; the store will say.
                None => runtime.wait_in_store(&task_id).await,
            }
        }
    }

    /// The final outcome of the task `task_id`, as [`wait`](Self::wait)
    /// gives it; failed with the reason when it cannot be read.
    pub(crate) async fn task_outcome(&self, task_id: &str) -> CallOutcome {
        self.wait(task_id).await.unwrap_or_else(|error| {
            CallOutcome::failed(ModelError::new(ErrorKind::Execution, error.to_string()))
        })
    }

    /// Reads the stored task `task_id` until it settles, checking less and
    /// less often (from 10 ms to 1 s).
    async fn wait_in_store(&self, task_id: &str) -> Result<CallOutcome, RuntimeError> {
        let mut pause = Duration::from_millis(10);
        loop {
            match self.inner.calls.get(task_id).await? {
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

    /// Runs an admitted call as a background task (registered for `cancel`
    /// by `guard` until it ends).
    pub(crate) async fn run_background(
        &self,
        record: CallRecord,
        admitted: Admitted,
        config: BackgroundConfig,
        guard: RunningGuard,
    ) -> CallOutcome {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                "no tokio runtime to run a background task on; running it in the foreground"
            );
            let ran = self
                .run_once(
                    admitted,
                    &record.abort,
                    record.timeout,
                    record.lease.as_ref(),
                )
                .await;
            drop(guard);
            return self.settle(&record, ran).await;
        };
        let tasks = &self.inner.tasks;
        let task_id = record.call_id.clone();
        let (tx, slot) = watch::channel(None);
        tasks.start(task_id.clone(), slot);
        tracing::info!(task_id, "tool call started as a background task");
        let (call_id, tool_id) = (record.call_id.clone(), record.tool.id().to_owned());
        self.inner
            .events
            .emit(&call_id, &tool_id, || EventKind::BackgroundStarted {
                task_id: task_id.clone(),
            });
        let runtime = self.clone();
        let disposition = config.disposition;
        let task = {
            let task_id = task_id.clone();
            async move {
                let attempts = runtime.attempts(&record, admitted, &config).await;
                drop(guard);
                let outcome = runtime.settle(&record, attempts.last).await;
                let _ = tx.send(Some(outcome.clone()));
                let result = BackgroundResult {
                    task_id,
                    call_id,
                    tool_id,
                    outcome,
                    attempts: attempts.count,
                };
                tracing::info!(task_id = %result.task_id, attempts = result.attempts, "background task finished");
                runtime.inner.tasks.callback(&result);
                runtime.inner.tasks.finished(result.task_id.clone());
                runtime
                    .inner
                    .events
                    .emit(&result.call_id, &result.tool_id, || {
                        EventKind::BackgroundCompleted {
                            task_id: result.task_id.clone(),
                            outcome: result.outcome.clone(),
                        }
                    });
            }
        };
        handle.spawn(task.instrument(tracing::Span::current()));
        match disposition {
            Disposition::Deferred => CallOutcome::BackgroundStarted { task_id },
            Disposition::Foreground => self.task_outcome(&task_id).await,
        }
    }

    /// Runs the attempts of a background call: each under the time limit
    /// with an abort signal of its own, retried after a failure or a timeout
    /// (not after a cancel).
    async fn attempts(
        &self,
        record: &CallRecord,
        admitted: Admitted,
        config: &BackgroundConfig,
    ) -> Attempts {
        let limit = config
            .timeout_ms
            .map(Duration::from_millis)
            .or(record.timeout);
        // A recovered task goes on counting from the attempts before the crash.
        let mut count = record.lease.as_ref().map_or(0, |lease| lease.attempt() - 1);
        loop {
            count += 1;
            // Cancel fires the call's signal, and so this child; a timeout fires only the child.
            let abort = record.abort.child();
            let attempt = admitted
                .clone()
                .with_abort_signal(abort.clone())
                .with_attempt(count);
            let ran = self
                .run_once(attempt, &abort, limit, record.lease.as_ref())
                .await;
            let timed_out =
                ran.timed_out && !record.abort.is_aborted() && ran.outcome == Outcome::Aborted;
            let retryable = timed_out
                || ran
                    .outcome
                    .error()
                    .is_some_and(|e| matches!(e.kind(), ErrorKind::Execution | ErrorKind::Panic));
            if retryable && count <= config.max_retries {
                tracing::warn!(
                    attempt = count,
                    timed_out,
                    "background attempt failed; retrying"
                );
                continue;
            }
            let last = if timed_out {
                let ms = limit.map_or(0, |l| l.as_millis());
                let error = ModelError::new(
                    ErrorKind::Execution,
                    format!(
                        "Tool {} timed out after {ms} ms ({count} attempt{})",
                        record.tool.id(),
                        if count == 1 { "" } else { "s" }
                    ),
                );
                tracing::warn!(call_id = %record.call_id, "background tool call aborted: timed out");
                // Reported as the failure it is, not as an abort.
                Ran {
                    outcome: Outcome::Failed { error },
                    timed_out: false,
                }
            } else {
                ran
            };
            return Attempts { last, count };
        }
    }
}

/// The attempts of a background call.
struct Attempts {
    /// How the last attempt ended.
    last: Ran,
    /// How many ran (1 + retries used).
    count: u32,
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

    #[test]
    fn finished_tasks_beyond_the_retention_are_forgotten_oldest_first() {
        let tasks = Tasks::new(2, None, None);
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
        let tasks = Tasks::new(10, Some(on_complete), Some(on_failed));
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
