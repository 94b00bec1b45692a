//! What the live stream of items reads: one poller per inbox follows the
//! store (so items of every instance sharing it show up) while streams are
//! open, and counts each principal's open streams.
//!
//! The poller reads the audit log's new entries at an interval (and at
//! once when this runtime's calls change): every call that starts to wait,
//! is granted an approval, refused or decided has an entry, so it re-reads
//! only the calls those name. Every [`FULL_READ_EVERY`] polls it reads all
//! waiting calls, which catches what no entry names.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tool_runtime::store::{AuditEntry, AuditKind, AuditQuery};
use tool_runtime::{CallState, EventKind, Runtime, RuntimeError, StoredCall};

/// How many polls apart the poller reads every waiting call.
const FULL_READ_EVERY: u32 = 10;
/// How far behind its place the poller reads the audit log again: an entry
/// whose `seq` was taken before another's may be committed after it.
const REREAD: u64 = 64;
/// The most audit entries one poll reads (the rest wait for the next).
const MAX_ENTRIES_PER_POLL: usize = 5_000;
/// How many recent decisions a snapshot remembers, for the notices of
/// items that settled.
const RECENT_DECISIONS: usize = 1_024;

/// What one poll found.
#[derive(Default)]
pub(crate) struct Snapshot {
    /// Whether the store was read (not the empty one before the first poll).
    pub(crate) read: bool,
    /// The waiting calls, by id.
    pub(crate) calls: BTreeMap<String, StoredCall>,
    /// For a waiting call, how many audit entries about it the poller saw
    /// (a grant, a refused attempt...): when it grows, its item may read
    /// differently (who approved so far).
    pub(crate) touched: HashMap<String, u32>,
    /// The recent decisions, by call id: who settled an item, and how.
    pub(crate) decided: HashMap<String, AuditEntry>,
}

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
            snapshots: watch::Sender::new(Arc::new(Snapshot::default())),
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

    /// A receiver of snapshots, the poller started if it is not running
    /// (until its first poll, the snapshot is not [`read`](Snapshot::read)).
    pub(crate) fn subscribe(
        &self,
        runtime: &Runtime,
        interval: Duration,
    ) -> watch::Receiver<Arc<Snapshot>> {
        let mut polling = self.polling.lock().unwrap_or_else(PoisonError::into_inner);
        if !*polling {
            // The last poller's snapshot may be old: none until this one's.
            self.snapshots.send_replace(Arc::new(Snapshot::default()));
        }
        let receiver = self.snapshots.subscribe();
        if !*polling {
            *polling = true;
            let poller = Poller {
                runtime: runtime.clone(),
                sender: self.snapshots.clone(),
                polling: Arc::clone(&self.polling),
                interval,
                followed: None,
                reread: BTreeSet::new(),
                woken: BTreeSet::new(),
                snapshot: Snapshot::default(),
                recent: VecDeque::new(),
            };
            tokio::spawn(poller.run());
        }
        receiver
    }
}

/// The task that follows the store while streams are open.
struct Poller {
    runtime: Runtime,
    sender: watch::Sender<Arc<Snapshot>>,
    polling: Arc<Mutex<bool>>,
    interval: Duration,
    /// The audit log's `seq` read up to (`None` before the first poll).
    followed: Option<u64>,
    /// The `seq`s read within [`REREAD`] behind that place.
    reread: BTreeSet<u64>,
    /// The calls this runtime's events named since the last poll (a
    /// change without an audit entry: a decision without a decider).
    woken: BTreeSet<String>,
    snapshot: Snapshot,
    /// The calls of `snapshot.decided`, oldest first.
    recent: VecDeque<String>,
}

impl Poller {
    /// Polls until no stream is open: at the interval, and at once when
    /// one of this runtime's calls starts waiting or is decided.
    async fn run(mut self) {
        let mut events = self.runtime.events();
        let mut polls = 0u32;
        loop {
            let full = polls.is_multiple_of(FULL_READ_EVERY);
            polls = polls.wrapping_add(1);
            match self.poll(full).await {
                Ok(false) => {}
                Ok(true) => {
                    let snapshot = Snapshot {
                        read: true,
                        calls: self.snapshot.calls.clone(),
                        touched: self.snapshot.touched.clone(),
                        decided: self.snapshot.decided.clone(),
                    };
                    self.sender.send_replace(Arc::new(snapshot));
                }
                // The store is away for now: keep the last snapshot, and
                // read everything once it is back.
                Err(error) => {
                    polls = 0;
                    tracing::warn!(%error, "the inbox could not read pending calls");
                }
            }
            let changed = async {
                while let Some(event) = events.next().await {
                    if changes_pending(&event.kind) {
                        return event.call_id;
                    }
                }
                std::future::pending().await
            };
            tokio::select! {
                () = self.sender.closed() => {
                    let mut polling = self.polling.lock().unwrap_or_else(PoisonError::into_inner);
                    if self.sender.receiver_count() == 0 {
                        *polling = false;
                        return;
                    }
                }
                () = tokio::time::sleep(self.interval) => {}
                call_id = changed => {
                    self.woken.insert(call_id);
                }
            }
        }
    }

