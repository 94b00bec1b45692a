//! A store that forwards to another, except where a switch breaks it: lease
//! renewals that fail (a database the instance cannot reach) or are refused
//! (another instance took the call over), settlements and reads that fail,
//! inserts that fail or whose answer is lost, and the whole database down.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tool_runtime::store::{
    AuditEntry, AuditLog, AuditQuery, AuditRetention, CallStore, Decided, Delivery, Expected,
    Notification, Outbox, OutboxEntry, OutboxQuery, PendingQuery, Retention, Revocation, RuleStore,
    RunStore, Settlement, StandingRule, StoreTransaction, StoredRun, TaskSignal, Transition,
};
use tool_runtime::{PendingCall, PendingKind, StoreError, StoredCall};

/// `S` with switches; clones share the store and the switches.
pub struct Faulty<S> {
    pub store: Arc<S>,
    /// `renew` fails with an I/O error.
    pub renew_down: Arc<AtomicBool>,
    /// `renew` answers `false`: the claim was taken over.
    pub renew_refused: Arc<AtomicBool>,
    /// `finish` fails with an I/O error.
    pub finish_down: Arc<AtomicBool>,
    /// How many times `finish` was asked.
    pub finish_tries: Arc<AtomicU32>,
    /// `get` fails with an I/O error.
    pub get_down: Arc<AtomicBool>,
    /// The next this many `insert`s fail with an I/O error, storing nothing.
    pub inserts_failing: Arc<AtomicU32>,
    /// The next this many `insert`s store the call, then fail with an I/O
    /// error: the store took it, its answer was lost on the way.
    pub inserts_unanswered: Arc<AtomicU32>,
    /// How many times `insert` was asked.
    pub insert_tries: Arc<AtomicU32>,
    /// How long each `decide`'s answer takes after the store took it, in
    /// milliseconds: a store slow to answer under load.
    pub decide_answer_ms: Arc<AtomicU64>,
    /// The database is down: every method of the calls' lifecycle
    /// (`insert`, `decide`, `renew`, `finish`, `recover_expired`,
    /// `claim_next`, `get`) fails with an I/O error.
    pub down: Arc<AtomicBool>,
}

impl<S> Clone for Faulty<S> {
    fn clone(&self) -> Self {
        Faulty {
            store: Arc::clone(&self.store),
            renew_down: Arc::clone(&self.renew_down),
            renew_refused: Arc::clone(&self.renew_refused),
            finish_down: Arc::clone(&self.finish_down),
            finish_tries: Arc::clone(&self.finish_tries),
            get_down: Arc::clone(&self.get_down),
            inserts_failing: Arc::clone(&self.inserts_failing),
            inserts_unanswered: Arc::clone(&self.inserts_unanswered),
            insert_tries: Arc::clone(&self.insert_tries),
            decide_answer_ms: Arc::clone(&self.decide_answer_ms),
            down: Arc::clone(&self.down),
        }
    }
}

impl<S> Faulty<S> {
    /// `store`, nothing broken yet.
    pub fn new(store: S) -> Self {
        Faulty::over(Arc::new(store))
    }

    /// Another way into the same store, with switches of its own: another
    /// instance's, which reaches the database while this one does not.
    pub fn beside(&self) -> Self {
        Faulty::over(Arc::clone(&self.store))
    }

    fn over(store: Arc<S>) -> Self {
        Faulty {
            store,
            renew_down: Arc::default(),
            renew_refused: Arc::default(),
            finish_down: Arc::default(),
            finish_tries: Arc::default(),
            get_down: Arc::default(),
            inserts_failing: Arc::default(),
            inserts_unanswered: Arc::default(),
            insert_tries: Arc::default(),
            decide_answer_ms: Arc::default(),
            down: Arc::default(),
        }
    }

    /// Fails as the database does when [`down`](Self::down) is on.
    fn up(&self, what: &str) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(down(what));
        }
        Ok(())
    }
}

