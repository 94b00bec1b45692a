//! What the live stream of items reads: one poller per inbox reads the
//! store's pending calls (so items of every instance sharing it show up) at
//! an interval, and at once when this runtime's calls change, while
//! streams are open; and the count of each principal's open streams.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tool_runtime::{EventKind, Runtime, StoredCall};

/// The pending calls by id, as one poll found them.
pub(crate) type Snapshot = BTreeMap<String, StoredCall>;

/// The poller's snapshots and the streams open per principal.
pub(crate) struct Live {
    snapshots: watch::Sender<Arc<Snapshot>>,
    /// Whether the poller runs; held while subscribing and while the
    /// poller decides to stop, so a new stream never finds it stopping.
    polling: Arc<Mutex<bool>>,
    open: Arc<Mutex<HashMap<String, usize>>>,
}

impl Live {
    pub(crate) fn new() -> Self {
        Live {
            snapshots: watch::Sender::new(Arc::new(Snapshot::new())),
            polling: Arc::new(Mutex::new(false)),
            open: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A place for one more stream of `principal`, unless it holds `max`
    /// already or all principals hold `max_total` together (which says);
    /// the place is freed when the returned guard is dropped.
    pub(crate) fn open_stream(
        &self,
        principal: &str,
        max: usize,
        max_total: usize,
    ) -> Result<OpenStream, StreamsFull> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.values().sum::<usize>() >= max_total {
            return Err(StreamsFull::Inbox);
        }
        let count = open.entry(principal.to_owned()).or_default();
        if *count >= max {
            return Err(StreamsFull::Principal);
        }
        *count += 1;
        Ok(OpenStream {
            open: Arc::clone(&self.open),
            principal: principal.to_owned(),
        })
    }

    /// A receiver of snapshots, the poller started if it is not running.
    pub(crate) fn subscribe(
        &self,
        runtime: &Runtime,
        interval: Duration,
    ) -> watch::Receiver<Arc<Snapshot>> {
        let mut polling = self.polling.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = self.snapshots.subscribe();
        if !*polling {
            *polling = true;
            let poller = Poller {
                runtime: runtime.clone(),
                sender: self.snapshots.clone(),
                polling: Arc::clone(&self.polling),
                interval,
            };
            tokio::spawn(poller.run());
        }
        receiver
    }
}

/// The task that reads the pending calls while streams are open.
struct Poller {
    runtime: Runtime,
    sender: watch::Sender<Arc<Snapshot>>,
    polling: Arc<Mutex<bool>>,
    interval: Duration,
}

impl Poller {
    /// Reads the pending calls until no stream is open: at the interval,
    /// and at once when one of this runtime's calls starts waiting or is
    /// decided.
    async fn run(self) {
        let Poller {
            runtime,
            sender,
            polling,
            interval,
        } = self;
        let mut events = runtime.events();
        loop {
            match runtime.inbox().waiting().await {
                Ok(calls) => {
                    let snapshot = calls
                        .into_iter()
                        .map(|c| (c.call.head.call_id.clone(), c))
                        .collect();
                    sender.send_replace(Arc::new(snapshot));
                }
                // The store is away for now: keep the last snapshot, try again.
                Err(error) => tracing::warn!(%error, "the inbox could not list pending calls"),
            }
            let changed = async {
                while let Some(event) = events.next().await {
                    if changes_pending(&event.kind) {
                        return;
                    }
                }
                std::future::pending::<()>().await;
            };
            tokio::select! {
                () = sender.closed() => {
                    let mut polling = polling.lock().unwrap_or_else(PoisonError::into_inner);
                    if sender.receiver_count() == 0 {
                        *polling = false;
                        return;
                    }
                }
                () = tokio::time::sleep(interval) => {}
                () = changed => {}
            }
        }
    }
}

/// Whether an event means a call started or stopped waiting.
fn changes_pending(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::ApprovalRequired { .. }
            | EventKind::AwaitingOutput { .. }
            | EventKind::Suspended { .. }
            | EventKind::Resumed { .. }
            | EventKind::Declined { .. }
            | EventKind::Output { .. }
            | EventKind::Error { .. }
            | EventKind::Aborted
    )
}

/// One open stream of a principal, counted while it lives.
/// Why no more event streams may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamsFull {
    /// The principal holds its most.
    Principal,
    /// The inbox holds its most, all principals together.
    Inbox,
}

pub(crate) struct OpenStream {
    open: Arc<Mutex<HashMap<String, usize>>>,
    principal: String,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.principal) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.principal);
            }
        }
    }
}
