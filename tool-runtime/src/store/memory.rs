//! Stored calls in memory: lost when the process ends.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{
    AuditEntry, AuditLog, AuditQuery, AuditRetention, CallState, CallStore, Decided, Delivery,
    DeliveryState, Expected, NO_TIME, Notification, Outbox, OutboxEntry, OutboxQuery, PendingCall,
    PendingKind, PendingOrder, PendingQuery, Retention, Revocation, RuleStore, RunStore,
    Settlement, StandingRule, StoreError, StoredCall, StoredRun, TaskSignal, TaskSignaller,
    Transition, lease_end_ms, storable_audit, storable_call, storable_json, storable_notifications,
    storable_rule, storable_run_record,
};

/// A store in memory ([`CallStore`], [`RunStore`], [`AuditLog`],
/// [`RuleStore`], [`Outbox`]), the
/// default when no store is configured: one runtime (and its clones) shares
/// it; nothing survives the process.
///
/// What it stores is checked as the durable stores check it, before it is
/// kept: an id longer than [`MAX_ID_BYTES`](super::MAX_ID_BYTES) or holding
/// NUL, a value or run record nested deeper than
/// [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH), is refused here too, so that
/// code tested on this store does not meet the refusal first in production.
///
/// ```
/// use tool_runtime::store::MemoryStore;
/// use tool_runtime::Runtime;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let runtime = Runtime::builder().store(MemoryStore::new()).build().unwrap();
/// assert!(runtime.inbox().waiting().await.unwrap().is_empty());
/// # });
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<Memory>,
    tasks_stored: TaskSignaller,
}

/// What the store holds, under its one mutex.
#[derive(Debug, Default)]
struct Memory {
    calls: BTreeMap<String, StoredCall>,
    /// The last fencing token drawn.
    last_epoch: u64,
    /// Each run with when it was last saved.
    runs: BTreeMap<String, (StoredRun, SystemTime)>,
    /// The ids of calls purged by the size bound, with when.
    purged: BTreeMap<String, SystemTime>,
    /// The audit log, in `seq` order.
    audit: Vec<AuditEntry>,
    /// The last `seq` given (entries purged keep theirs taken).
    last_audit_seq: u64,
    /// The standing rules, in the order they were added.
    rules: Vec<StandingRule>,
    /// The calls by their key in each order by time, then id: the key is
    /// set when a call is stored and never changes, so an entry stays
    /// until its call is purged; a page skips the calls not waiting.
    by_asked: BTreeSet<(u64, String)>,
    by_expiry: BTreeSet<(u64, String)>,
    /// The outbox, by `seq`.
    outbox: BTreeMap<u64, OutboxEntry>,
    /// The last notification `seq` given.
    last_notification_seq: u64,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// Puts `stored` back as another store kept it: a store that keeps each
    /// call as one document (tool-restate keeps one per call in the state of
    /// a Restate virtual object) restores the call into a memory store, lets
    /// a runtime decide or run it there, and reads it back with
    /// [`CallStore::get`]. Any call of the same id is replaced, and the
    /// fencing tokens this store draws next are above `stored.epoch`, so a
    /// claim made here supersedes the one the document records.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use serde_json::json;
    /// use tool_runtime::store::{CallStore, MemoryStore, PendingCall, PendingKind};
    /// use tool_runtime::StoredCall;
    ///
    /// let mut stored = StoredCall::pending(PendingCall::new("c1", "pay", PendingKind::Approval, json!({ "amount": 5 })));
    /// stored.epoch = 7; // suspended, resumed and suspended again elsewhere
    /// let store = MemoryStore::new();
    /// store.restore(stored.clone());
    /// assert_eq!(store.get("c1").await.unwrap(), Some(stored));
    /// # });
    /// ```
    pub fn restore(&self, stored: StoredCall) {
        let mut state = self.state();
        let id = stored.call.head.call_id.clone();
        let key = |order: PendingOrder| order.key(&stored.call).unwrap_or(NO_TIME);
        let (asked, expiry) = (key(PendingOrder::Asked), key(PendingOrder::Expires));
        state.last_epoch = state.last_epoch.max(stored.epoch);
        if let Some(replaced) = state.calls.insert(id.clone(), stored) {
            let key = |order: PendingOrder| order.key(&replaced.call).unwrap_or(NO_TIME);
            let (asked, expiry) = (key(PendingOrder::Asked), key(PendingOrder::Expires));
            state.by_asked.remove(&(asked, id.clone()));
            state.by_expiry.remove(&(expiry, id.clone()));
        }
        state.by_asked.insert((asked, id.clone()));
        state.by_expiry.insert((expiry, id));
    }