/// Counts one off `count` if it is not zero yet: whether it was not.
fn take_one(count: &AtomicU32) -> bool {
    count
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn down(what: &str) -> StoreError {
    StoreError::Io {
        location: "faulty".into(),
        reason: format!("{what}: the database is not reachable"),
        source: None,
    }
}

impl<S: CallStore> CallStore for Faulty<S> {
    async fn insert_notifying(
        &self,
        call: PendingCall,
        notifications: Vec<Notification>,
    ) -> Result<(), StoreError> {
        self.insert_tries.fetch_add(1, Ordering::SeqCst);
        self.up("insert")?;
        if take_one(&self.inserts_failing) {
            return Err(down("insert"));
        }
        let lost = take_one(&self.inserts_unanswered);
        self.store.insert_notifying(call, notifications).await?;
        if lost {
            return Err(down("insert (the answer was lost)"));
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
        self.up("decide")?;
        let decided = self
            .store
            .decide_notifying(call_id, expected, transition, notifications)
            .await;
        let late = self.decide_answer_ms.load(Ordering::SeqCst);
        if late > 0 {
            tokio::time::sleep(Duration::from_millis(late)).await;
        }
        decided
    }
    async fn renew(&self, call_id: &str, epoch: u64, lease: Duration) -> Result<bool, StoreError> {
        self.up("renew")?;
        if self.renew_down.load(Ordering::SeqCst) {
            return Err(down("renew"));
        }
        if self.renew_refused.load(Ordering::SeqCst) {
            return Ok(false);
        }
        self.store.renew(call_id, epoch, lease).await
    }
    async fn finish_notifying(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> Result<bool, StoreError> {
        self.finish_tries.fetch_add(1, Ordering::SeqCst);
        self.up("finish")?;
        if self.finish_down.load(Ordering::SeqCst) {
            return Err(down("finish"));
        }
        self.store
            .finish_notifying(call_id, epoch, settlement, notifications)
            .await
    }
    async fn recover_expired(
        &self,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Vec<StoredCall>, StoreError> {
        self.up("recover_expired")?;
        self.store.recover_expired(owner, lease, tool_ids).await
    }
    async fn claim_next(
        &self,
        kind: PendingKind,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Option<StoredCall>, StoreError> {
        self.up("claim_next")?;
        self.store.claim_next(kind, owner, lease, tool_ids).await
    }
    async fn purge_settled(&self, retention: Retention) -> Result<usize, StoreError> {
        self.store.purge_settled(retention).await
    }
    async fn purged(&self, call_id: &str) -> Result<Option<SystemTime>, StoreError> {
        self.store.purged(call_id).await
    }
    async fn get(&self, call_id: &str) -> Result<Option<StoredCall>, StoreError> {
        self.up("get")?;
        if self.get_down.load(Ordering::SeqCst) {
            return Err(down("get"));
        }
        self.store.get(call_id).await
    }
    async fn list(&self) -> Result<Vec<StoredCall>, StoreError> {
        self.store.list().await
    }
    async fn list_page(&self, query: PendingQuery) -> Result<Vec<StoredCall>, StoreError> {
        self.store.list_page(query).await
    }
    fn transaction(&self) -> Option<Box<dyn StoreTransaction>> {
        self.store.transaction()
    }
    fn task_signal(&self) -> Option<TaskSignal> {
        self.store.task_signal()
    }
}

impl<S: AuditLog> AuditLog for Faulty<S> {
    async fn append_audit_notifying(
        &self,
        entry: AuditEntry,
        notifications: Vec<Notification>,
    ) -> Result<u64, StoreError> {
        self.store
            .append_audit_notifying(entry, notifications)
            .await
    }
    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.store.audit(query).await
    }
    async fn audit_end(&self) -> Result<u64, StoreError> {
        self.store.audit_end().await
    }
    async fn purge_audit(&self, retention: AuditRetention) -> Result<usize, StoreError> {
        self.store.purge_audit(retention).await
    }
}

impl<S: RuleStore> RuleStore for Faulty<S> {
    async fn add_rule(&self, rule: StandingRule) -> Result<bool, StoreError> {
        self.store.add_rule(rule).await
    }
    async fn revoke_rule(
        &self,
        rule_id: &str,
        revocation: Revocation,
    ) -> Result<Option<StandingRule>, StoreError> {
        self.store.revoke_rule(rule_id, revocation).await
    }
    async fn rule(&self, rule_id: &str) -> Result<Option<StandingRule>, StoreError> {
        self.store.rule(rule_id).await
    }
    async fn rules_in_force(
        &self,
        tool_id: Option<&str>,
        now_ms: u64,
    ) -> Result<Vec<StandingRule>, StoreError> {
        self.store.rules_in_force(tool_id, now_ms).await
    }
}

impl<S: RunStore> RunStore for Faulty<S> {
    async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        self.store.load_run(run_id).await
    }
    async fn save_run(
        &self,
        run_id: &str,
        expected_revision: Option<u64>,
        finished: bool,
        record: Value,
    ) -> Result<Option<u64>, StoreError> {
        self.store
            .save_run(run_id, expected_revision, finished, record)
            .await
    }
}

impl<S: Outbox> Outbox for Faulty<S> {
    async fn claim_notifications(
        &self,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        self.up("claim_notifications")?;
        self.store.claim_notifications(owner, lease, limit).await
    }
    async fn settle_notification(
        &self,
        seq: u64,
        epoch: u64,
        delivery: Delivery,
    ) -> Result<bool, StoreError> {
        self.up("settle_notification")?;
        self.store.settle_notification(seq, epoch, delivery).await
    }
    async fn outbox(&self, query: OutboxQuery) -> Result<Vec<OutboxEntry>, StoreError> {
        self.store.outbox(query).await
    }
    async fn redeliver(&self, seq: u64) -> Result<bool, StoreError> {
        self.store.redeliver(seq).await
    }
    async fn purge_outbox(&self, retention: Retention) -> Result<usize, StoreError> {
        self.store.purge_outbox(retention).await
    }
}
