//! The runtime's access to its pending store: storing a paused call, the
//! lookup a decision starts with, and the one take that settles who runs it.
//! Every store call of the runtime goes through here, so the store's I/O has
//! one place in the runtime (and one place to become async).

use std::sync::Arc;

use super::{DynPendingStore, PendingCall, PendingKind, StoreError};
use crate::error::RuntimeError;

/// The runtime's pending calls.
#[derive(Clone)]
pub(crate) struct PendingCalls {
    store: Arc<dyn DynPendingStore>,
}

impl PendingCalls {
    pub(crate) fn new(store: Arc<dyn DynPendingStore>) -> Self {
        PendingCalls { store }
    }

    /// Stores a paused call.
    pub(crate) async fn insert(&self, call: PendingCall) -> Result<(), StoreError> {
        self.store.insert(call).await
    }

    /// Every pending call, ordered by call id.
    pub(crate) async fn list(&self) -> Result<Vec<PendingCall>, StoreError> {
        self.store.list().await
    }

    /// The stored call `call_id`, if it is pending for `kind`; otherwise why
    /// not. Nothing changes in the store.
    pub(crate) async fn pending_for(
        &self,
        call_id: &str,
        kind: PendingKind,
    ) -> Result<PendingCall, RuntimeError> {
        let call_id = call_id.to_owned();
        match self.store.get(&call_id).await? {
            Some(pending) if pending.kind == kind => Ok(pending),
            Some(pending) => Err(match pending.kind {
                PendingKind::Suspended => RuntimeError::NotAwaitingApproval { call_id },
                PendingKind::Approval => RuntimeError::NotSuspended { call_id },
            }),
            None => Err(RuntimeError::UnknownCall { call_id }),
        }
    }

    /// Takes a call that was pending for `kind` a moment ago; when another
    /// decision took it first, says so.
    pub(crate) async fn take(
        &self,
        pending: PendingCall,
        kind: PendingKind,
    ) -> Result<PendingCall, RuntimeError> {
        match self.store.take(&pending.call_id, kind).await? {
            Some(taken) => Ok(taken),
            None => Err(RuntimeError::UnknownCall {
                call_id: pending.call_id,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::MemoryStore;

    async fn calls() -> PendingCalls {
        let calls = PendingCalls::new(Arc::new(MemoryStore::new()));
        let approval = PendingCall::new("a1", "t", PendingKind::Approval, json!({}));
        let suspended = PendingCall::new("s1", "t", PendingKind::Suspended, json!({}));
        calls.insert(approval).await.unwrap();
        calls.insert(suspended).await.unwrap();
        calls
    }

    #[tokio::test]
    async fn a_lookup_says_why_a_call_cannot_be_decided_and_changes_nothing() {
        let calls = calls().await;
        assert!(matches!(
            calls.pending_for("s1", PendingKind::Approval).await,
            Err(RuntimeError::NotAwaitingApproval { .. })
        ));
        assert!(matches!(
            calls.pending_for("a1", PendingKind::Suspended).await,
            Err(RuntimeError::NotSuspended { .. })
        ));
        assert!(matches!(
            calls.pending_for("x", PendingKind::Approval).await,
            Err(RuntimeError::UnknownCall { .. })
        ));
        assert_eq!(calls.list().await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn of_two_decisions_that_looked_up_one_call_only_one_takes_it() {
        let calls = calls().await;
        let first = calls
            .pending_for("a1", PendingKind::Approval)
            .await
            .unwrap();
        let second = first.clone();
        let taken = calls.take(first, PendingKind::Approval).await.unwrap();
        assert_eq!(taken.call_id, "a1");
        assert!(matches!(
            calls.take(second, PendingKind::Approval).await,
            Err(RuntimeError::UnknownCall { .. })
        ));
        assert_eq!(calls.list().await.unwrap().len(), 1);
    }
}
