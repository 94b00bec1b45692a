//! Pending calls in memory: lost when the process ends.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use super::{PendingCall, PendingKind, PendingStore, StoreError};

/// A [`PendingStore`] in memory, the default when no store is configured.
///
/// ```
/// use tool_runtime::{MemoryStore, Runtime};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let runtime = Runtime::builder().store(MemoryStore::new()).build().unwrap();
/// assert!(runtime.pending().await.unwrap().is_empty());
/// # });
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    calls: Mutex<BTreeMap<String, PendingCall>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, PendingCall>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl PendingStore for MemoryStore {
    async fn insert(&self, call: PendingCall) -> Result<(), StoreError> {
        let mut calls = self.calls();
        if calls.contains_key(&call.call_id) {
            return Err(StoreError::Duplicate {
                call_id: call.call_id,
            });
        }
        calls.insert(call.call_id.clone(), call);
        Ok(())
    }

    async fn take(
        &self,
        call_id: &str,
        kind: PendingKind,
    ) -> Result<Option<PendingCall>, StoreError> {
        let mut calls = self.calls();
        match calls.get(call_id) {
            Some(call) if call.kind == kind => Ok(calls.remove(call_id)),
            _ => Ok(None),
        }
    }

    async fn get(&self, call_id: &str) -> Result<Option<PendingCall>, StoreError> {
        Ok(self.calls().get(call_id).cloned())
    }

    async fn list(&self) -> Result<Vec<PendingCall>, StoreError> {
        Ok(self.calls().values().cloned().collect())
    }
}
