//! Waiting out a store that fails: a write the runtime must make (a new
//! call, an outcome) is tried again after a backoff, or as soon as the store
//! answers again, whichever comes first. While anything waits, one probe
//! per instance reads the store, so that a backoff grown long during an
//! outage does not hold a write back once the outage is over (each moment
//! an outcome waits is one in which another instance may take its call
//! over).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

/// How often the probe reads the store while anything waits for it: the
/// longest a write waits after the store answers again (and one read per
/// instance this often during an outage).
const PROBE_EVERY: Duration = Duration::from_millis(50);

/// The writes of one instance waiting for its store, and the probe that
/// tells them it answers.
pub(crate) struct Outage {
    waiters: Mutex<Waiters>,
    /// Counts the times the probe found the store answering after it had
    /// failed.
    answered: watch::Sender<u64>,
}

/// Who waits, and whether a probe runs for them.
#[derive(Default)]
struct Waiters {
    waiting: usize,
    probing: bool,
}

impl Default for Outage {
    fn default() -> Self {
        Outage {
            waiters: Mutex::default(),
            answered: watch::channel(0).0,
        }
    }
}

impl Outage {
    fn waiters(&self) -> MutexGuard<'_, Waiters> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a write that failed and waits for the store, until the
    /// [`Waiting`] is dropped. Unless a probe runs already, `probe` starts
    /// one (on the current tokio runtime, if there is one): it reads the
    /// store every [`PROBE_EVERY`] and answers whether the store answered.
    ///
    /// Only an answer after a failure wakes the waiting writes: a store
    /// that answers reads but fails the write (a database that went
    /// read-only) wakes each at most once, and then they wait their backoff.
    pub(crate) fn wait<P, F>(self: &Arc<Self>, probe: P) -> Waiting
    where
        P: Fn() -> F + Send + 'static,
        F: Future<Output = bool> + Send + 'static,
    {
        let answered = self.answered.subscribe();
        let start = {
            let mut waiters = self.waiters();
            waiters.waiting += 1;
            !std::mem::replace(&mut waiters.probing, true)
        };
        if start {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => drop(handle.spawn(probing(Arc::clone(self), probe))),
                // No runtime to probe on: the writes wait their backoff.
                Err(_) => self.waiters().probing = false,
            }
        }
        Waiting {
            outage: Arc::clone(self),
            answered,
        }
    }
}

/// Reads the store with `probe` while anything waits, and tells the
/// waiting writes when it answers after failing.
async fn probing<F: Future<Output = bool>>(outage: Arc<Outage>, probe: impl Fn() -> F) {
    // Started by a write that failed: the first answer is the store's
    // answering again.
    let mut failing = true;
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        {
            let mut waiters = outage.waiters();
            if waiters.waiting == 0 {
                waiters.probing = false;
                return;
            }
        }
        let answers = probe().await;
        if answers && failing {
            outage
                .answered
                .send_modify(|count| *count = count.wrapping_add(1));
        }
        failing = !answers;
    }
}

/// A write waiting for the store, registered with its instance's probe
/// until dropped.
pub(crate) struct Waiting {
    outage: Arc<Outage>,
    answered: watch::Receiver<u64>,
}

impl Waiting {
    /// Waits `pause`, or less: until the store answers again after failing
    /// (once since this wait was registered or last ended so).
    pub(crate) async fn pause(&mut self, pause: Duration) {
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            // The sender lives as long as `outage`: never an error.
            Ok(()) = self.answered.changed() => {}
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.outage.waiters().waiting -= 1;
    }
}