    fn state(&self) -> MutexGuard<'_, Memory> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The call `call_id` if it runs under the claim with token `epoch`.
    fn claimed<'a>(
        calls: &'a mut BTreeMap<String, StoredCall>,
        call_id: &str,
        epoch: u64,
    ) -> Option<&'a mut StoredCall> {
        calls.get_mut(call_id).filter(|stored| {
            matches!(stored.state, CallState::Running { .. }) && stored.epoch == epoch
        })
    }
}

impl Memory {
    /// Writes `notifications` into the outbox, each with the next `seq`: called
    /// under the same lock as the change they report, once it applied.
    fn note(&mut self, notifications: Vec<Notification>) {
        for mut notification in notifications {
            self.last_notification_seq += 1;
            notification.seq = self.last_notification_seq;
            self.outbox
                .insert(notification.seq, OutboxEntry::waiting(notification));
        }
    }

    /// Claims `call_id` for `owner` until `expires_at`, with a new token.
    fn claim(&mut self, call_id: &str, owner: &str, expires_at: SystemTime) -> Option<StoredCall> {
        self.last_epoch += 1;
        let stored = self.calls.get_mut(call_id)?;
        stored.state = CallState::Running {
            owner: owner.to_owned(),
            lease_expires_at: expires_at,
        };
        stored.attempt += 1;
        stored.epoch = self.last_epoch;
        Some(stored.clone())
    }
}

impl CallStore for MemoryStore {
    async fn insert_notifying(
        &self,
        call: PendingCall,
        notifications: Vec<Notification>,
    ) -> Result<(), StoreError> {
        storable_call(&call)?;
        storable_notifications(&notifications)?;
        let mut state = self.state();
        let calls = &mut state.calls;
        if calls.contains_key(&call.head.call_id) {
            return Err(StoreError::Duplicate {
                call_id: call.head.call_id,
            });
        }
        let task = call.kind == PendingKind::Task;
        let id = call.head.call_id.clone();
        let key = |order: PendingOrder| order.key(&call).unwrap_or(NO_TIME);
        let (asked, expiry) = (key(PendingOrder::Asked), key(PendingOrder::Expires));
        calls.insert(id.clone(), StoredCall::pending(call));
        state.by_asked.insert((asked, id.clone()));
        state.by_expiry.insert((expiry, id));
        state.note(notifications);
        drop(state);
        if task {
            self.tasks_stored.notify();
        }
        Ok(())
    }

