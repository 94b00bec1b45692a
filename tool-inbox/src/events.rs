//! The live stream of items (`GET /api/events`): each open stream follows
//! the inbox's snapshots of pending calls and sends its principal the
//! items that appeared and settled since the last one it saw, through the
//! same authorization as the list.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::{Stream, stream};
use serde_json::json;
use tokio::sync::watch;
use tool_runtime::StoredCall;

use crate::api::{Refused, Shared};
use crate::auth::{Authenticate, Principal};
use crate::live::{OpenStream, Snapshot, StreamsFull};

/// What one stream knows: the last snapshot it sent from.
struct Follower<A> {
    shared: Arc<Shared<A>>,
    principal: Principal,
    receiver: watch::Receiver<Arc<Snapshot>>,
    /// `None` until the first page is queued.
    seen: Option<Arc<Snapshot>>,
    queued: VecDeque<Event>,
    _open: OpenStream,
}

impl<A: Authenticate> Follower<A> {
    /// The next event: queued ones first, then the first page, then the
    /// changes of each snapshot.
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some((Ok(event), self));
            }
            let current = Arc::clone(&self.receiver.borrow_and_update());
            match self.seen.take() {
                // The poller has not read the store yet.
                None if !current.read => {}
                None => self.queue_first_page(&current).await,
                Some(seen) => self.queue_changes(&seen, &current).await,
            }
            if current.read {
                self.seen = Some(current);
            }
            if self.queued.is_empty() && self.receiver.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Queues the first page of the items this principal may read (as the
    /// list's first page), then `ready`: who reads, and the `after` of the
    /// next page, which the list gives (`null`: none).
    async fn queue_first_page(&mut self, current: &Snapshot) {
        let size = self.shared.default_page();
        let mut page: Vec<&StoredCall> = Vec::with_capacity(size);
        let mut next = None;
        for stored in current.calls.values() {
            if !self.listed(stored).await {
                continue;
            }
            if page.len() == size {
                next = page.last().map(|last| last.call.head.call_id.clone());
                break;
            }
            page.push(stored);
        }
        for stored in page {
            let view = self.shared.view(stored, &self.principal).await;
            self.queue("item", &json!(view));
        }
        let ready = json!({ "principal": self.principal.id(), "next": next });
        self.queue("ready", &ready);
    }

    /// Queues, for the items this principal may read: `settled` for those
    /// gone since `seen` (with the decision that settled it, when the
    /// audit log said), `item` for new ones, and `changed` for those whose
    /// version or approvals changed.
    async fn queue_changes(&mut self, seen: &Snapshot, current: &Snapshot) {
        for (call_id, stored) in &seen.calls {
            if !current.calls.contains_key(call_id)
                && self.shared.visible(&self.principal, &stored.call)
            {
                let decision = current.decided.get(call_id);
                let settled = json!({
                    "callId": call_id,
                    "action": decision.map(|entry| &entry.action),
                    "by": decision.and_then(|entry| entry.principal.as_ref()),
                    "reason": decision.and_then(|entry| entry.reason.as_ref()),
                });
                self.queue("settled", &settled);
            }
        }
        for (call_id, stored) in &current.calls {
            let event = match seen.calls.get(call_id) {
                None => "item",
                Some(before)
                    if before.digest() != stored.digest()
                        || seen.touched.get(call_id) != current.touched.get(call_id) =>
                {
                    "changed"
                }
                Some(_) => continue,
            };
            if self.listed(stored).await {
                let view = self.shared.view(stored, &self.principal).await;
                self.queue(event, &json!(view));
            } else if event == "changed" && self.shared.visible(&self.principal, &stored.call) {
                // Dismissed (here or on another page of theirs).
                self.queue("dismissed", &json!({ "callId": call_id }));
            }
        }
    }

    /// Whether `stored` is an item of this principal's list; a store that
    /// cannot say leaves it out until the next change.
    async fn listed(&self, stored: &StoredCall) -> bool {
        match self.shared.listed(&self.principal, stored).await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(%error, "the inbox could not read an item's dismissals");
                false
            }
        }
    }

    fn queue(&mut self, name: &str, data: &serde_json::Value) {
        let event = Event::default().event(name).data(data.to_string());
        self.queued.push_back(event);
    }
}

/// `GET /api/events`: the first page of items as `item` events (each as
/// the list shows it), then `ready` (`{"principal", "next"}`); from then
/// on `item` for an item that starts to wait, `changed` for one whose
/// version or approvals changed, `dismissed` (`{"callId"}`) for one the
/// principal dismissed, and `settled` (`{"callId", "action", "by",
/// "reason"}`, the decision as far as the audit log says) for one that no
/// longer waits. Dismissed items are left out.
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
        seen: None,
        queued: VecDeque::new(),
        _open: open,
    };
    let stream = stream::unfold(follower, Follower::next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