    /// One poll: the audit log's new entries, then every waiting call
    /// (`full`) or those the entries and this runtime's events name;
    /// whether it read anything new.
    async fn poll(&mut self, full: bool) -> Result<bool, RuntimeError> {
        let inbox = self.runtime.inbox();
        let Some(followed) = self.followed else {
            self.woken.clear();
            let end = inbox.audit_end().await?;
            // What is already in the log is not news: only its place is
            // kept, with the window read again.
            let window = AuditQuery::all().after(end.saturating_sub(REREAD));
            self.reread = inbox.audit(window).await?.iter().map(|e| e.seq).collect();
            self.followed = Some(end);
            self.snapshot.calls = by_id(inbox.waiting().await?);
            return Ok(true);
        };
        let mut named = std::mem::take(&mut self.woken);
        named.append(&mut self.read_audit(followed).await?);
        let changed = full || !named.is_empty();
        if full {
            self.snapshot.calls = by_id(inbox.waiting().await?);
        } else {
            for call_id in named {
                match inbox.stored(&call_id).await? {
                    Some(stored) if stored.state == CallState::Pending => {
                        self.snapshot.calls.insert(call_id, stored);
                    }
                    _ => {
                        self.snapshot.calls.remove(&call_id);
                    }
                }
            }
        }
        // Entries written while the calls were read (the expiry of a call
        // the read declined says how it settled): noted now, their calls
        // read again next time.
        if let Some(followed) = self.followed {
            let mut late = self.read_audit(followed).await?;
            self.woken.append(&mut late);
        }
        let calls = &self.snapshot.calls;
        self.snapshot
            .touched
            .retain(|call_id, _| calls.contains_key(call_id));
        Ok(changed)
    }

    /// Reads the audit log's entries from [`REREAD`] before `followed` on
    /// (at most [`MAX_ENTRIES_PER_POLL`]), noting those not read before;
    /// returns the calls they name.
    async fn read_audit(&mut self, followed: u64) -> Result<BTreeSet<String>, RuntimeError> {
        let inbox = self.runtime.inbox();
        let mut named = BTreeSet::new();
        let mut query = AuditQuery::all().after(followed.saturating_sub(REREAD));
        let mut read = 0;
        while read < MAX_ENTRIES_PER_POLL {
            let entries = inbox.audit(query.clone()).await?;
            let Some(last) = entries.last() else { break };
            query = query.after(last.seq);
            read += entries.len();
            for entry in entries {
                if self.reread.insert(entry.seq) {
                    self.note(&entry);
                    named.insert(entry.call_id);
                }
            }
        }
        let followed = self.reread.last().copied().unwrap_or(followed);
        self.followed = Some(followed);
        let behind = followed.saturating_sub(REREAD);
        self.reread.retain(|seq| *seq > behind);
        Ok(named)
    }

    /// What `entry` says of its call: touched, and, for a decision, who
    /// decided it and how.
    fn note(&mut self, entry: &AuditEntry) {
        let touched = self
            .snapshot
            .touched
            .entry(entry.call_id.clone())
            .or_default();
        *touched = touched.wrapping_add(1);
        if entry.kind == AuditKind::Decided {
            if self
                .snapshot
                .decided
                .insert(entry.call_id.clone(), entry.clone())
                .is_none()
            {
                self.recent.push_back(entry.call_id.clone());
            }
            while self.recent.len() > RECENT_DECISIONS {
                if let Some(oldest) = self.recent.pop_front() {
                    self.snapshot.decided.remove(&oldest);
                }
            }
        }
    }
}

/// `calls` by call id.
fn by_id(calls: Vec<StoredCall>) -> BTreeMap<String, StoredCall> {
    calls
        .into_iter()
        .map(|c| (c.call.head.call_id.clone(), c))
        .collect()
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

/// Why no more event streams may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamsFull {
    /// The principal holds its most.
    Principal,
    /// The inbox holds its most, all principals together.
    Inbox,
}

/// One open stream of a principal, counted while it lives.
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
