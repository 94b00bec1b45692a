//! Background tasks: calls of tools with `background(enabled)` run as tokio
//! tasks with a per-attempt time limit and retries. A deferred call returns
//! `Outcome::Started { task_id }` at once; [`Runtime::wait`] gives the final
//! outcome; callbacks and events report the end.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tool_core::{BackgroundConfig, Disposition, ErrorKind, ModelError, Outcome};
use tracing::Instrument as _;

use crate::error::RuntimeError;
use crate::events::EventKind;
use crate::pipeline::Run;
use crate::runtime::Runtime;

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
    pub outcome: Outcome,
    /// How many attempts ran (1 + retries used).
    pub attempts: u32,
}

pub(crate) type BackgroundCallback = Arc<dyn Fn(&BackgroundResult) + Send + Sync>;

type Slot = watch::Receiver<Option<Outcome>>;

/// The runtime's background tasks.
pub(crate) struct Tasks {
    next: AtomicU64,
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
            next: AtomicU64::new(1),
            slots: Mutex::default(),
            finished: Mutex::default(),
            retention,
            on_complete,
            on_failed,
        }
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
            Outcome::Completed { .. } => &self.on_complete,
            Outcome::Failed { .. } | Outcome::Aborted => &self.on_failed,
            _ => &None,
        };
        if let Some(callback) = callback
            && catch_unwind(AssertUnwindSafe(|| callback(result))).is_err()
        {
            tracing::error!(task_id = %result.task_id, "background callback panicked");
        }
    }
}

impl Runtime {
    /// Waits for a background task and returns its final outcome (any
    /// number of times, while the task is remembered).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{BackgroundConfig, Outcome, Tool, ToolError};
    /// use tool_runtime::{Runtime, ToolCall};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let report = Tool::builder("report").description("Builds a long report")
    ///     .background(BackgroundConfig::new().timeout_ms(5_000).max_retries(1))
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("report ready")) })
    ///     .build().unwrap();
    /// let runtime = Runtime::builder().tool(report).build().unwrap();
    ///
    /// let started = runtime.call(ToolCall::new("c1", "report", json!({}))).await;
    /// let Outcome::Started { task_id } = &started else { panic!("{started:?}") };
    /// assert!(started.to_model_value().as_str().unwrap().starts_with("Background task started. Task ID: "));
    /// let done = runtime.wait(task_id).await.unwrap();
    /// assert_eq!(done.output(), Some(&json!("report ready")));
    /// # });
    /// ```
    pub async fn wait(&self, task_id: &str) -> Result<Outcome, RuntimeError> {
        let mut slot = self
            .inner
            .tasks
            .slot(task_id)
            .ok_or_else(|| RuntimeError::UnknownTask {
                task_id: task_id.to_owned(),
            })?;
        let outcome = match slot.wait_for(Option::is_some).await {
            Ok(done) => done.clone(),
            Err(_) => None,
        };
        Ok(outcome.unwrap_or_else(|| Outcome::Failed {
            error: ModelError::new(
                ErrorKind::Execution,
                format!("Background task {task_id} ended without a result"),
            ),
        }))
    }

    /// Starts `run` as a background task.
    pub(crate) async fn run_background(&self, mut run: Run, config: BackgroundConfig) -> Outcome {
        if run.guard.is_none() {
            // Registered for the whole task, across attempts.
            run.guard = Some(self.inner.running.register(&run.call_id, run.abort.clone()));
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                "no tokio runtime to run a background task on; running it in the foreground"
            );
            let (outcome, timed_out) = self.run_as_given(&mut run).await;
            return self.settle(&run, outcome, timed_out);
        };
        let tasks = &self.inner.tasks;
        let task_id = format!("task-{}", tasks.next.fetch_add(1, Ordering::Relaxed));
        let (tx, slot) = watch::channel(None);
        tasks
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(task_id.clone(), slot.clone());
        tracing::info!(task_id, "tool call started as a background task");
        let (call_id, tool_id) = (run.call_id.clone(), run.tool.id().to_owned());
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
                let mut run = run;
                let (outcome, attempts, timed_out) = runtime.attempts(&run, &config).await;
                run.guard = None;
                let outcome = runtime.settle(&run, outcome, timed_out);
                let _ = tx.send(Some(outcome.clone()));
                let result = BackgroundResult {
                    task_id,
                    call_id,
                    tool_id,
                    outcome,
                    attempts,
                };
                tracing::info!(task_id = %result.task_id, attempts, "background task finished");
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
            Disposition::Deferred => Outcome::Started { task_id },
            Disposition::Foreground => match self.wait(&task_id).await {
                Ok(outcome) => outcome,
                Err(error) => Outcome::Failed {
                    error: ModelError::new(ErrorKind::Execution, error.to_string()),
                },
            },
        }
    }

    /// Runs the attempts of a background call: each under the time limit,
    /// retried after a failure or a timeout (not after a cancel).
    /// Returns the last outcome, the number of attempts and whether the last timed out.
    async fn attempts(&self, run: &Run, config: &BackgroundConfig) -> (Outcome, u32, bool) {
        let limit = config.timeout_ms.map(Duration::from_millis).or(run.timeout);
        let mut attempts = 0;
        loop {
            attempts += 1;
            // Cancel fires the call's signal, and so this child; a timeout fires only the child.
            let abort = run.abort.child();
            let (outcome, timed_out) = self
                .run_once(
                    run,
                    run.input.clone(),
                    run.request_context.clone(),
                    &abort,
                    limit,
                )
                .await;
            let timed_out = timed_out && !run.abort.is_aborted() && outcome == Outcome::Aborted;
            let retryable = timed_out
                || outcome
                    .error()
                    .is_some_and(|e| matches!(e.kind(), ErrorKind::Execution | ErrorKind::Panic));
            if retryable && attempts <= config.max_retries {
                tracing::warn!(
                    attempt = attempts,
                    timed_out,
                    "background attempt failed; retrying"
                );
                continue;
            }
            if timed_out {
                let ms = limit.map_or(0, |l| l.as_millis());
                let error = ModelError::new(
                    ErrorKind::Execution,
                    format!(
                        "Tool {} timed out after {ms} ms ({attempts} attempt{})",
                        run.tool.id(),
                        if attempts == 1 { "" } else { "s" }
                    ),
                );
                tracing::warn!(call_id = %run.call_id, "background tool call aborted: timed out");
                return (Outcome::Failed { error }, attempts, false);
            }
            return (outcome, attempts, false);
        }
    }
}