    async fn decide_notifying(
        &self,
        call_id: &str,
        expected: impl Into<Expected> + Send,
        transition: Transition,
        notifications: Vec<Notification>,
    ) -> Result<Decided, StoreError> {
        let expected = expected.into();
        storable_notifications(&notifications)?;
        match &transition {
            Transition::Run {
                resume_data: Some(data),
                ..
            } => drop(storable_json(call_id, "resume data", data)?),
            Transition::Settle(outcome) => drop(storable_json(call_id, "outcome", outcome)?),
            Transition::RunEdited { input, .. } | Transition::Revise { input, .. } => {
                drop(storable_json(call_id, "input", input)?)
            }
            Transition::Run { .. } => {}
        }
        let mut state = self.state();
        let Some(stored) = state.calls.get_mut(call_id) else {
            return Ok(Decided::Lost(None));
        };
        if !expected.matches(stored) {
            return Ok(Decided::Lost(Some(stored.clone())));
        }
        let now = SystemTime::now();
        let decided = match transition {
            Transition::Run {
                owner,
                lease,
                resume_data,
            } => {
                stored.resume_data = resume_data;
                let claimed = state.claim(call_id, &owner, now + lease);
                claimed.map_or(Decided::Lost(None), Decided::Won)
            }
            Transition::Settle(outcome) => {
                stored.state = CallState::Settled {
                    outcome,
                    settled_at: now,
                };
                Decided::Won(stored.clone())
            }
            Transition::RunEdited {
                owner,
                lease,
                input,
            } => {
                stored.call.input = input;
                stored.resume_data = None;
                let claimed = state.claim(call_id, &owner, now + lease);
                claimed.map_or(Decided::Lost(None), Decided::Won)
            }
            Transition::Revise { input, approvals } => {
                stored.call.input = input;
                stored.call.approvals = approvals;
                state.last_epoch += 1;
                let epoch = state.last_epoch;
                let Some(stored) = state.calls.get_mut(call_id) else {
                    return Ok(Decided::Lost(None));
                };
                stored.epoch = epoch;
                Decided::Won(stored.clone())
            }
        };
        if matches!(decided, Decided::Won(_)) {
            state.note(notifications);
        }
        Ok(decided)
    }

    async fn renew(&self, call_id: &str, epoch: u64, lease: Duration) -> Result<bool, StoreError> {
        let mut state = self.state();
        let Some(stored) = Self::claimed(&mut state.calls, call_id, epoch) else {
            return Ok(false);
        };
        if let CallState::Running {
            lease_expires_at, ..
        } = &mut stored.state
        {
            *lease_expires_at = SystemTime::now() + lease;
        }
        Ok(true)
    }

