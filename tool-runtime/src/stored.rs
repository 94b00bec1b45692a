//! The runtime's access to its store: storing a paused call, the lookup and
//! the one atomic transition a decision makes, the lease a claimed call runs
//! under, and recovery. Every store call of the runtime goes through here,
//! and so does the mapping of a call's state to what a decision answers.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tool_core::AbortSignal;

use crate::error::RuntimeError;
use crate::outcome::CallOutcome;
use crate::store::{
    CallState, CallStore, Decided, PendingCall, PendingKind, RecordedOutcome, Settlement,
    StoreError, StoredCall, TaskSignal, Transition,
};

/// A boxed store future, for the object-safe form of [`CallStore`].
type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// [`CallStore`] in a form that can be a trait object (`Arc<dyn ..>`):
/// what the runtime keeps, for any store it is given.
pub(crate) trait DynCallStore: Send + Sync + 'static {
    fn insert(&self, call: PendingCall) -> StoreFuture<'_, ()>;
    fn decide<'a>(
        &'a self,
        call_id: &'a str,
        kind: PendingKind,
        transition: Transition,
    ) -> StoreFuture<'a, Decided>;
    fn renew<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, bool>;
    fn finish<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        settlement: Settlement,
    ) -> StoreFuture<'a, bool>;
    fn recover_expired<'a>(
        &'a self,
        owner: &'a str,
        lease: Duration,
        tool_ids: &'a [String],
    ) -> StoreFuture<'a, Vec<StoredCall>>;
    fn claim_next<'a>(
        &'a self,
        kind: PendingKind,
        owner: &'a str,
        lease: Duration,
        tool_ids: &'a [String],
    ) -> StoreFuture<'a, Option<StoredCall>>;
    fn purge_settled(&self, age: Duration) -> StoreFuture<'_, usize>;
    fn get<'a>(&'a self, call_id: &'a str) -> StoreFuture<'a, Option<StoredCall>>;
    fn list(&self) -> StoreFuture<'_, Vec<PendingCall>>;
    fn task_signal(&self) -> Option<TaskSignal>;
}

impl<S: CallStore> DynCallStore for S {
    fn insert(&self, call: PendingCall) -> StoreFuture<'_, ()> {
        Box::pin(CallStore::insert(self, call))
    }

    fn decide<'a>(
        &'a self,
        call_id: &'a str,
        kind: PendingKind,
        transition: Transition,
    ) -> StoreFuture<'a, Decided> {
        Box::pin(CallStore::decide(self, call_id, kind, transition))
    }

    fn renew<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, bool> {
        Box::pin(CallStore::renew(self, call_id, owner, lease))
    }

    fn finish<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        settlement: Settlement,
    ) -> StoreFuture<'a, bool> {
        Box::pin(CallStore::finish(self, call_id, owner, settlement))
    }

    fn recover_expired<'a>(
        &'a self,
        owner: &'a str,
        lease: Duration,
        tool_ids: &'a [String],
    ) -> StoreFuture<'a, Vec<StoredCall>> {
        Box::pin(CallStore::recover_expired(self, owner, lease, tool_ids))
    }

    fn claim_next<'a>(
        &'a self,
        kind: PendingKind,
        owner: &'a str,
        lease: Duration,
        tool_ids: &'a [String],
    ) -> StoreFuture<'a, Option<StoredCall>> {
        Box::pin(CallStore::claim_next(self, kind, owner, lease, tool_ids))
    }

    fn purge_settled(&self, age: Duration) -> StoreFuture<'_, usize> {
        Box::pin(CallStore::purge_settled(self, age))
    }

    fn get<'a>(&'a self, call_id: &'a str) -> StoreFuture<'a, Option<StoredCall>> {
        Box::pin(CallStore::get(self, call_id))
    }

    fn list(&self) -> StoreFuture<'_, Vec<PendingCall>> {
        Box::pin(CallStore::list(self))
    }

    fn task_signal(&self) -> Option<TaskSignal> {
        CallStore::task_signal(self)
    }
}

/// How often settled calls beyond the retention are purged, at most.
const PURGE_EVERY: Duration = Duration::from_secs(60);

