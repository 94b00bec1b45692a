//! The cancel registry (running calls by id, so `cancel` can reach their
//! abort signals) and the time limits that fire them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tool_core::AbortSignal;

/// The abort signals of running calls (and of streams being received).
#[derive(Debug, Default)]
pub(crate) struct CancelRegistry {
    next: AtomicU64,
    /// The key is shared with the call's guard: one allocation per call.
    calls: Mutex<HashMap<Arc<str>, (u64, AbortSignal)>>,
}

/// Unregisters a running call when dropped.
#[derive(Debug)]
pub(crate) struct RunningGuard {
    registry: Arc<CancelRegistry>,
    call_id: Arc<str>,
    seq: u64,
}

impl CancelRegistry {
    /// Registers `abort` under `call_id` until the guard is dropped. A
    /// second call with the same id replaces the first for `cancel`.
    pub(crate) fn register(self: &Arc<Self>, call_id: &str, abort: AbortSignal) -> RunningGuard {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let call_id: Arc<str> = Arc::from(call_id);
        self.lock().insert(Arc::clone(&call_id), (seq, abort));
        RunningGuard {
            registry: Arc::clone(self),
            call_id,
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

    /// Whether `call_id` is running here.
    #[cfg(feature = "log-layer")]
    pub(crate) fn is_running(&self, call_id: &str) -> bool {
        self.lock().contains_key(call_id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, (u64, AbortSignal)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        let mut calls = self.registry.lock();
        // One lookup: a later call with the same id (rare) is put back.
        if let Some((key, entry)) = calls.remove_entry(&self.call_id)
            && entry.0 != self.seq
        {
            calls.insert(key, entry);
        }
    }
}

/// Runs `fut`; if `limit` passes first, fires `abort` and lets the call wind
/// down (the tool-core pipeline turns the fired signal into `Aborted`).
/// Returns the output and whether the limit fired.
///
/// `fut` comes pinned by the caller: taken by value, it would be kept twice
/// in this function's state (the argument and the pinned local).
pub(crate) async fn with_limit<F: Future>(
    mut fut: std::pin::Pin<&mut F>,
    limit: Duration,
    abort: &AbortSignal,
) -> (F::Output, bool) {
    tokio::select! {
        biased;
        out = fut.as_mut() => (out, false),
        () = tokio::time::sleep(limit) => {
            abort.abort();
            (fut.await, true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_reaches_a_registered_call_until_its_guard_drops() {
        let registry = Arc::new(CancelRegistry::default());
        let abort = AbortSignal::new();
        let guard = registry.register("c1", abort.clone());
        assert!(!registry.cancel("c2"));
        assert!(registry.cancel("c1"));
        assert!(abort.is_aborted());
        drop(guard);
        assert!(!registry.cancel("c1"));
    }

    #[test]
    fn a_later_call_with_the_same_id_replaces_the_earlier_and_outlives_its_guard() {
        let registry = Arc::new(CancelRegistry::default());
        let (first, second) = (AbortSignal::new(), AbortSignal::new());
        let first_guard = registry.register("c1", first.clone());
        let _second_guard = registry.register("c1", second.clone());
        drop(first_guard);
        assert!(registry.cancel("c1"));
        assert!(second.is_aborted() && !first.is_aborted());
    }

    #[tokio::test]
    async fn a_time_limit_fires_the_signal_and_lets_the_call_wind_down() {
        let abort = AbortSignal::new();
        let signal = abort.clone();
        let (out, timed_out) = with_limit(
            std::pin::pin!(async move {
                signal.aborted().await;
                "wound down"
            }),
            Duration::from_millis(1),
            &abort,
        )
        .await;
        assert_eq!((out, timed_out), ("wound down", true));
        let (out, timed_out) =
            with_limit(std::pin::pin!(async { 1 }), Duration::from_secs(60), &abort).await;
        assert_eq!((out, timed_out), (1, false));
    }
}
