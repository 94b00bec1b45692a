//! The live stream of items (`GET /api/events`): one poller per inbox reads
//! the store's pending calls (so items of every instance sharing it show
//! up) at an interval, and at once when this runtime's calls change; each
//! open stream sends its principal the items that appeared and settled
//! since the last snapshot it saw, through the same authorization as the
//! list.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use futures_util::stream;
use serde_json::json;
use tokio::sync::watch;
use tool_runtime::{EventKind, PendingCall, Runtime};

use crate::api::{Refused, Shared};
use crate::auth::{Authenticate, Principal};

/// The pending calls by id, as one poll found them.
type Snapshot = BTreeMap<String, PendingCall>;

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

    /// A receiver of snapshots, the poller started if it is not running.
    fn subscribe(&self, runtime: &Runtime, interval: Duration) -> watch::Receiver<Arc<Snapshot>> {
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
            match runtime.pending().await {
                Ok(calls) => {
                    let snapshot = calls.into_iter().map(|c| (c.call_id.clone(), c)).collect();
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
struct Opened {
    open: Arc<Mutex<HashMap<String, usize>>>,
    principal: String,
}

impl Drop for Opened {
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

/// What one stream knows: the last snapshot it sent from.
struct Follower<A> {
    shared: Arc<Shared<A>>,
    principal: Principal,
    receiver: watch::Receiver<Arc<Snapshot>>,
    seen: Arc<Snapshot>,
    queued: Vec<Event>,
    _opened: Opened,
}

impl<A: Authenticate> Follower<A> {
    /// The next event: queued ones first, then the changes of the next
    /// snapshot (the first one: every item, as they are now).
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        loop {
            if let Some(event) = self.queued.pop() {
                return Some((Ok(event), self));
            }
            let current = Arc::clone(&self.receiver.borrow_and_update());
            self.queue_changes(&current).await;
            self.seen = current;
            if self.queued.is_empty() && self.receiver.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Queues `item` events for calls in `current` that were not in the
    /// last snapshot, and `settled` events for those gone, that this
    /// principal may read.
    async fn queue_changes(&mut self, current: &Snapshot) {
        let mut events = Vec::new();
        for (call_id, call) in self.seen.iter() {
            if !current.contains_key(call_id) && self.shared.visible(&self.principal, call) {
                let data = json!({ "callId": call_id }).to_string();
                events.push(Event::default().event("settled").data(data));
            }
        }
        for (call_id, call) in current {
            if !self.seen.contains_key(call_id) && self.shared.visible(&self.principal, call) {
                let view = self.shared.view(call).await;
                let data = serde_json::to_string(&view).unwrap_or_default();
                events.push(Event::default().event("item").data(data));
            }
        }
        events.reverse();
        self.queued = events;
    }
}

/// `GET /api/events`: `item` events (the item, as the list shows it) and
/// `settled` events (`{"callId"}`), the items already waiting first.
pub(crate) async fn events<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Extension(principal): Extension<Principal>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Refused> {
    let live = &shared.live;
    let opened = {
        let mut open = live.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(principal.id().to_owned()).or_default();
        let max = shared.options.max_streams_per_principal;
        if *count >= max {
            return Err(Refused::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "{} has {max} event streams open already: close one",
                    principal.id()
                ),
            ));
        }
        *count += 1;
        Opened {
            open: Arc::clone(&live.open),
            principal: principal.id().to_owned(),
        }
    };
    let receiver = live.subscribe(&shared.runtime, shared.options.poll_interval);
    let follower = Follower {
        shared: Arc::clone(&shared),
        principal,
        receiver,
        seen: Arc::new(Snapshot::new()),
        queued: Vec::new(),
        _opened: opened,
    };
    let stream = stream::unfold(follower, Follower::next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