/// The runtime's stored calls.
#[derive(Clone)]
pub(crate) struct StoredCalls {
    store: Arc<dyn DynCallStore>,
    /// This instance, as the owner of the calls it claims.
    owner: Arc<str>,
    lease: Duration,
    retention: Duration,
    last_purge: Arc<Mutex<Option<Instant>>>,
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
pub(crate) enum Verdict {
    /// It claimed the call to run, under this lease.
    Claimed(StoredCall, Lease),
    /// It settled the call without running it.
    Settled(StoredCall),
    /// Another decision settled the call first: its recorded outcome.
    AlreadySettled(CallOutcome),
}

/// What a decision does, for [`StoredCalls::decide`].
pub(crate) enum Claim {
    /// Run it (with the resume data, for a resume).
    Run(Option<Value>),
    /// Settle it without running.
    Settle(RecordedOutcome),
}

impl StoredCalls {
    pub(crate) fn new(
        store: Arc<dyn DynCallStore>,
        owner: String,
        lease: Duration,
        retention: Duration,
    ) -> Self {
        StoredCalls {
            store,
            owner: owner.into(),
            lease,
            retention,
            last_purge: Arc::default(),
        }
    }

    /// Calls in a fresh memory store, for the components' unit tests.
    #[cfg(test)]
    pub(crate) fn in_memory() -> Self {
        let store: Arc<dyn DynCallStore> = Arc::new(crate::store::MemoryStore::new());
        StoredCalls::new(
            store,
            "test-instance".to_owned(),
            Duration::from_secs(30),
            Duration::from_secs(60),
        )
    }

    /// How long a settled call is kept before it may be purged.
    pub(crate) fn retention(&self) -> Duration {
        self.retention
    }

    /// This instance's id.
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// Every call waiting for approval or resume data ([`Runtime::pending`](crate::Runtime::pending)).
    pub(crate) fn pending(
        &self,
    ) -> impl Future<Output = Result<Vec<PendingCall>, RuntimeError>> + Send + 'static {
        let stored = self.clone();
        async move {
            let mut pending = stored.list().await?;
            pending.retain(|call| call.kind != PendingKind::Task);
            Ok(pending)
        }
    }

    /// The call `call_id` in whatever state ([`Runtime::stored`](crate::Runtime::stored)).
    pub(crate) fn stored(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Option<StoredCall>, RuntimeError>> + Send + 'static {
        let (stored, call_id) = (self.clone(), call_id.to_owned());
        async move { Ok(stored.get(&call_id).await?) }
    }

    /// Stores a paused call.
    pub(crate) async fn insert(&self, call: PendingCall) -> Result<(), StoreError> {
        self.store.insert(call).await
    }

