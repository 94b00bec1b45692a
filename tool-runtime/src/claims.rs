//! The runtime's access to its store: storing a paused call, the lookup and
//! the one atomic transition a decision makes, the lease a claimed call runs
//! under, and recovery. Every store call of the runtime goes through here,
//! and so does the mapping of a call's state to what a decision answers.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tool_core::{AbortSignal, Excerpt};

use crate::call_outcome::CallOutcome;
use crate::error::RuntimeError;
use crate::notifications::Notifications;
use crate::outage::{Outage, Waiting};
use crate::store::{
    AuditEntry, AuditKind, AuditQuery, AuditRetention, CallState, Committed, Decided, DynAuditLog,
    DynCallStore, DynOutbox, Expected, Notification, PendingCall, PendingKind, PendingQuery,
    RecordedOutcome, RequiredApprovals, Retention, Settlement, StoreError, StoreFuture,
    StoreTransaction, StoredCall, Stores, TaskSignal, Transition,
};

/// How often settled calls beyond the retention are purged, at most, unless
/// settlements come faster (see [`StoredCalls::purge_if_due`]).
const PURGE_EVERY: Duration = Duration::from_secs(60);
/// Purges come at least once per this fraction of the size bound in
/// settlements through one instance: between two purges, the store holds
/// at most an eighth more settled calls than the bound, per instance.
const PURGE_FRACTION: usize = 8;

/// The first wait before an outcome the store refused is offered again; it
/// doubles up to [`RECORD_RETRY_MAX`]. A new call the store failed to take
/// is tried again after as long, doubling up to [`INSERT_RETRY_MAX`]. Both
/// end sooner when the store answers again ([`Outage`]).
const RECORD_RETRY_FIRST: Duration = Duration::from_millis(50);
/// The longest wait between two tries to record an outcome.
const RECORD_RETRY_MAX: Duration = Duration::from_secs(2);
/// The longest wait between two tries to store a new call, whose caller
/// waits for it.
const INSERT_RETRY_MAX: Duration = Duration::from_secs(1);

/// How long past a claim's lease another instance waits before it takes the
/// call over: the instance running it stops the call when the lease runs
/// out by its own clock, and the grace covers the moment it takes to stop
/// and a clock that runs a little slow. A quarter of the lease (at least 1 ms).
pub(crate) fn takeover_grace(lease: Duration) -> Duration {
    (lease / 4).max(Duration::from_millis(1))
}

/// The runtime's stored calls.
#[derive(Clone)]
pub(crate) struct StoredCalls {
    store: Arc<dyn DynCallStore>,
    audit_log: Arc<dyn DynAuditLog>,
    outbox: Arc<dyn DynOutbox>,
    /// This instance, as the owner of the calls it claims.
    owner: Arc<str>,
    lease: Duration,
    retention: Retention,
    audit_retention: AuditRetention,
    last_purge: Arc<Mutex<PurgeClock>>,
    /// How long a new call is tried again while the store fails.
    insert_budget: Duration,
    /// The writes waiting for the store to answer again.
    outage: Arc<Outage>,
    /// Whether the changes are written with notifications, and which.
    notifications: Notifications,
}

/// When this instance last purged, and how many calls it finished and
/// audit entries it appended since.
#[derive(Default)]
struct PurgeClock {
    at: Option<Instant>,
    finished_since: usize,
    appended_since: usize,
}

/// What a lookup found.
// `allow`, not `expect`: whether the lint fires depends on how large
// serde_json's `Value` is in the build (dev-dependencies change it).
#[allow(
    clippy::large_enum_variant,
    reason = "returned once per decision and taken apart at once"
)]
pub(crate) enum Lookup {
    /// The call is pending for the kind asked.
    Pending(StoredCall),
    /// The call is settled: its recorded outcome.
    Settled(CallOutcome),
}

/// What a decision did.
// `allow`, not `expect`: whether the lint fires depends on how large
// serde_json's `Value` is in the build (dev-dependencies change it).
#[allow(
    clippy::large_enum_variant,
    reason = "returned once per decision and taken apart at once"
)]
pub(crate) enum Verdict {
    /// It claimed the call to run, under this lease.
    Claimed(StoredCall, Lease),
    /// It settled the call without running it.
    Settled(StoredCall),
    /// Another decision settled the call first: its recorded outcome.
    AlreadySettled(CallOutcome),
    /// The call waits on as a new version (an edit under several approvals).
    Revised(StoredCall),
}

