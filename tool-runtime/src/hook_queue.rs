//! How the call path runs hooks and waits for approval policies, sync or
//! async alike:
//!
//! - A hook runs to its end or to the hook time limit
//!   ([`DEFAULT_HOOK_TIMEOUT`], [`RuntimeBuilder::hook_timeout`](crate::RuntimeBuilder::hook_timeout)),
//!   whichever comes first; past it, its future is dropped, the timeout is
//!   logged, and the call goes on. The tool's hook runs before the runtime's.
//! - Streamed input: `on_input_start` and each `on_input_delta` go on one
//!   queue per call, in arrival order, and run one at a time (each to its
//!   end or its time limit before the next starts). `push` never waits for
//!   a hook: it runs a hook itself only up to its first await, and only
//!   when no earlier one is still running (so a sync hook runs in `push`,
//!   as a plain call); the rest runs on a task of the queue's. `finish`
//!   waits for the queue to empty before `on_input_available`, so a call's
//!   hooks fire in order. A slow hook delays only the hooks after it, each
//!   by at most the time limit.
//! - An approval policy answers within the approval time limit
//!   ([`DEFAULT_APPROVAL_TIMEOUT`], [`RuntimeBuilder::approval_timeout`](crate::RuntimeBuilder::approval_timeout));
//!   past it, approval is required (`approval_policy.rs`).
//!
//! Work that finishes on its first poll (every sync hook or policy) never
//! touches the timer.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::sync::mpsc;
use tool_core::Hooks;
use tracing::Instrument as _;

/// How long a runtime waits for a hook, unless
/// [`RuntimeBuilder::hook_timeout`](crate::RuntimeBuilder::hook_timeout) says otherwise.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a runtime waits for an approval policy's answer, unless
/// [`RuntimeBuilder::approval_timeout`](crate::RuntimeBuilder::approval_timeout)
/// says otherwise; past it, approval is required.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(10);

/// `work`'s output, or `None` when `limit` passed first. Without a tokio
/// runtime there is no timer: the work runs to its end.
pub(crate) async fn within<T>(limit: Duration, work: impl Future<Output = T>) -> Option<T> {
    let mut work = pin!(work);
    if let Poll::Ready(done) = poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await {
        return Some(done);
    }
    if tokio::runtime::Handle::try_current().is_err() {
        return Some(work.await);
    }
    tokio::time::timeout(limit, work).await.ok()
}

/// The hooks a call fires: its tool's, then the runtime's, each under the
/// time limit.
pub(crate) struct Firing<'a> {
    pub(crate) tool: Option<&'a Hooks>,
    pub(crate) runtime: &'a Hooks,
    pub(crate) limit: Duration,
}

impl Firing<'_> {
    /// Whether the tool or the runtime has the hook `has` asks about.
    pub(crate) fn any(&self, has: fn(&Hooks) -> bool) -> bool {
        self.tool.is_some_and(has) || has(self.runtime)
    }

    /// The future that fires one hook (`fire`, set when `has`) of the tool
    /// and then of the runtime on the arguments `args` makes; `None`, and
    /// no arguments made, when neither has it. Nothing runs until it is
    /// polled.
    pub(crate) fn job<A: Clone, F>(
        &self,
        name: &'static str,
        has: fn(&Hooks) -> bool,
        fire: impl Fn(&Hooks, A) -> F,
        args: impl FnOnce() -> A,
    ) -> Option<impl Future<Output = ()> + Send + 'static>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let tool = self.tool.filter(|hooks| has(hooks));
        let runtime = Some(self.runtime).filter(|hooks| has(hooks));
        if tool.is_none() && runtime.is_none() {
            return None;
        }
        let args = args();
        let first = tool.map(|hooks| fire(hooks, args.clone()));
        let second = runtime.map(|hooks| fire(hooks, args));
        let limit = self.limit;
        Some(async move {
            for hook in [first, second].into_iter().flatten() {
                if within(limit, hook).await.is_none() {
                    tracing::error!(
                        hook = name,
                        timeout_ms = limit.as_millis(),
                        "tool hook timed out; the call goes on without it"
                    );
                }
            }
        })
    }

    /// Fires a hook now, as [`job`](Self::job) makes it. The job is boxed:
    /// with its time limit's timer it is kilobytes, which every call's
    /// future would otherwise carry (and copy) whether or not a hook is set.
    pub(crate) async fn run<A: Clone, F>(
        &self,
        name: &'static str,
        has: fn(&Hooks) -> bool,
        fire: impl Fn(&Hooks, A) -> F,
        args: impl FnOnce() -> A,
    ) where
        F: Future<Output = ()> + Send + 'static,
    {
        if let Some(job) = self.job(name, has, fire, args).map(Box::pin) {
            job.await;
        }
    }
}

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The input hooks of one streamed call, run one at a time in the order
/// they were queued. A job queued while none waits runs at once, in `push`,
/// up to its first await (a sync hook to its end, as a plain call would);
/// one that is not done then, and every job queued behind it, runs on a
/// task of the queue's (or, without a tokio runtime, when the queue is
/// drained).
pub(crate) struct HookQueue {
    jobs: mpsc::UnboundedSender<Job>,
    /// Jobs queued and not yet done.
    waiting: Arc<AtomicUsize>,
    runtime: Option<tokio::runtime::Handle>,
    span: tracing::Span,
    driver: Driver,
}

enum Driver {
    Spawned(tokio::task::JoinHandle<()>),
    Here(Job),
}

impl std::fmt::Debug for HookQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookQueue")
            .field("waiting", &self.waiting.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

impl HookQueue {
    /// An empty queue whose hooks run in `span`.
    pub(crate) fn new(span: tracing::Span) -> Self {
        let (jobs, mut queued) = mpsc::unbounded_channel::<Job>();
        let waiting = Arc::new(AtomicUsize::new(0));
        let done = Arc::clone(&waiting);
        let driver = async move {
            while let Some(job) = queued.recv().await {
                job.await;
                done.fetch_sub(1, Ordering::AcqRel);
            }
        }
        .instrument(span.clone());
        let runtime = tokio::runtime::Handle::try_current().ok();
        let driver = match &runtime {
            Some(handle) => Driver::Spawned(handle.spawn(driver)),
            None => Driver::Here(Box::pin(driver)),
        };
        HookQueue {
            jobs,
            waiting,
            runtime,
            span,
            driver,
        }
    }

    /// Queues `job` after the ones already queued (see the type's docs).
    pub(crate) fn push(&self, job: impl Future<Output = ()> + Send + 'static) {
        let mut job: Job = Box::pin(job);
        if self.waiting.load(Ordering::Acquire) == 0 {
            // Polled with a no-op waker: a job not done yet is polled again
            // by the queue's task, which registers its own.
            let _runtime = self.runtime.as_ref().map(tokio::runtime::Handle::enter);
            let _span = self.span.enter();
            let mut cx = Context::from_waker(Waker::noop());
            if job.as_mut().poll(&mut cx).is_ready() {
                return;
            }
        }
        self.waiting.fetch_add(1, Ordering::AcqRel);
        // The receiver lives as long as the driver, which ends only after
        // this sender is dropped: the send cannot fail.
        let _ = self.jobs.send(job);
    }

    /// Waits until every queued job has run.
    pub(crate) async fn drain(self) {
        let HookQueue { jobs, driver, .. } = self;
        drop(jobs);
        match driver {
            // An error means the task was cancelled with the runtime it ran
            // on; the jobs catch their own panics.
            Driver::Spawned(handle) => {
                let _ = handle.await;
            }
            Driver::Here(driver) => driver.await,
        }
    }
}