    async fn finish_notifying(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> Result<bool, StoreError> {
        storable_notifications(&notifications)?;
        match &settlement {
            Settlement::Settled(outcome) => drop(storable_json(call_id, "outcome", outcome)?),
            Settlement::Suspended { payload } => drop(storable_json(call_id, "payload", payload)?),
        }
        let mut state = self.state();
        let Some(stored) = Self::claimed(&mut state.calls, call_id, epoch) else {
            return Ok(false);
        };
        match settlement {
            Settlement::Settled(outcome) => {
                stored.state = CallState::Settled {
                    outcome,
                    settled_at: SystemTime::now(),
                };
            }
            Settlement::Suspended { payload } => {
                stored.call.kind = PendingKind::Suspended;
                stored.call.payload = Some(payload);
                stored.state = CallState::Pending;
                stored.attempt = 0;
                stored.resume_data = None;
            }
        }
        state.note(notifications);
        Ok(true)
    }

    async fn recover_expired(
        &self,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Vec<StoredCall>, StoreError> {
        let now = SystemTime::now();
        let mut state = self.state();
        let expired: Vec<String> = state
            .calls
            .values()
            .filter(|stored| {
                stored.lease_expired(now) && tool_ids.contains(&stored.call.head.tool_id)
            })
            .map(|stored| stored.call.head.call_id.clone())
            .collect();
        Ok(expired
            .iter()
            .filter_map(|call_id| state.claim(call_id, owner, now + lease))
            .collect())
    }

    async fn claim_next(
        &self,
        kind: PendingKind,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Option<StoredCall>, StoreError> {
        let mut state = self.state();
        let Some(call_id) = state
            .calls
            .values()
            .find(|stored| {
                stored.state.is_pending()
                    && stored.call.kind == kind
                    && tool_ids.contains(&stored.call.head.tool_id)
            })
            .map(|stored| stored.call.head.call_id.clone())
        else {
            return Ok(None);
        };
        Ok(state.claim(&call_id, owner, SystemTime::now() + lease))
    }

    async fn purge_settled(&self, retention: Retention) -> Result<usize, StoreError> {
        let now = SystemTime::now();
        let older = |at: SystemTime| now.duration_since(at).unwrap_or_default() > retention.age;
        let mut state = self.state();
        let before = state.calls.len() + state.runs.len();
        state.calls.retain(|_, stored| match stored.state {
            CallState::Settled { settled_at, .. } => !older(settled_at),
            _ => true,
        });
        let mut settled: Vec<(SystemTime, String)> = state
            .calls
            .values()
            .filter_map(|stored| match stored.state {
                CallState::Settled { settled_at, .. } => {
                    Some((settled_at, stored.call.head.call_id.clone()))
                }
                _ => None,
            })
            .collect();
        let excess = settled.len().saturating_sub(retention.max_settled);
        settled.sort_unstable();
        for (_, call_id) in settled.into_iter().take(excess) {
            state.calls.remove(&call_id);
            state.purged.insert(call_id, now);
        }
        state.purged.retain(|_, purged_at| !older(*purged_at));
        state
            .runs
            .retain(|_, (run, saved_at)| !(run.finished && older(*saved_at)));
        let Memory {
            calls,
            by_asked,
            by_expiry,
            ..
        } = &mut *state;
        by_asked.retain(|(_, id)| calls.contains_key(id));
        by_expiry.retain(|(_, id)| calls.contains_key(id));
        Ok(before - state.calls.len() - state.runs.len())
    }

    async fn purged(&self, call_id: &str) -> Result<Option<SystemTime>, StoreError> {
        Ok(self.state().purged.get(call_id).copied())
    }

    async fn get(&self, call_id: &str) -> Result<Option<StoredCall>, StoreError> {
        Ok(self.state().calls.get(call_id).cloned())
    }

    async fn list(&self) -> Result<Vec<StoredCall>, StoreError> {
        Ok(self
            .state()
            .calls
            .values()
            .filter(|stored| stored.state.is_pending())
            .cloned()
            .collect())
    }

    async fn list_page(&self, query: PendingQuery) -> Result<Vec<StoredCall>, StoreError> {
        let state = self.state();
        let by_time = match query.order {
            PendingOrder::Asked => Some(&state.by_asked),
            PendingOrder::Expires => Some(&state.by_expiry),
            _ => None,
        };
        if let Some(index) = by_time {
            // From the position after `after` in the order's index.
            let from = match &query.after {
                Some(after) => Bound::Excluded((query.after_key.unwrap_or(0), after.clone())),
                None => Bound::Unbounded,
            };
            return Ok(index
                .range((from, Bound::Unbounded))
                .filter_map(|(_, call_id)| state.calls.get(call_id))
                .filter(|stored| stored.state.is_pending() && query.selects(&stored.call))
                .take(query.limit)
                .cloned()
                .collect());
        }
        // From `after` on in the map's order (by call id): a page costs
        // the calls it passes over, not every call stored.
        let from = match query.after.as_deref() {
            Some(after) => Bound::Excluded(after),
            None => Bound::Unbounded,
        };
        Ok(state
            .calls
            .range::<str, _>((from, Bound::Unbounded))
            .map(|(_, stored)| stored)
            .filter(|stored| stored.state.is_pending() && query.selects(&stored.call))
            .take(query.limit)
            .cloned()
            .collect())
    }

    fn task_signal(&self) -> Option<TaskSignal> {
        Some(self.tasks_stored.subscribe())
    }
}

impl AuditLog for MemoryStore {
    async fn append_audit_notifying(
        &self,
        mut entry: AuditEntry,
        notifications: Vec<Notification>,
    ) -> Result<u64, StoreError> {
        storable_audit(&entry)?;
        storable_notifications(&notifications)?;
        let mut state = self.state();
        state.last_audit_seq += 1;
        entry.seq = state.last_audit_seq;
        let seq = entry.seq;
        state.audit.push(entry);
        state.note(notifications);
        Ok(seq)
    }

    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let state = self.state();
        // Entries are kept in `seq` order: the query's start is found, not
        // walked to.
        let start = state
            .audit
            .partition_point(|entry| entry.seq <= query.after);
        Ok(state.audit[start..]
            .iter()
            .filter(|entry| query.matches(entry))
            .take(query.limit)
            .cloned()
            .collect())
    }

    async fn audit_end(&self) -> Result<u64, StoreError> {
        Ok(self.state().audit.last().map_or(0, |last| last.seq))
    }

    async fn purge_audit(&self, retention: AuditRetention) -> Result<usize, StoreError> {
        let cutoff = retention.cutoff_ms();
        let mut state = self.state();
        let Memory { calls, audit, .. } = &mut *state;
        let pending = |entry: &AuditEntry| {
            calls
                .get(&entry.call_id)
                .is_some_and(|stored| stored.state.is_pending())
        };
        let before = audit.len();
        audit.retain(|entry| entry.at_ms >= cutoff || pending(entry));
        // The oldest beyond the size bound, the pending calls' aside.
        let mut excess = audit.len().saturating_sub(retention.max_entries);
        audit.retain(|entry| {
            if excess > 0 && !pending(entry) {
                excess -= 1;
                return false;
            }
            true
        });
        Ok(before - audit.len())
    }
}

impl RunStore for MemoryStore {
    async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        Ok(self.state().runs.get(run_id).map(|(run, _)| run.clone()))
    }

    async fn save_run(
        &self,
        run_id: &str,
        expected_revision: Option<u64>,
        finished: bool,
        record: Value,
    ) -> Result<Option<u64>, StoreError> {
        storable_run_record(run_id, &record)?;
        let mut state = self.state();
        let current = state.runs.get(run_id).map(|(run, _)| run.revision);
        let revision = match (current, expected_revision) {
            (None, None) => 1,
            (Some(current), Some(expected)) if current == expected => expected + 1,
            _ => return Ok(None),
        };
        let run = StoredRun::new(run_id, revision, finished, record);
        state
            .runs
            .insert(run_id.to_owned(), (run, SystemTime::now()));
        Ok(Some(revision))
    }
}

impl RuleStore for MemoryStore {
    async fn add_rule(&self, rule: StandingRule) -> Result<bool, StoreError> {
        storable_rule(&rule)?;
        let mut state = self.state();
        if state.rules.iter().any(|kept| kept.rule_id == rule.rule_id) {
            return Ok(false);
        }
        state.rules.push(rule);
        Ok(true)
    }