/// What a decision does, for [`StoredCalls::decide`].
pub(crate) enum Claim {
    /// Run it (with the resume data, for a resume).
    Run(Option<Value>),
    /// Settle it without running.
    Settle(RecordedOutcome),
    /// Run it with this edited input, stored in the same step.
    RunEdited(Value),
    /// Keep it waiting as a new version: this edited input, needing these
    /// approvals.
    Revise(Value, Option<RequiredApprovals>),
}

impl StoredCalls {
    /// The calls in `stores` (and their audit log).
    pub(crate) fn new(
        stores: &Stores,
        owner: String,
        lease: Duration,
        retention: Retention,
        audit_retention: AuditRetention,
        insert_budget: Duration,
        notifications: Notifications,
    ) -> Self {
        StoredCalls {
            store: Arc::clone(&stores.calls),
            audit_log: Arc::clone(&stores.audit),
            outbox: Arc::clone(&stores.outbox),
            owner: owner.into(),
            lease,
            retention,
            audit_retention,
            last_purge: Arc::default(),
            insert_budget,
            outage: Arc::default(),
            notifications,
        }
    }

    /// Calls in a fresh memory store, for the components' unit tests.
    #[cfg(test)]
    pub(crate) fn in_memory() -> Self {
        StoredCalls::new(
            &Stores::of(crate::store::MemoryStore::new()),
            "test-instance".to_owned(),
            Duration::from_secs(30),
            Retention::new(Duration::from_secs(60), 100),
            AuditRetention::new(Duration::from_secs(60), 100),
            Duration::from_secs(10),
            Notifications::new(true),
        )
    }

    /// What notifications this runtime writes with the changes it makes.
    pub(crate) fn notifications(&self) -> Notifications {
        self.notifications
    }

    /// The store's outbox, where those notifications wait for delivery.
    pub(crate) fn outbox(&self) -> Arc<dyn DynOutbox> {
        Arc::clone(&self.outbox)
    }

    /// How long a settled call is kept before it may be purged, and how many.
    pub(crate) fn retention(&self) -> Retention {
        self.retention
    }

