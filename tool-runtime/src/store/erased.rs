//! The store as the runtime keeps it: one store value behind a trait object
//! per job ([`Stores`]). The store traits return `impl Future`, which a
//! trait object cannot; each has an object-safe twin here, written once by
//! [`dyn_twin!`] from one list of its methods.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{
    AuditEntry, AuditLog, AuditQuery, AuditRetention, CallStore, Decided, Delivery, Expected,
    IntoStore, Notification, Outbox, OutboxEntry, OutboxQuery, PendingCall, PendingKind,
    PendingQuery, Retention, Revocation, RuleStore, RunStore, Settlement, StandingRule, StoreError,
    StoreTransaction, StoredCall, StoredRun, TaskSignal, Transition,
};

/// A store trait's future, boxed: what a twin's method returns.
pub(crate) type StoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Writes `$dyn`, the object-safe twin of the store trait `$trait`, and its
/// impl for every `$trait`, from one line a method: an `async fn` boxes the
/// trait's future ([`StoreFuture`]; `'a` is its lifetime, which borrowed
/// arguments name), a plain `fn` forwards.
macro_rules! dyn_twin {
    ($(#[$doc:meta])* $dyn:ident: $trait:ident {
        $(async fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $out:ty;)*
        $(fn $plain:ident(&self) -> $plain_out:ty;)*
    }) => {
        $(#[$doc])*
        pub(crate) trait $dyn: Send + Sync + 'static {
            $(fn $name<'a>(&'a self $(, $arg: $ty)*) -> StoreFuture<'a, $out>;)*
            $(fn $plain(&self) -> $plain_out;)*
        }

        impl<S: $trait> $dyn for S {
            $(fn $name<'a>(&'a self $(, $arg: $ty)*) -> StoreFuture<'a, $out> {
                Box::pin(<S as $trait>::$name(self $(, $arg)*))
            })*
            $(fn $plain(&self) -> $plain_out {
                <S as $trait>::$plain(self)
            })*
        }
    };
}

dyn_twin! {
    /// [`CallStore`] as a trait object: what [`StoredCalls`](crate::claims::StoredCalls) keeps.
    DynCallStore: CallStore {
        async fn insert_notifying(&self, call: PendingCall, notifications: Vec<Notification>) -> ();
        async fn decide_notifying(
            &self, call_id: &'a str, expected: Expected, transition: Transition,
            notifications: Vec<Notification>
        ) -> Decided;
        async fn renew(&self, call_id: &'a str, epoch: u64, lease: Duration) -> bool;
        async fn finish_notifying(
            &self, call_id: &'a str, epoch: u64, settlement: Settlement, notifications: Vec<Notification>
        ) -> bool;
        async fn recover_expired(&self, owner: &'a str, lease: Duration, tool_ids: &'a [String])
            -> Vec<StoredCall>;
        async fn claim_next(
            &self, kind: PendingKind, owner: &'a str, lease: Duration, tool_ids: &'a [String]
        ) -> Option<StoredCall>;
        async fn purge_settled(&self, retention: Retention) -> usize;
        async fn purged(&self, call_id: &'a str) -> Option<SystemTime>;
        async fn get(&self, call_id: &'a str) -> Option<StoredCall>;
        async fn list(&self) -> Vec<StoredCall>;
        async fn list_page(&self, query: PendingQuery) -> Vec<StoredCall>;
        fn task_signal(&self) -> Option<TaskSignal>;
        fn transaction(&self) -> Option<Box<dyn StoreTransaction>>;
    }
}

dyn_twin! {
    /// [`RunStore`] as a trait object: what [`Runs`](crate::Runs) keeps.
    DynRunStore: RunStore {
        async fn load_run(&self, run_id: &'a str) -> Option<StoredRun>;
        async fn save_run(
            &self, run_id: &'a str, expected_revision: Option<u64>, finished: bool, record: Value
        ) -> Option<u64>;
    }
}

dyn_twin! {
    /// [`AuditLog`] as a trait object: what [`StoredCalls`](crate::claims::StoredCalls) keeps.
    DynAuditLog: AuditLog {
        async fn append_audit_notifying(&self, entry: AuditEntry, notifications: Vec<Notification>) -> u64;
        async fn audit(&self, query: AuditQuery) -> Vec<AuditEntry>;
        async fn audit_end(&self) -> u64;
        async fn purge_audit(&self, retention: AuditRetention) -> usize;
    }
}

dyn_twin! {
    /// [`RuleStore`] as a trait object: what [`StandingRules`](crate::StandingRules) keeps.
    DynRuleStore: RuleStore {
        async fn add_rule(&self, rule: StandingRule) -> bool;
        async fn revoke_rule(&self, rule_id: &'a str, revocation: Revocation)
            -> Option<StandingRule>;
        async fn rule(&self, rule_id: &'a str) -> Option<StandingRule>;
        async fn rules_in_force(&self, tool_id: Option<&'a str>, now_ms: u64)
            -> Vec<StandingRule>;
    }
}

dyn_twin! {
    /// [`Outbox`] as a trait object: what the [`Dispatcher`](crate::Dispatcher) keeps.
    DynOutbox: Outbox {
        async fn claim_notifications(&self, owner: &'a str, lease: Duration, limit: usize)
            -> Vec<OutboxEntry>;
        async fn settle_notification(&self, seq: u64, epoch: u64, delivery: Delivery) -> bool;
        async fn outbox(&self, query: OutboxQuery) -> Vec<OutboxEntry>;
        async fn redeliver(&self, seq: u64) -> bool;
        async fn purge_outbox(&self, retention: Retention) -> usize;
    }
}

/// A runtime's store, as each of its jobs: one store value behind all five.
pub(crate) struct Stores {
    pub(crate) calls: Arc<dyn DynCallStore>,
    pub(crate) runs: Arc<dyn DynRunStore>,
    pub(crate) audit: Arc<dyn DynAuditLog>,
    pub(crate) rules: Arc<dyn DynRuleStore>,
    pub(crate) outbox: Arc<dyn DynOutbox>,
}

impl Stores {
    /// `store` as each of its jobs.
    pub(crate) fn of(store: impl IntoStore) -> Self {
        let store = store.into_arc();
        Stores {
            calls: store.clone(),
            runs: store.clone(),
            audit: store.clone(),
            rules: store.clone(),
            outbox: store,
        }
    }
}
