//! Requests refused before authentication, counted: [`Refusals`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Requests refused before authentication (a foreign `Origin`, no or a
/// wrong credential): counted, never stored, so that nobody without a
/// credential can write anything, and logged at most once a second with
/// the counts so far.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    foreign_origin: AtomicU64,
    unauthenticated: AtomicU64,
    last_logged: Mutex<Option<Instant>>,
}

/// The least time between two log lines about refused requests.
const REFUSALS_LOGGED_EVERY: Duration = Duration::from_secs(1);

impl Refusals {
    pub(crate) fn foreign_origin(&self) {
        self.foreign_origin.fetch_add(1, Ordering::Relaxed);
        self.log();
    }

    pub(crate) fn unauthenticated(&self) {
        self.unauthenticated.fetch_add(1, Ordering::Relaxed);
        self.log();
    }

    /// Requests refused so far: from a foreign `Origin`, unauthenticated.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.foreign_origin.load(Ordering::Relaxed),
            self.unauthenticated.load(Ordering::Relaxed),
        )
    }

    fn log(&self) {
        let now = Instant::now();
        let mut last = self
            .last_logged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_some_and(|at| now.duration_since(at) < REFUSALS_LOGGED_EVERY) {
            return;
        }
        *last = Some(now);
        let (foreign_origin, unauthenticated) = self.counts();
        tracing::warn!(
            foreign_origin,
            unauthenticated,
            "the inbox refused requests before authentication (counted since it started, never stored)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted() {
        let refusals = Refusals::default();
        for _ in 0..3 {
            refusals.foreign_origin();
        }
        refusals.unauthenticated();
        assert_eq!(refusals.counts(), (3, 1));
    }
}