    /// This instance's id.
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// Every call waiting for a decision, as stored ([`CallInbox::waiting`](crate::CallInbox::waiting)).
    pub(crate) fn waiting(
        &self,
    ) -> impl Future<Output = Result<Vec<StoredCall>, RuntimeError>> + Send + 'static {
        let stored = self.clone();
        async move {
            let mut waiting = stored.list().await?;
            waiting.retain(|stored| stored.call.kind != PendingKind::Task);
            Ok(waiting)
        }
    }

    /// The call `call_id` in whatever state ([`CallInbox::stored`](crate::CallInbox::stored)).
    pub(crate) fn stored(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Option<StoredCall>, RuntimeError>> + Send + 'static {
        let (stored, call_id) = (self.clone(), call_id.to_owned());
        async move { Ok(stored.get(&call_id).await?) }
    }

    /// Stores a paused call, with `notifications` in the same step; one
    /// that waits for a person (not a task) is requested in the audit log.
    /// A store that fails is asked again within the insert budget
    /// ([`insert_retrying`](Self::insert_retrying)).
    pub(crate) async fn insert(
        &self,
        call: PendingCall,
        notifications: Vec<Notification>,
    ) -> Result<(), NotStored> {
        let request = (call.kind != PendingKind::Task).then(|| {
            AuditEntry::new(
                AuditKind::Requested,
                &call.head.call_id,
                &call.head.tool_id,
                call.kind.as_str(),
            )
        });
        self.insert_retrying(call, notifications).await?;
        if let Some(request) = request {
            self.audit(request).await;
        }
        Ok(())
    }

    /// Inserts `call`, tried again while the store fails with an I/O error
    /// (a database restarting, a connection lost) and the insert budget
    /// lasts: after a wait that doubles from [`RECORD_RETRY_FIRST`] up to
    /// [`INSERT_RETRY_MAX`], or sooner when the store answers again. No try
    /// starts after the budget; one in flight then is awaited, since
    /// abandoning it would leave unknown whether the call is stored. Any
    /// other error is final. Outside a tokio runtime (nothing to wait on),
    /// one try.
    ///
    /// A try that failed on its way may have been stored: a later try then
    /// finds the call stored, and if it is this call, as it was sent, the
    /// insert succeeded, neither a duplicate nor stored twice.
    async fn insert_retrying(
        &self,
        call: PendingCall,
        notifications: Vec<Notification>,
    ) -> Result<(), NotStored> {
        if self.insert_budget.is_zero() || tokio::runtime::Handle::try_current().is_err() {
            let inserted = self.store.insert_notifying(call, notifications).await;
            return inserted.map_err(|error| NotStored {
                error,
                tries: 1,
                over: Duration::ZERO,
            });
        }
        let started = tokio::time::Instant::now();
        let deadline = started + self.insert_budget;
        let (mut tries, mut pause) = (0_u32, RECORD_RETRY_FIRST);
        let mut waiting: Option<Waiting> = None;
        loop {
            tries += 1;
            let not_stored = |error| NotStored {
                error,
                tries,
                over: started.elapsed(),
            };
            let inserted = self
                .store
                .insert_notifying(call.clone(), notifications.clone())
                .await;
            let error = match inserted {
                Ok(()) => return Ok(()),
                Err(duplicate @ StoreError::Duplicate { .. }) if tries > 1 => {
                    match self.store.get(&call.head.call_id).await {
                        Ok(Some(stored)) if inserted_as(&stored.call, &call) => return Ok(()),
                        Ok(_) => return Err(not_stored(duplicate)),
                        Err(error) => error,
                    }
                }
                Err(error @ StoreError::Io { .. }) => error,
                Err(error) => return Err(not_stored(error)),
            };
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(not_stored(error));
            }
            let pause_now = pause.min(left);
            tracing::warn!(%error, call_id = %Excerpt::of(&call.head.call_id), retry_in_ms = pause_now.as_millis(), "could not store a call; trying again");
            waiting
                .get_or_insert_with(|| self.wait_for_store(&call.head.call_id))
                .pause(pause_now)
                .await;
            pause = (pause * 2).min(INSERT_RETRY_MAX);
        }
    }

    /// A wait for the store to answer again, for a write on `call_id`,
    /// whose reads probe it.
    fn wait_for_store(&self, call_id: &str) -> Waiting {
        let (calls, call_id) = (self.clone(), call_id.to_owned());
        self.outage.wait(move || {
            let (calls, call_id) = (calls.clone(), call_id.clone());
            async move { calls.store.get(&call_id).await.is_ok() }
        })
    }

    /// Appends `entry` to the audit log. A store that fails to is logged,
    /// not raised: what the entry records (a request, a decision) has
    /// happened either way.
    pub(crate) async fn audit(&self, entry: AuditEntry) {
        let call_id = Excerpt::of(&entry.call_id).to_string();
        match self
            .audit_log
            .append_audit_notifying(entry, Vec::new())
            .await
        {
            Ok(_) => self.note_appended(),
            Err(error) => tracing::error!(call_id, %error, "an audit log entry was not stored"),
        }
    }

    /// Appends `entry` to the audit log with `notifications`, in one step:
    /// a grant, or the application's entry
    /// ([`CallInbox::append_audit`](crate::CallInbox::append_audit)).
    pub(crate) fn append_audit(
        &self,
        entry: AuditEntry,
        notifications: Vec<Notification>,
    ) -> impl Future<Output = Result<u64, RuntimeError>> + Send + 'static {
        let stored = self.clone();
        async move {
            let seq = stored
                .audit_log
                .append_audit_notifying(entry, notifications)
                .await?;
            // The application's entries (refused attempts) may come without
            // any call settling: they bring the purge too.
            stored.note_appended();
            stored.purge_if_due().await;
            Ok(seq)
        }
    }

    /// A page of the pending calls `query` selects ([`CallInbox::waiting_page`](crate::CallInbox::waiting_page)).
    pub(crate) async fn list_page(
        &self,
        query: PendingQuery,
    ) -> Result<Vec<StoredCall>, StoreError> {
        self.store.list_page(query).await
    }

    /// The newest audit entry's `seq`
    /// ([`CallInbox::audit_end`](crate::CallInbox::audit_end)).
    pub(crate) fn audit_end(
        &self,
    ) -> impl Future<Output = Result<u64, RuntimeError>> + Send + 'static {
        let stored = self.clone();
        async move { Ok(stored.audit_log.audit_end().await?) }
    }

    /// The entries of the audit log `query` selects
    /// ([`CallInbox::audit`](crate::CallInbox::audit)).
    pub(crate) fn read_audit(
        &self,
        query: AuditQuery,
    ) -> impl Future<Output = Result<Vec<AuditEntry>, RuntimeError>> + Send + 'static {
        let stored = self.clone();
        async move { Ok(stored.audit_log.audit(query).await?) }
    }

    /// Every pending call, ordered by call id, as stored.
    pub(crate) async fn list(&self) -> Result<Vec<StoredCall>, StoreError> {
        self.store.list().await
    }

    /// A new transaction for a transactional tool's call, if the store can
    /// run one (the runtime's builder checked that it can).
    pub(crate) fn transaction(&self) -> Option<Box<dyn StoreTransaction>> {
        self.store.transaction()
    }

    /// Wakes a worker when a task is stored, if the store can tell.
    pub(crate) fn task_signal(&self) -> Option<TaskSignal> {
        self.store.task_signal()
    }

    /// The lease of a claimed call: how long it lasts unless renewed.
    pub(crate) fn lease(&self) -> Duration {
        self.lease
    }

    /// The call `call_id`, in whatever state.
    pub(crate) async fn get(&self, call_id: &str) -> Result<Option<StoredCall>, StoreError> {
        self.store.get(call_id).await
    }

    /// The call `call_id` if it is pending for one of `kinds` or settled;
    /// otherwise why not. Nothing changes in the store.
    pub(crate) async fn lookup(
        &self,
        call_id: &str,
        kinds: &[PendingKind],
    ) -> Result<Lookup, RuntimeError> {
        match self.store.get(call_id).await? {
            Some(stored) if stored.state.is_pending() && kinds.contains(&stored.call.kind) => {
                Ok(Lookup::Pending(stored))
            }
            found => self.not_pending(call_id, found).await.map(Lookup::Settled),
        }
    }

    /// Makes the decision's transition, atomically: of concurrent decisions
    /// on one call exactly one claims or settles it; the others get its
    /// recorded outcome or are told why not.
    pub(crate) async fn decide(
        &self,
        call_id: &str,
        expected: Expected,
        claim: Claim,
        notifications: Vec<Notification>,
    ) -> Result<Verdict, RuntimeError> {
        let transition = match claim {
            Claim::Run(resume_data) => Transition::Run {
                owner: self.owner.to_string(),
                lease: self.claimed_for(),
                resume_data,
            },
            Claim::Settle(outcome) => Transition::Settle(outcome),
            Claim::RunEdited(input) => Transition::RunEdited {
                owner: self.owner.to_string(),
                lease: self.claimed_for(),
                input,
            },
            Claim::Revise(input, approvals) => Transition::Revise { input, approvals },
        };
        let asked = Instant::now();
        let decided = self
            .store
            .decide_notifying(call_id, expected, transition, notifications)
            .await?;
        match decided {
            Decided::Won(stored) if matches!(stored.state, CallState::Running { .. }) => {
                let lease = self.lease_of(&stored, asked);
                Ok(Verdict::Claimed(stored, lease))
            }
            Decided::Won(stored) if stored.state.is_pending() => Ok(Verdict::Revised(stored)),
            Decided::Won(stored) => {
                self.note_finished();
                self.purge_if_due().await;
                Ok(Verdict::Settled(stored))
            }
            // Still waiting for the same, under another token: a later
            // version of the call than the one decided on.
            Decided::Lost(Some(found))
                if found.state.is_pending() && found.call.kind == expected.kind =>
            {
                Err(RuntimeError::StaleDigest {
                    call_id: call_id.to_owned(),
                })
            }
            Decided::Lost(found) => self
                .not_pending(call_id, found)
                .await
                .map(Verdict::AlreadySettled),
        }
    }

    /// Claims the calls whose runtime died (their lease expired) among the
    /// tools this runtime has.
    pub(crate) async fn recover_expired(
        &self,
        tool_ids: &[String],
    ) -> Result<Vec<(StoredCall, Lease)>, StoreError> {
        let asked = Instant::now();
        let claimed = self
            .store
            .recover_expired(&self.owner, self.claimed_for(), tool_ids)
            .await?;
        Ok(claimed
            .into_iter()
            .map(|stored| {
                let lease = self.lease_of(&stored, asked);
                (stored, lease)
            })
            .collect())
    }

    /// Claims one pending call of `kind` among the tools this runtime has.
    pub(crate) async fn claim_next(
        &self,
        kind: PendingKind,
        tool_ids: &[String],
    ) -> Result<Option<(StoredCall, Lease)>, StoreError> {
        let asked = Instant::now();
        let claimed = self
            .store
            .claim_next(kind, &self.owner, self.claimed_for(), tool_ids)
            .await?;
        Ok(claimed.map(|stored| {
            let lease = self.lease_of(&stored, asked);
            (stored, lease)
        }))
    }

    /// Counts one call finished (settled or suspended) through this instance
    /// towards the next purge.
    pub(crate) fn note_finished(&self) {
        self.last_purge
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finished_since += 1;
    }

    /// Forgets what the retentions no longer keep (settled calls and audit
    /// entries past their age, the oldest beyond their size bound), when
    /// due: a minute after the last purge, or sooner once an eighth of a
    /// size bound finished (or was appended) through this instance since,
    /// so that a fast stream of decisions cannot outgrow a bound by more
    /// than that between two purges.
    pub(crate) async fn purge_if_due(&self) {
        {
            let mut last = self
                .last_purge
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let batch = |bound: usize| (bound / PURGE_FRACTION).max(1);
            let recent = last.at.is_some_and(|at| at.elapsed() < PURGE_EVERY);
            if recent
                && last.finished_since < batch(self.retention.max_settled)
                && last.appended_since < batch(self.audit_retention.max_entries)
            {
                return;
            }
            *last = PurgeClock {
                at: Some(Instant::now()),
                ..PurgeClock::default()
            };
        }
        match self.store.purge_settled(self.retention).await {
            Ok(0) => {}
            Ok(purged) => tracing::debug!(
                purged,
                "settled calls and finished runs beyond the retention purged"
            ),
            Err(error) => tracing::warn!(%error, "could not purge settled calls and finished runs"),
        }
        match self.audit_log.purge_audit(self.audit_retention).await {
            Ok(0) => {}
            Ok(purged) => tracing::debug!(purged, "audit entries beyond the retention purged"),
            Err(error) => tracing::warn!(%error, "could not purge the audit log"),
        }
    }

    /// Counts an audit entry appended, for [`purge_if_due`](Self::purge_if_due).
    fn note_appended(&self) {
        self.last_purge
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .appended_since += 1;
    }

    /// How long the store keeps a claim: the lease and the takeover grace.
    /// How long after its last renewal another instance may take a claim
    /// over: the lease, and the grace the store adds to it.
    pub(crate) fn takeover_after(&self) -> Duration {
        self.claimed_for()
    }

    fn claimed_for(&self) -> Duration {
        self.lease + takeover_grace(self.lease)
    }

    /// The lease on `stored`, claimed by a request sent at `asked`: held
    /// until a lease after it by this instance's clock (the store's claim
    /// began after the request left).
    fn lease_of(&self, stored: &StoredCall, asked: Instant) -> Lease {
        Lease {
            calls: self.clone(),
            call_id: stored.call.head.call_id.clone(),
            attempt: stored.attempt,
            epoch: stored.epoch,
            shared: Arc::new(LeaseState {
                held_until: Mutex::new(asked + self.lease),
                not_recorded: Mutex::new(None),
            }),
        }
    }
}

