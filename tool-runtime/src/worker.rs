//! Workers: the loop that claims stored background tasks and runs them, on
//! any runtime sharing the store, and recovers the calls of instances that
//! died.
//!
//! A worker claims a task the moment one is stored when its store can tell
//! it ([`CallStore::task_signal`](crate::store::CallStore::task_signal):
//! the memory store, SQLite within one process, PostgreSQL through
//! `LISTEN`/`NOTIFY`), and otherwise finds it on its next poll. Each claimed
//! task runs as a tokio task of its own, under the runtime's lease, with its
//! tool's declared time limit and retries; dropping the worker's future stops
//! the claiming, never a task it claimed.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::before_run::RunKind;
use crate::decide::Decisions;
use crate::store::{PendingKind, TaskSignal};

/// Tasks a worker runs at once unless told otherwise.
const CONCURRENCY: usize = 16;

/// Claims and runs the stored background tasks of a [`Runtime`](crate::Runtime)'s tools,
/// and recovers interrupted calls; made by [`Runtime::worker`](crate::Runtime::worker).
///
/// Run one (or more) per instance that should execute tasks. Several
/// workers on any number of instances sharing a store never run a task
/// twice: each claim is one atomic transition of the store.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use serde_json::json;
/// use tool_core::{BackgroundConfig, Tool, ToolError};
/// use tool_runtime::store::MemoryStore;
/// use tool_runtime::{CallOutcome, Runtime, ToolCall};
///
/// fn report() -> Tool {
///     Tool::builder("report").description("Builds a report")
///         .background(BackgroundConfig::new().timeout_ms(60_000).max_retries(2))
///         .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("ready")) })
///         .build().unwrap()
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // A front end that takes calls, and a worker instance, sharing a store.
/// let store = Arc::new(MemoryStore::new());
/// let front = Runtime::builder().tool(report()).store(Arc::clone(&store))
///     .leave_tasks_to_workers(true).build().unwrap();
/// let back = Runtime::builder().tool(report()).store(store).build().unwrap();
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let worker = tokio::spawn(
///     back.worker().concurrency(4).poll_every(Duration::from_secs(5)).run_until(async move {
///         let _ = stopped.await;
///     }),
/// );
///
/// let started = front.call(ToolCall::new("c1", "report", json!({}))).await;
/// assert!(matches!(started, CallOutcome::BackgroundStarted { .. }));
/// assert_eq!(front.wait("c1").await.unwrap().output(), Some(&json!("ready")));
///
/// stop.send(()).unwrap(); // stops claiming, waits for the tasks it runs
/// worker.await.unwrap();
/// # });
/// ```
#[derive(Debug, Clone)]
#[must_use = "a worker does nothing until its `run` future is awaited or spawned"]
pub struct Worker {
    decisions: Decisions,
    concurrency: usize,
    poll_every: Option<Duration>,
}

impl Worker {
    /// A worker running the stored tasks of `decisions`' call path.
    pub(crate) fn new(decisions: Decisions) -> Self {
        Worker {
            decisions,
            concurrency: CONCURRENCY,
            poll_every: None,
        }
    }

    /// How many tasks it runs at once, at least one (default 16). Calls
    /// recovered from a dead instance run beside them, uncounted.
    pub fn concurrency(mut self, tasks: usize) -> Self {
        self.concurrency = tasks.max(1);
        self
    }

    /// How often it looks for work without being told of it: tasks stored
    /// where its store cannot signal (another process on one SQLite file),
    /// and calls whose lease expired (default: the runtime's lease).
    pub fn poll_every(mut self, interval: Duration) -> Self {
        self.poll_every = Some(interval.max(Duration::from_millis(1)));
        self
    }

    /// Works until the future is dropped. The tasks it claimed go on
    /// running (and are recorded) after that.
    ///
    /// # Panics
    ///
    /// When polled outside a tokio runtime with its time driver, as
    /// `tokio::spawn` and `tokio::time::sleep` do.
    pub fn run(self) -> impl Future<Output = ()> + Send + 'static {
        self.run_until(std::future::pending())
    }

    /// Works until `shutdown` resolves, then stops claiming and resolves
    /// once the tasks it claimed have finished.
    ///
    /// # Panics
    ///
    /// As [`run`](Self::run).
    pub fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let Worker {
            decisions,
            concurrency,
            poll_every,
        } = self;
        let poll_every = poll_every.unwrap_or_else(|| decisions.path().stored().lease());
        async move {
            let slots = Arc::new(Semaphore::new(concurrency));
            let working = work(&decisions, &slots, poll_every);
            tokio::select! {
                () = working => {}
                () = shutdown => {}
            }
            // Every slot free: every task this worker claimed has ended.
            let all = u32::try_from(concurrency).unwrap_or(u32::MAX);
            let _ = slots.acquire_many(all).await;
        }
        .instrument(tracing::info_span!("worker"))
    }
}

/// The worker's loop: sweep when due, claim while slots are free, then wait
/// for a signal, a free slot or the next sweep.
async fn work(decisions: &Decisions, slots: &Arc<Semaphore>, poll_every: Duration) {
    let calls = decisions.path().stored();
    let tool_ids = decisions.path().tool_ids();
    let mut signal = calls.task_signal();
    let mut next_sweep = Instant::now();
    loop {
        if Instant::now() >= next_sweep {
            sweep(decisions, &tool_ids).await;
            next_sweep = Instant::now() + poll_every;
        }
        let full = loop {
            let Ok(slot) = Arc::clone(slots).try_acquire_owned() else {
                break true;
            };
            match calls.claim_next(PendingKind::Task, &tool_ids).await {
                Ok(Some((stored, lease))) => {
                    let decisions = decisions.clone();
                    tokio::spawn(
                        async move {
                            // Its outcome is in the store (or why not, in the log).
                            let _ = decisions.run_to_end(stored, lease, RunKind::First).await;
                            drop(slot);
                        }
                        .in_current_span(),
                    );
                }
                Ok(None) => break false,
                Err(error) => {
                    tracing::warn!(%error, "could not claim a task; trying again at the next poll");
                    break false;
                }
            }
        };
        tokio::select! {
            () = tokio::time::sleep_until(next_sweep) => {}
            () = stored(&mut signal), if !full => {}
            _ = Arc::clone(slots).acquire_owned(), if full => {}
        }
    }
}

/// Resolves when `signal` tells of a stored task; never without a signal.
async fn stored(signal: &mut Option<TaskSignal>) {
    match signal {
        Some(signal) => signal.stored().await,
        None => std::future::pending().await,
    }
}

/// Recovers the calls whose lease expired (each as a tokio task of its own)
/// and purges settled calls (and finished agent runs) beyond the retention.
async fn sweep(decisions: &Decisions, tool_ids: &[String]) {
    let calls = decisions.path().stored();
    calls.purge_if_due().await;
    match calls.recover_expired(tool_ids).await {
        Ok(expired) => {
            for (stored, lease) in expired {
                let decisions = decisions.clone();
                tokio::spawn(
                    async move {
                        // Its outcome is in the store (or why not, in the log).
                        let _ = decisions.recover_one(stored, lease).await;
                    }
                    .in_current_span(),
                );
            }
        }
        Err(error) => {
            tracing::warn!(%error, "could not recover interrupted calls; trying again at the next poll");
        }
    }
}
