//! A transactional call on SQLite: its tool hands the runtime its database
//! work as closures, which run at the end of the call in the one immediate
//! transaction that records its outcome and checks its fencing token. (The
//! store's one connection cannot be held for a tool's whole run: every
//! renewal would wait for it.)

use std::error::Error;
use std::sync::{Arc, Mutex, PoisonError};

use tool_core::Extensions;

use rusqlite::TransactionBehavior;

use super::super::{
    CallStore, CommitFuture, Committed, Noted, Notification, Settlement, StoreError,
    StoreTransaction, TransactionEnded, storable_notifications,
};
use super::{SqliteFile, SqliteStore};

/// Work a transactional tool deferred to its call's commit.
type DeferredWork =
    Box<dyn FnOnce(&rusqlite::Transaction<'_>) -> Result<(), Box<dyn Error + Send + Sync>> + Send>;

/// A transactional call's transaction on SQLite, the handle its tool finds
/// in its context (`ctx.extension::<SqliteTransaction>()`): the tool
/// [`defer`](Self::defer)s its database work, which runs on tokio's
/// blocking pool when the tool has returned, in one `BEGIN IMMEDIATE`
/// transaction with the call's outcome and the fencing check. Either all
/// of it and the outcome commit, or none of it: deferred work that fails
/// rolls everything back and the call fails with its error; a call whose
/// claim was taken over commits nothing.
///
/// The work runs after the tool returned, so it cannot shape the output;
/// derive what it writes from the input and the call's
/// `idempotency_key()`. Processes sharing the file wait for each other's
/// transactions up to the store's busy timeout (10 s).
///
/// ```
/// use serde_json::{Value, json};
/// use tool_core::{Tool, ToolContext, ToolError};
/// use tool_runtime::store::{SqliteStore, SqliteTransaction};
/// use tool_runtime::Runtime;
///
/// let record = Tool::builder("record-payment")
///     .description("Records a payment")
///     .transactional(true)
///     .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
///         let tx = ctx
///             .extension::<SqliteTransaction>()
///             .ok_or_else(|| ToolError::new("no transaction"))?;
///         let amount = input["amount"].as_i64().unwrap_or(0);
///         let key = ctx.idempotency_key().to_string();
///         tx.defer(move |tx| {
///             tx.execute("INSERT INTO payments (key, amount) VALUES (?1, ?2)", (key, amount))?;
///             Ok::<_, rusqlite::Error>(())
///         })
///         .map_err(|e| ToolError::new(e.to_string()))?;
///         Ok::<_, ToolError>(json!({ "recorded": amount }))
///     })
///     .build()
///     .unwrap();
/// let dir = std::env::temp_dir().join(format!("tool-runtime-doc-tx-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let store = SqliteStore::open(dir.join("calls.sqlite")).unwrap();
/// let runtime = Runtime::builder().tool(record).store(store).build().unwrap();
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
#[derive(Clone)]
pub struct SqliteTransaction {
    /// `None` once the call's transaction ended.
    work: Arc<Mutex<Option<Vec<DeferredWork>>>>,
}

impl std::fmt::Debug for SqliteTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteTransaction").finish_non_exhaustive()
    }
}

impl SqliteTransaction {
    /// Adds `work` to run in the call's transaction when the tool has
    /// returned, after the work deferred before it; an error of `work`
    /// rolls back the whole call's work and fails the call with it.
    /// [`TransactionEnded`] when the tool already returned.
    pub fn defer<E>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<(), E> + Send + 'static,
    ) -> Result<(), TransactionEnded>
    where
        E: Into<Box<dyn Error + Send + Sync>>,
    {
        let mut deferred = self.work.lock().unwrap_or_else(PoisonError::into_inner);
        let deferred = deferred.as_mut().ok_or(TransactionEnded)?;
        deferred.push(Box::new(move |tx| work(tx).map_err(Into::into)));
        Ok(())
    }
}

/// The runtime's side of a [`SqliteTransaction`].
struct SqliteCallTransaction {
    store: SqliteStore,
    handle: SqliteTransaction,
}

impl SqliteStore {
    /// A new transaction for a transactional call ([`CallStore::transaction`]).
    pub(super) fn call_transaction(&self) -> Box<dyn StoreTransaction> {
        Box::new(SqliteCallTransaction {
            store: self.clone(),
            handle: SqliteTransaction {
                work: Arc::new(Mutex::new(Some(Vec::new()))),
            },
        })
    }

    /// Commits a transactional call: its deferred `work` and its settlement,
    /// in one immediate transaction on the blocking pool.
    async fn commit_transactional(
        &self,
        call_id: String,
        epoch: u64,
        settlement: Settlement,
        work: Vec<DeferredWork>,
        notifications: Vec<Notification>,
    ) -> Result<Committed, StoreError> {
        let texts = storable_notifications(&notifications)?;
        let noted = (notifications, texts);
        self.blocking(move |file| {
            file.commit_transactional(&call_id, epoch, settlement, work, &noted)
        })
        .await
    }
}

impl SqliteFile {
    /// Runs a transactional call's deferred `work`, then settles it as
    /// [`finish`](Self::finish) does, in one immediate transaction that
    /// commits only when both succeed.
    fn commit_transactional(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        work: Vec<DeferredWork>,
        noted: &Noted,
    ) -> Result<Committed, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.io(e))?;
        for work in work {
            if let Err(error) = work(&tx) {
                // Dropped uncommitted: rolled back.
                return Ok(Committed::Refused(format!(
                    "its deferred database work failed: {error}"
                )));
            }
        }
        if !self.finish_in(&tx, call_id, epoch, settlement, noted)? {
            return Ok(Committed::Superseded);
        }
        tx.commit().map_err(|e| self.io(e))?;
        Ok(Committed::Yes)
    }
}

impl StoreTransaction for SqliteCallTransaction {
    fn add_handle(&self, extensions: &mut Extensions) {
        extensions.insert(self.handle.clone());
    }

    fn commit(
        self: Box<Self>,
        call_id: String,
        epoch: u64,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> CommitFuture {
        Box::pin(async move {
            let work = self
                .handle
                .work
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .unwrap_or_default();
            if Arc::strong_count(&self.handle.work) > 1 {
                return Ok(Committed::Refused(
                    "a clone of its SqliteTransaction outlived the tool, so its work was not run"
                        .to_owned(),
                ));
            }
            if work.is_empty() {
                let finished = self
                    .store
                    .finish_notifying(&call_id, epoch, settlement, notifications)
                    .await?;
                return Ok(if finished {
                    Committed::Yes
                } else {
                    Committed::Superseded
                });
            }
            self.store
                .commit_transactional(call_id, epoch, settlement, work, notifications)
                .await
        })
    }
}