impl StoredCalls {
    /// What a decision on `call_id` answers when the call is not pending
    /// for the kind it asked for: the recorded outcome of a settled call, or
    /// why not (what the call waits for is enough to say: each decision that
    /// does not fit it is told what does). A call the store does not have
    /// may have been purged by the size bound: the store remembers that.
    async fn not_pending(
        &self,
        call_id: &str,
        found: Option<StoredCall>,
    ) -> Result<CallOutcome, RuntimeError> {
        match found {
            Some(stored) => settled_outcome(call_id, stored),
            None => Err(match self.store.purged(call_id).await? {
                Some(_) => RuntimeError::Purged {
                    call_id: call_id.to_owned(),
                    limit: self.retention.max_settled,
                },
                None => RuntimeError::UnknownCall {
                    call_id: call_id.to_owned(),
                },
            }),
        }
    }
}

/// The answer to a decision on `stored`, which is not pending for the kind
/// the decision asked for (see [`StoredCalls::not_pending`]).
fn settled_outcome(call_id: &str, stored: StoredCall) -> Result<CallOutcome, RuntimeError> {
    let call_id = call_id.to_owned();
    match stored.state {
        CallState::Settled { outcome, .. } => Ok(outcome.into()),
        CallState::Running { .. } => Err(RuntimeError::Running { call_id }),
        CallState::Pending => Err(match stored.call.kind {
            PendingKind::Suspended => RuntimeError::NotAwaitingApproval { call_id },
            PendingKind::Approval => RuntimeError::NotSuspended { call_id },
            PendingKind::Output => RuntimeError::AwaitingOutput { call_id },
            // A background task waits for a runtime, not for a decision.
            PendingKind::Task => RuntimeError::Running { call_id },
        }),
    }
}

