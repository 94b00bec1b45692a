//! Cancellation of a call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Cancellation of a call: fired by `Runtime::cancel`, timeouts and MCP
/// cancellation; a tool checks it or awaits it to stop early.
///
/// ```
/// use tool_core::AbortSignal;
///
/// let signal = AbortSignal::new();
/// let seen_by_tool = signal.clone();
/// assert!(!seen_by_tool.is_aborted());
/// signal.abort();
/// assert!(seen_by_tool.is_aborted());
/// ```
#[derive(Debug, Clone)]
pub struct AbortSignal {
    /// `None` for a call nobody can abort: it costs nothing to create.
    inner: Option<Arc<AbortInner>>,
}

/// One signal: fired once, waking every waiter; a child also fires with its
/// parent.
#[derive(Debug, Default)]
struct AbortInner {
    fired: AtomicBool,
    waiters: Notify,
    parent: Option<AbortSignal>,
}

impl Default for AbortSignal {
    fn default() -> Self {
        AbortSignal::new()
    }
}

impl AbortSignal {
    /// A signal that has not fired.
    pub fn new() -> Self {
        AbortSignal {
            inner: Some(Arc::default()),
        }
    }

    /// A signal that never fires (a call whose caller kept no way to abort it).
    pub fn never() -> Self {
        AbortSignal { inner: None }
    }

    /// Fires the signal for every clone and child.
    pub fn abort(&self) {
        if let Some(inner) = &self.inner {
            inner.fired.store(true, Ordering::Release);
            inner.waiters.notify_waiters();
        }
    }

    /// True once the signal (or its parent) fired.
    pub fn is_aborted(&self) -> bool {
        self.inner.as_ref().is_some_and(|inner| {
            inner.fired.load(Ordering::Acquire)
                || inner.parent.as_ref().is_some_and(AbortSignal::is_aborted)
        })
    }

    /// Completes when the signal (or its parent) fires (never, for
    /// [`AbortSignal::never`]).
    pub async fn aborted(&self) {
        let Some(own) = self.inner.as_deref() else {
            return std::future::pending().await;
        };
        let mut chain = vec![own];
        while let Some(parent) = chain
            .last()
            .and_then(|inner| inner.parent.as_ref())
            .and_then(|parent| parent.inner.as_deref())
        {
            chain.push(parent);
        }
        loop {
            let mut waits: Vec<_> = chain
                .iter()
                .map(|inner| Box::pin(inner.waiters.notified()))
                .collect();
            // Registered before the check, so a firing in between is seen.
            for wait in &mut waits {
                wait.as_mut().enable();
            }
            if chain
                .iter()
                .any(|inner| inner.fired.load(Ordering::Acquire))
            {
                return;
            }
            std::future::poll_fn(|cx| {
                if waits
                    .iter_mut()
                    .any(|wait| wait.as_mut().poll(cx).is_ready())
                {
                    std::task::Poll::Ready(())
                } else {
                    std::task::Poll::Pending
                }
            })
            .await;
        }
    }

    /// A signal that fires when this one does, and can also fire on its own.
    pub fn child(&self) -> AbortSignal {
        AbortSignal {
            inner: Some(Arc::new(AbortInner {
                parent: self.inner.is_some().then(|| self.clone()),
                ..AbortInner::default()
            })),
        }
    }
}