    async fn revoke_rule(
        &self,
        rule_id: &str,
        revocation: Revocation,
    ) -> Result<Option<StandingRule>, StoreError> {
        let mut state = self.state();
        let Some(rule) = state
            .rules
            .iter_mut()
            .find(|rule| rule.rule_id == rule_id && rule.revoked.is_none())
        else {
            return Ok(None);
        };
        rule.revoked = Some(revocation);
        Ok(Some(rule.clone()))
    }

    async fn rule(&self, rule_id: &str) -> Result<Option<StandingRule>, StoreError> {
        let state = self.state();
        Ok(state
            .rules
            .iter()
            .find(|rule| rule.rule_id == rule_id)
            .cloned())
    }

    async fn rules_in_force(
        &self,
        tool_id: Option<&str>,
        now_ms: u64,
    ) -> Result<Vec<StandingRule>, StoreError> {
        let state = self.state();
        Ok(state
            .rules
            .iter()
            .filter(|rule| tool_id.is_none_or(|tool_id| rule.tool_id == tool_id))
            .filter(|rule| rule.in_force_at(now_ms))
            .cloned()
            .collect())
    }
}

impl Outbox for MemoryStore {
    async fn claim_notifications(
        &self,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let now = super::time::epoch_ms(SystemTime::now());
        let mut state = self.state();
        // A call whose earliest unsettled notification is not due holds back its
        // later ones: notifications of one call go out in order.
        let mut held_calls = BTreeSet::new();
        let mut claimed = Vec::new();
        for entry in state.outbox.values_mut() {
            if claimed.len() >= limit {
                break;
            }
            if entry.state.is_settled() {
                continue;
            }
            if !held_calls.insert(entry.notification.call_id.clone()) {
                continue;
            }
            let due = match &entry.state {
                DeliveryState::Waiting => entry.next_at_ms <= now,
                DeliveryState::Sending {
                    lease_expires_at_ms,
                    ..
                } => *lease_expires_at_ms <= now,
                DeliveryState::Delivered { .. } | DeliveryState::Dead { .. } => false,
            };
            if due {
                entry.state = DeliveryState::Sending {
                    owner: owner.to_owned(),
                    lease_expires_at_ms: lease_end_ms(now, lease),
                };
                entry.attempts += 1;
                entry.epoch += 1;
                claimed.push(entry.clone());
            }
        }
        Ok(claimed)
    }