/// The claim of one instance on one running call, under a fencing token:
/// renewed while the call runs, ended by [`finish`](Self::finish). Clones
/// share it.
#[derive(Clone)]
pub(crate) struct Lease {
    calls: StoredCalls,
    call_id: String,
    attempt: u32,
    epoch: u64,
    shared: Arc<LeaseState>,
}

/// What the clones of a lease share.
struct LeaseState {
    /// When this instance stops holding the claim, by its own monotonic
    /// clock, unless a renewal moves it.
    held_until: Mutex<Instant>,
    /// Why the call's outcome is not recorded, once that is known.
    not_recorded: Mutex<Option<NotRecorded>>,
}

/// Why a claim ended before its call did: the call was stopped here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseLost {
    /// The store answered that another claim replaced this one.
    TakenOver,
    /// The lease ran out by this instance's clock before a renewal reached
    /// the store.
    Expired,
}

/// Why the outcome of an execution is not (or not yet) what the store records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotRecorded {
    /// The claim ended before the call did; the execution was stopped.
    Lost(LeaseLost),
    /// The store answered that another instance took the call over before
    /// this one's outcome reached it.
    Superseded,
    /// The store has not taken the outcome yet; this instance goes on
    /// offering it in the background.
    Pending,
    /// The commit of a transactional call failed on its way: whether it
    /// happened, the store says (if not, the call is recovered and runs
    /// again, its work having been rolled back).
    CommitUnknown,
}

