//! The live stream of items (`GET /api/events`): each open stream follows
//! the inbox's snapshots of pending calls and sends its principal the
//! items that appeared and settled since the last one it saw, through the
//! same authorization as the list.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::{Stream, stream};
use serde_json::json;
use tokio::sync::watch;

use crate::api::{Refused, Shared};
use crate::auth::{Authenticate, Principal};
use crate::live::{OpenStream, Snapshot, StreamsFull};

/// What one stream knows: the last snapshot it sent from.
struct Follower<A> {
    shared: Arc<Shared<A>>,
    principal: Principal,
    receiver: watch::Receiver<Arc<Snapshot>>,
    seen: Arc<Snapshot>,
    queued: Vec<Event>,
    _open: OpenStream,
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
            if !current.contains_key(call_id) && self.shared.visible(&self.principal, &call.call) {
                let data = json!({ "callId": call_id }).to_string();
                events.push(Event::default().event("settled").data(data));
            }
        }
        for (call_id, call) in current {
            if !self.seen.contains_key(call_id) && self.shared.visible(&self.principal, &call.call)
            {
                let view = self.shared.view(call, &self.principal).await;
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
    let (max, max_total) = (
        shared.options.max_streams_per_principal,
        shared.options.max_streams,
    );
    let open = shared
        .live
        .open_stream(principal.id(), max, max_total)
        .map_err(|full| {
            let message = match full {
                StreamsFull::Principal => format!(
                    "{} has {max} event streams open already: close one",
                    principal.id()
                ),
                StreamsFull::Inbox => format!(
                    "the inbox holds {max_total} event streams open already: try again later"
                ),
            };
            Refused::new(StatusCode::TOO_MANY_REQUESTS, "too_many_streams", message)
        })?;
    let receiver = shared
        .live
        .subscribe(&shared.runtime, shared.options.poll_interval);
    let follower = Follower {
        shared: Arc::clone(&shared),
        principal,
        receiver,
        seen: Arc::new(Snapshot::new()),
        queued: Vec::new(),
        _open: open,
    };
    let stream = stream::unfold(follower, Follower::next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
