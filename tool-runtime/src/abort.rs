//! Running calls by id, so `cancel` can reach their abort signals, and the
//! time limits that fire them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tool_core::AbortSignal;

/// The abort signals of running calls (and streams being received).
#[derive(Debug, Default)]
pub(crate) struct Running {
    next: AtomicU64,
    calls: Mutex<HashMap<String, (u64, AbortSignal)>>,
}

/// Unregisters a running call when dropped.
#[derive(Debug)]
pub(crate) struct RunningGuard {
    running: Arc<Running>,
    call_id: String,
    seq: u64,
}

impl Running {
    /// Registers `abort` under `call_id` until the guard is dropped. A
    /// second call with the same id replaces the first for `cancel`.
    pub(crate) fn register(self: &Arc<Self>, call_id: &str, abort: AbortSignal) -> RunningGuard {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(call_id.to_owned(), (seq, abort));
        RunningGuard {
            running: Arc::clone(self),
            call_id: call_id.to_owned(),
            seq,
        }
    }

    /// Fires the abort signal of `call_id`; false when it is not running.
    pub(crate) fn cancel(&self, call_id: &str) -> bool {
        match self.lock().get(call_id) {
            Some((_, abort)) => {
                abort.abort();
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, AbortSignal)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        let mut calls = self.running.lock();
        if calls
            .get(&self.call_id)
            .is_some_and(|(seq, _)| *seq == self.seq)
        {
            calls.remove(&self.call_id);
        }
    }
}

/// Runs `fut`; if `limit` passes first, fires `abort` and lets the call wind
/// down (the tool-core pipeline turns the fired signal into `Aborted`).
/// Returns the output and whether the limit fired.
pub(crate) async fn with_limit<F: Future>(
    fut: F,
    limit: Duration,
    abort: &AbortSignal,
) -> (F::Output, bool) {
    let mut fut = std::pin::pin!(fut);
    tokio::select! {
        biased;
        out = fut.as_mut() => (out, false),
        () = tokio::time::sleep(limit) => {
            abort.abort();
            (fut.await, true)
        }
    }
}