impl NotRecorded {
    /// What a decider on `call_id` is answered.
    pub(crate) fn error(&self, call_id: impl Into<String>) -> RuntimeError {
        RuntimeError::NotRecorded {
            call_id: call_id.into(),
            reason: self.reason().to_owned(),
        }
    }

    /// The reason, as [`RuntimeError::NotRecorded`] says it.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            NotRecorded::Lost(LeaseLost::TakenOver) => {
                "its claim was taken over by another instance while it ran here, so it was stopped here; the store records the other instance's outcome"
            }
            NotRecorded::Lost(LeaseLost::Expired) => {
                "this instance could not renew its claim before the lease ran out, so the call was stopped here; once its claim may be taken over, this instance recovers it (as a worker or Runtime::recover would): it settles it as interrupted, or runs it again where that is allowed"
            }
            NotRecorded::Superseded => {
                "another instance took the call over before this one's outcome reached the store; the store records the other instance's outcome"
            }
            NotRecorded::Pending => {
                "the store could not be reached to record it; this instance keeps offering it in the background"
            }
            NotRecorded::CommitUnknown => {
                "the commit of its transaction failed on its way, so whether it happened is for the store to say; if it did not, recovery runs the call again (its work was rolled back)"
            }
        }
    }
}

impl Lease {
    /// Which run of the call this is (1 for the first).
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// This claim as the run after one that was lost without the store
    /// seeing it (a `before_run` check said so): the lost run counts as an
    /// attempt, as a recovery's new claim would count it.
    pub(crate) fn after_lost_run(&self) -> Lease {
        Lease {
            calls: self.calls.clone(),
            call_id: self.call_id.clone(),
            attempt: self.attempt.saturating_add(1),
            epoch: self.epoch,
            shared: Arc::clone(&self.shared),
        }
    }

