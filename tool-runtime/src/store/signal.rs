//! Wakeups for workers: a store tells them that a task was stored, so they
//! claim it at once rather than on their next poll.

use tokio::sync::watch;

/// The sending side, kept by a store: [`notify`](Self::notify) on every
/// task it stores (or hears another instance stored). Clones signal the
/// same subscribers.
///
/// ```
/// use tool_runtime::store::TaskSignaller;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let signaller = TaskSignaller::new();
/// let mut signal = signaller.subscribe();
/// signaller.notify();
/// signal.stored().await; // resolves: a task was stored since the subscription
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct TaskSignaller {
    // A counter: a subscriber compares what it saw last, so a notification
    // between its last claim and its wait is never missed.
    sender: std::sync::Arc<watch::Sender<u64>>,
}

impl Default for TaskSignaller {
    fn default() -> Self {
        TaskSignaller::new()
    }
}

impl TaskSignaller {
    /// A signaller nobody listens to yet.
    pub fn new() -> Self {
        TaskSignaller {
            sender: std::sync::Arc::new(watch::channel(0).0),
        }
    }

    /// Tells every subscriber that a task was stored.
    pub fn notify(&self) {
        self.sender
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// A new subscriber, which sees the tasks stored from now on.
    pub fn subscribe(&self) -> TaskSignal {
        TaskSignal {
            receiver: self.sender.subscribe(),
        }
    }

    /// Resolves when the last subscriber is gone.
    #[cfg(feature = "postgres")]
    pub(crate) async fn unsubscribed(&self) {
        self.sender.closed().await;
    }

    /// How many subscribe now.
    #[cfg(feature = "postgres")]
    pub(crate) fn subscribers(&self) -> usize {
        self.sender.receiver_count()
    }
}

/// The receiving side, held by a worker ([`CallStore::task_signal`](super::CallStore::task_signal)).
#[derive(Debug)]
pub struct TaskSignal {
    receiver: watch::Receiver<u64>,
}

impl TaskSignal {
    /// Resolves once a task was stored since this signal was created or
    /// last resolved; at once if one was. Pending forever when the store
    /// that signals is gone.
    pub async fn stored(&mut self) {
        if self.receiver.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