    /// Every pending call, ordered by call id.
    pub(crate) async fn list(&self) -> Result<Vec<PendingCall>, StoreError> {
        self.store.list().await
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

    /// The call `call_id` if it is pending for `kind` or settled; otherwise
    /// why not. Nothing changes in the store.
    pub(crate) async fn lookup(
        &self,
        call_id: &str,
        kind: PendingKind,
    ) -> Result<Lookup, RuntimeError> {
        match self.store.get(call_id).await? {
            Some(stored) if stored.state.is_pending() && stored.call.kind == kind => {
                Ok(Lookup::Pending(stored))
            }
            found => settled_outcome(call_id, found).map(Lookup::Settled),
        }
    }

    /// Makes the decision's transition, atomically: of concurrent decisions
    /// on one call exactly one claims or settles it; the others get its
    /// recorded outcome or are told why not.
    pub(crate) async fn decide(
        &self,
        call_id: &str,
        kind: PendingKind,
        claim: Claim,
    ) -> Result<Verdict, RuntimeError> {
        let transition = match claim {
            Claim::Run(resume_data) => Transition::Run {
                owner: self.owner.to_string(),
                lease: self.lease,
                resume_data,
            },
            Claim::Settle(outcome) => Transition::Settle(outcome),
        };
        match self.store.decide(call_id, kind, transition).await? {
            Decided::Won(stored) if matches!(stored.state, CallState::Running { .. }) => {
                let lease = self.lease_of(&stored);
                Ok(Verdict::Claimed(stored, lease))
            }
            Decided::Won(stored) => Ok(Verdict::Settled(stored)),
            Decided::Lost(found) => settled_outcome(call_id, found).map(Verdict::AlreadySettled),
        }
    }

    /// Claims the calls whose runtime died (their lease expired) among the
    /// tools this runtime has.
    pub(crate) async fn recover_expired(
        &self,
        tool_ids: &[String],
    ) -> Result<Vec<(StoredCall, Lease)>, StoreError> {
        let claimed = self
            .store
            .recover_expired(&self.owner, self.lease, tool_ids)
            .await?;
        Ok(claimed
            .into_iter()
            .map(|stored| {
                let lease = self.lease_of(&stored);
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
        let claimed = self
            .store
            .claim_next(kind, &self.owner, self.lease, tool_ids)
            .await?;
        Ok(claimed.map(|stored| {
            let lease = self.lease_of(&stored);
            (stored, lease)
        }))
    }

    /// Forgets settled calls older than the retention, at most once a minute.
    pub(crate) async fn purge_if_due(&self) {
        {
            let mut last = self
                .last_purge
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < PURGE_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        match self.store.purge_settled(self.retention).await {
            Ok(0) => {}
            Ok(purged) => tracing::debug!(
                purged,
                "settled calls and finished runs beyond the retention purged"
            ),
            Err(error) => tracing::warn!(%error, "could not purge settled calls and finished runs"),
        }
    }

    fn lease_of(&self, stored: &StoredCall) -> Lease {
        Lease {
            calls: self.clone(),
            call_id: stored.call.call_id.clone(),
            attempt: stored.attempt,
        }
    }
}

/// What a decision on `call_id` answers when the call is not pending for
/// the kind it asked for: the recorded outcome of a settled call, or why not.
fn settled_outcome(call_id: &str, found: Option<StoredCall>) -> Result<CallOutcome, RuntimeError> {
    let call_id = call_id.to_owned();
    let Some(stored) = found else {
        return Err(RuntimeError::UnknownCall { call_id });
    };
    match stored.state {
        CallState::Settled { outcome, .. } => Ok(outcome.into()),
        CallState::Running { .. } => Err(RuntimeError::Running { call_id }),
        CallState::Pending => Err(match stored.call.kind {
            PendingKind::Suspended => RuntimeError::NotAwaitingApproval { call_id },
            PendingKind::Approval => RuntimeError::NotSuspended { call_id },
            // A background task waits for a runtime, not for a decision.
            PendingKind::Task => RuntimeError::Running { call_id },
        }),
    }
}

/// The claim of one instance on one running call: renewed while the call
/// runs, released by [`finish`](Self::finish).
#[derive(Clone)]
pub(crate) struct Lease {
    calls: StoredCalls,
    call_id: String,
    attempt: u32,
}

impl Lease {
    /// Which run of the call this is (1 for the first).
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Runs `work` while renewing the lease every third of its length. When
    /// the lease is lost (another instance recovered the call, believing this
    /// one dead), `abort` fires, so that the call does not run on two
    /// instances for long.
    ///
    /// `work` comes pinned by the caller: an async fn that takes a future by
    /// value keeps it twice in its state (the argument and the pinned local),
    /// and this one sits in every stored call's future.
    pub(crate) async fn hold<F: Future>(
        &self,
        mut work: std::pin::Pin<&mut F>,
        abort: &AbortSignal,
    ) -> F::Output {
        let period = (self.calls.lease / 3).max(Duration::from_millis(1));
        let mut renewals = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        renewals.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut held = true;
        loop {
            tokio::select! {
                output = work.as_mut() => return output,
                _ = renewals.tick(), if held => {
                    match self.calls.store.renew(&self.call_id, &self.calls.owner, self.calls.lease).await {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::error!(call_id = %self.call_id, "lease of a running call lost to another instance; aborting it here");
                            held = false;
                            abort.abort();
                        }
                        Err(error) => tracing::warn!(%error, call_id = %self.call_id, "could not renew the lease of a running call"),
                    }
                }
            }
        }
    }

    /// Records how the call ended. `false` when the lease was lost and so
    /// the record is another instance's to make.
    pub(crate) async fn finish(&self, settlement: Settlement) -> Result<bool, StoreError> {
        let finished = self
            .calls
            .store
            .finish(&self.call_id, &self.calls.owner, settlement)
            .await?;
        self.calls.purge_if_due().await;
        Ok(finished)
    }
}