    /// The call this lease is on.
    pub(crate) fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The fencing token of the claim.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    fn held_until(&self) -> Instant {
        *self
            .shared
            .held_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Why the call's outcome is not what the store records, if it is not.
    pub(crate) fn not_recorded(&self) -> Option<NotRecorded> {
        self.shared
            .not_recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Notes that this execution's outcome is not recorded, and why.
    pub(crate) fn mark_not_recorded(&self, why: NotRecorded) {
        *self
            .shared
            .not_recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(why);
    }

    /// Runs `work` while renewing the lease every third of its length.
    /// `work` is dropped (and `abort` fired) when the claim ends first: the
    /// store says another claim replaced it, or the lease runs out by this
    /// instance's clock because no renewal reached the store, before the
    /// store lets anyone else take the call over (see [`takeover_grace`]);
    /// a process paused past its lease stops the call when it wakes, before
    /// the tool is polled again. A renewal in flight does not hold `work` up.
    ///
    /// `work` comes pinned by the caller: an async fn that takes a future by
    /// value keeps it twice in its state (the argument and the pinned local),
    /// and this one sits in every stored call's future.
    pub(crate) async fn hold<F: Future>(
        &self,
        mut work: std::pin::Pin<&mut F>,
        abort: &AbortSignal,
    ) -> Result<F::Output, LeaseLost> {
        let calls = &self.calls;
        let period = (calls.lease / 3).max(Duration::from_millis(1));
        if Instant::now() + period >= self.held_until() {
            // A claim that came back late, with less than a renewal period
            // of its lease left (or none): nothing ran yet, so it is
            // confirmed before the tool starts.
            self.reclaim().await?;
        }
        let mut next_renewal = Instant::now() + period;
        let mut renewal: Option<(Instant, StoreFuture<'_, bool>)> = None;
        loop {
            let held_until = tokio::time::Instant::from_std(self.held_until());
            let renewing = renewal.is_some();
            // Biased, the deadline first: a process thawed after its lease
            // ran out stops the call without polling the tool again.
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(held_until) => {
                    tracing::error!(call_id = %self.call_id, "the lease of a running call ran out before it could be renewed; stopping the call here");
                    abort.abort();
                    return Err(LeaseLost::Expired);
                }
                output = work.as_mut() => return Ok(output),
                () = tokio::time::sleep_until(next_renewal.into()), if !renewing => {
                    let renew = calls.store.renew(&self.call_id, self.epoch, calls.claimed_for());
                    renewal = Some((Instant::now(), renew));
                }
                renewed = renewal_of(&mut renewal), if renewing => {
                    let Some((sent, _)) = renewal.take() else { continue };
                    match renewed {
                        Ok(true) => {
                            *self.shared.held_until.lock().unwrap_or_else(PoisonError::into_inner) = sent + calls.lease;
                            next_renewal = Instant::now() + period;
                        }
                        Ok(false) => {
                            tracing::error!(call_id = %self.call_id, "the claim of a running call was taken over by another instance; stopping the call here");
                            abort.abort();
                            return Err(LeaseLost::TakenOver);
                        }
                        Err(error) => {
                            tracing::warn!(%error, call_id = %self.call_id, "could not renew the lease of a running call; trying again");
                            next_renewal = Instant::now() + (period / 4).max(Duration::from_millis(1));
                        }
                    }
                }
            }
        }
    }

    /// Renews a claim whose lease ran out (or nearly) by this instance's
    /// clock before its call started (a store slow to answer the claim,
    /// under load):
    /// nothing ran, so rather than leave the claim to an outside recovery,
    /// this instance asks the store (again while it fails) and starts the
    /// call once the store confirms the claim is still this one; taken
    /// over meanwhile, it is lost.
    async fn reclaim(&self) -> Result<(), LeaseLost> {
        let calls = &self.calls;
        let mut backoff = Duration::from_millis(10);
        loop {
            let sent = Instant::now();
            match calls
                .store
                .renew(&self.call_id, self.epoch, calls.claimed_for())
                .await
            {
                Ok(true) => {
                    tracing::warn!(call_id = %self.call_id, "the claim of a call came back with (nearly) none of its lease left, before the call started; renewed, the call runs here");
                    *self
                        .shared
                        .held_until
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = sent + calls.lease;
                    return Ok(());
                }
                Ok(false) => {
                    tracing::warn!(call_id = %self.call_id, "the claim of a call was taken over before the call started here");
                    return Err(LeaseLost::TakenOver);
                }
                Err(error) => {
                    tracing::warn!(%error, call_id = %self.call_id, "could not renew a claim whose lease ran out before its call started; trying again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(calls.lease);
                }
            }
        }
    }

    /// Records how the call ended, for the current claim only; a
    /// transactional call's `transaction` commits with it when the call
    /// completed or suspended (and is rolled back otherwise). `Some` when
    /// the store recorded another outcome than `settlement` (a failure: the
    /// transaction's work could not be committed).
    pub(crate) async fn finish(
        &self,
        settlement: Settlement,
        transaction: Option<Box<dyn StoreTransaction>>,
        notify: impl Fn(&Settlement) -> Vec<Notification>,
    ) -> Result<Option<RecordedOutcome>, NotRecorded> {
        let commits = matches!(
            &settlement,
            Settlement::Suspended { .. } | Settlement::Settled(RecordedOutcome::Completed { .. })
        );
        // Not committed (the call failed or was aborted): dropped, rolled back.
        let Some(transaction) = transaction.filter(|_| commits) else {
            let notifications = notify(&settlement);
            return self
                .finish_plain(settlement, notifications)
                .await
                .map(|()| None);
        };
        let result = match transaction
            .commit(
                self.call_id.clone(),
                self.epoch,
                settlement.clone(),
                notify(&settlement),
            )
            .await
        {
            Ok(Committed::Yes) => Ok(None),
            Ok(Committed::Superseded) => Err(NotRecorded::Superseded),
            Ok(Committed::Refused(reason)) => {
                tracing::error!(call_id = %self.call_id, reason, "the work of a transactional call was not committed; the call fails");
                let error = tool_core::ModelError::new(
                    tool_core::ErrorKind::Execution,
                    format!("The call's database work was not committed: {reason}."),
                );
                let failed = RecordedOutcome::Failed {
                    kind: error.kind(),
                    error: error.to_json(),
                };
                let settlement = Settlement::Settled(failed.clone());
                let notifications = notify(&settlement);
                return self
                    .finish_plain(settlement, notifications)
                    .await
                    .map(|()| Some(failed));
            }
            Err(error) => {
                tracing::error!(%error, call_id = %self.call_id, "the commit of a transactional call failed on its way");
                Err(NotRecorded::CommitUnknown)
            }
        };
        if let Err(why) = &result {
            self.mark_not_recorded(why.clone());
        }
        result
    }

    /// Records `settlement` alone. A store that fails is asked again (with
    /// backoff, in a task of its own, for as long as the process lives)
    /// until it takes the settlement or says another instance took the call
    /// over; this waits for that at most one lease, then answers
    /// [`NotRecorded::Pending`] while the offering goes on. A claim whose
    /// lease ran out is still recorded if nobody took the call.
    async fn finish_plain(
        &self,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> Result<(), NotRecorded> {
        let result = match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let lease = self.clone();
                let offering =
                    handle.spawn(async move { lease.offer(settlement, notifications).await });
                match tokio::time::timeout(self.calls.lease, offering).await {
                    Ok(Ok(result)) => result,
                    Ok(Err(_cancelled)) => Err(NotRecorded::Pending),
                    Err(_elapsed) => {
                        tracing::warn!(call_id = %self.call_id, "the outcome of a call is not recorded yet; offering it again in the background");
                        Err(NotRecorded::Pending)
                    }
                }
            }
            // No tokio runtime to retry on (a memory store used without
            // one): one try.
            Err(_) => self.offer_once(settlement, notifications).await,
        };
        if let Err(why) = &result {
            self.mark_not_recorded(why.clone());
        }
        result
    }

    /// Offers `settlement` until the store takes it or refuses it: again
    /// after a backoff, or as soon as the store answers again, so that
    /// nobody takes the call over meanwhile (once its lease ran out).
    async fn offer(
        &self,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> Result<(), NotRecorded> {
        let mut pause = RECORD_RETRY_FIRST;
        let mut waiting: Option<Waiting> = None;
        loop {
            match self
                .calls
                .store
                .finish_notifying(
                    &self.call_id,
                    self.epoch,
                    settlement.clone(),
                    notifications.clone(),
                )
                .await
            {
                Ok(finished) => return self.finished(finished).await,
                Err(error) => {
                    tracing::warn!(%error, call_id = %self.call_id, retry_in_ms = pause.as_millis(), "could not record the outcome of a call; trying again");
                }
            }
            waiting
                .get_or_insert_with(|| self.calls.wait_for_store(&self.call_id))
                .pause(pause)
                .await;
            pause = (pause * 2).min(RECORD_RETRY_MAX);
        }
    }

    async fn offer_once(
        &self,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> Result<(), NotRecorded> {
        match self
            .calls
            .store
            .finish_notifying(&self.call_id, self.epoch, settlement, notifications)
            .await
        {
            Ok(finished) => self.finished(finished).await,
            Err(error) => {
                tracing::error!(%error, call_id = %self.call_id, "could not record the outcome of a call");
                Err(NotRecorded::Pending)
            }
        }
    }

    async fn finished(&self, finished: bool) -> Result<(), NotRecorded> {
        if !finished {
            tracing::error!(call_id = %self.call_id, "the call was taken over by another instance; its outcome here is not recorded");
            return Err(NotRecorded::Superseded);
        }
        self.calls.note_finished();
        self.calls.purge_if_due().await;
        Ok(())
    }
}

/// A new call the store did not take: its last error, after how many tries
/// over how long (the runtime's insert budget, when it ran out).
#[derive(Debug)]
pub(crate) struct NotStored {
    error: StoreError,
    tries: u32,
    over: Duration,
}

impl std::fmt::Display for NotStored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.error)?;
        if self.tries > 1 {
            write!(
                f,
                " (tried {} times over {} ms)",
                self.tries,
                self.over.as_millis()
            )?;
        }
        Ok(())
    }
}

/// Whether `stored` is the call `sent` was, as decisions since may have
/// changed it: an approval with edits changes its input, a suspension its
/// kind and payload. The moment it was asked (to the millisecond), with
/// the rest, tells it from another call given the same id.
fn inserted_as(stored: &PendingCall, sent: &PendingCall) -> bool {
    let unchanged = PendingCall {
        input: sent.input.clone(),
        kind: sent.kind,
        payload: sent.payload.clone(),
        ..stored.clone()
    };
    unchanged == *sent
}

/// The answer of the renewal in flight (never ready when there is none).
async fn renewal_of(
    renewal: &mut Option<(Instant, StoreFuture<'_, bool>)>,
) -> Result<bool, StoreError> {
    match renewal {
        Some((_, renew)) => renew.as_mut().await,
        None => std::future::pending().await,
    }
}