    async fn settle_notification(
        &self,
        seq: u64,
        epoch: u64,
        delivery: Delivery,
    ) -> Result<bool, StoreError> {
        let now = super::time::epoch_ms(SystemTime::now());
        let mut state = self.state();
        let Some(entry) = state.outbox.get_mut(&seq).filter(|entry| {
            matches!(entry.state, DeliveryState::Sending { .. }) && entry.epoch == epoch
        }) else {
            return Ok(false);
        };
        match delivery {
            Delivery::Delivered { delivered_to } => {
                entry.state = DeliveryState::Delivered { at_ms: now };
                entry.delivered_to = delivered_to;
            }
            Delivery::Retry {
                next_at_ms,
                delivered_to,
                error,
            } => {
                entry.state = DeliveryState::Waiting;
                entry.next_at_ms = next_at_ms;
                entry.delivered_to = delivered_to;
                entry.last_error = Some(error);
            }
            Delivery::Dead {
                delivered_to,
                error,
            } => {
                entry.state = DeliveryState::Dead { at_ms: now };
                entry.delivered_to = delivered_to;
                entry.last_error = Some(error);
            }
        }
        Ok(true)
    }

    async fn outbox(&self, query: OutboxQuery) -> Result<Vec<OutboxEntry>, StoreError> {
        let state = self.state();
        Ok(state
            .outbox
            .range(query.after.saturating_add(1)..)
            .map(|(_, entry)| entry)
            .filter(|entry| query.matches(entry))
            .take(query.limit)
            .cloned()
            .collect())
    }

    async fn redeliver(&self, seq: u64) -> Result<bool, StoreError> {
        let now = super::time::epoch_ms(SystemTime::now());
        let mut state = self.state();
        let Some(entry) = state
            .outbox
            .get_mut(&seq)
            .filter(|entry| matches!(entry.state, DeliveryState::Dead { .. }))
        else {
            return Ok(false);
        };
        entry.state = DeliveryState::Waiting;
        entry.next_at_ms = now;
        entry.attempts = 0;
        Ok(true)
    }

    async fn purge_outbox(&self, retention: Retention) -> Result<usize, StoreError> {
        let cutoff = retention.cutoff_ms();
        let mut state = self.state();
        let settled_at = |entry: &OutboxEntry| match entry.state {
            DeliveryState::Delivered { at_ms } | DeliveryState::Dead { at_ms } => Some(at_ms),
            DeliveryState::Waiting | DeliveryState::Sending { .. } => None,
        };
        let before = state.outbox.len();
        state
            .outbox
            .retain(|_, entry| settled_at(entry).is_none_or(|at| at >= cutoff));
        let mut settled: Vec<(u64, u64)> = state
            .outbox
            .values()
            .filter_map(|entry| settled_at(entry).map(|at| (at, entry.notification.seq)))
            .collect();
        if settled.len() > retention.max_settled {
            settled.sort_unstable();
            let over = settled.len() - retention.max_settled;
            for (_, seq) in &settled[..over] {
                state.outbox.remove(seq);
            }
        }
        Ok(before - state.outbox.len())
    }
}
