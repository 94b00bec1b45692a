//! A transactional call on PostgreSQL: its tool's work runs in a pooled
//! connection's open transaction (from a pool of its own), and the runtime
//! commits it with the call's settlement and the fencing check, in the same
//! transaction.

use std::sync::Arc;

use deadpool_postgres::Object;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use tool_core::Extensions;

use super::super::{
    CallStore, CommitFuture, Committed, Notification, Settlement, StoreError, StoreTransaction,
    TransactionEnded, storable_notifications,
};
use super::{Failure, PostgresStore};

/// A transactional call's transaction on PostgreSQL, the handle its tool
/// finds in its context (`ctx.extension::<PostgresTransaction>()`): a pooled
/// connection in an open transaction, owned (`Send + 'static`, cheap to
/// clone), used like a `tokio_postgres` client. It has no commit or
/// rollback of its own: the runtime commits it together with the call's
/// outcome, or rolls it back when the call fails, is stopped, or was taken
/// over by another instance. Nothing locks the call's row before the
/// commit.
///
/// A clone kept past the tool's return (moved into a spawned task) makes
/// the call fail instead of commit, and every later use of it is
/// [`TransactionError::Ended`].
///
/// ```no_run
/// use serde_json::{Value, json};
/// use tool_core::{Tool, ToolContext, ToolError};
/// use tool_runtime::store::{PostgresStore, PostgresTransaction};
/// use tool_runtime::Runtime;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let transfer = Tool::builder("transfer")
///     .description("Moves money between two accounts")
///     .transactional(true)
///     .execute(|input: Value, ctx: ToolContext<Value, Value>| async move {
///         let tx = ctx
///             .extension::<PostgresTransaction>()
///             .ok_or_else(|| ToolError::new("no transaction"))?;
///         let amount = input["amount"].as_i64().unwrap_or(0);
///         tx.execute("UPDATE accounts SET balance = balance - $1 WHERE id = 'a'", &[&amount])
///             .await
///             .map_err(|e| ToolError::new(e.to_string()))?;
///         tx.execute("UPDATE accounts SET balance = balance + $1 WHERE id = 'b'", &[&amount])
///             .await
///             .map_err(|e| ToolError::new(e.to_string()))?;
///         Ok::<_, ToolError>(json!({ "moved": amount }))
///     })
///     .build()?;
/// let store = PostgresStore::connect("postgres://app@db.internal/app").await?;
/// let runtime = Runtime::builder().tool(transfer).store(store).build()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresTransaction {
    state: Arc<tokio::sync::Mutex<Connection>>,
    store: PostgresStore,
}

/// Where a call's transaction is.
enum Connection {
    /// Nothing used yet: no connection taken.
    NotBegun,
    /// A pooled connection in an open transaction (boxed: the connection's
    /// handle is large beside the other states).
    Open(Box<Object>),
    /// Committed, rolled back, or refused.
    Ended,
}

impl std::fmt::Debug for PostgresTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTransaction")
            .finish_non_exhaustive()
    }
}

/// Why a statement on a [`PostgresTransaction`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransactionError {
    /// The server's error (or no connection for the transaction within
    /// the pool's wait).
    #[error("{0}")]
    Postgres(StoreError),
    /// The call's transaction has ended: the handle was used after its
    /// tool returned.
    #[error(transparent)]
    Ended(#[from] TransactionEnded),
}

impl From<tokio_postgres::Error> for TransactionError {
    fn from(error: tokio_postgres::Error) -> Self {
        TransactionError::Postgres(StoreError::Io {
            location: "PostgreSQL".to_owned(),
            reason: error.to_string(),
            source: Some(Box::new(error)),
        })
    }
}

impl PostgresTransaction {
    /// The open transaction's connection, begun on first use.
    async fn open(&self) -> Result<tokio::sync::MappedMutexGuard<'_, Object>, TransactionError> {
        let mut state = self.state.lock().await;
        if let Connection::NotBegun = &*state {
            let client = self.store.transactions.get().await.map_err(|e| {
                TransactionError::Postgres(self
                    .store
                    .failed("taking a connection for a transactional call")(
                    Failure::Pool(e)
                ))
            })?;
            client.batch_execute("BEGIN").await?;
            *state = Connection::Open(Box::new(client));
        }
        tokio::sync::MutexGuard::try_map(state, |state| match state {
            Connection::Open(client) => Some(&mut **client),
            _ => None,
        })
        .map_err(|_| TransactionError::Ended(TransactionEnded))
    }

    /// Runs `statement` (with `$1`-style `params`) in the call's
    /// transaction; the number of rows it changed.
    pub async fn execute(
        &self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, TransactionError> {
        Ok(self.open().await?.execute(statement, params).await?)
    }

    /// Runs a query in the call's transaction; its rows.
    pub async fn query(
        &self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, TransactionError> {
        Ok(self.open().await?.query(statement, params).await?)
    }

    /// Runs a query that returns exactly one row.
    pub async fn query_one(
        &self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, TransactionError> {
        Ok(self.open().await?.query_one(statement, params).await?)
    }

    /// Runs a query that returns at most one row.
    pub async fn query_opt(
        &self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, TransactionError> {
        Ok(self.open().await?.query_opt(statement, params).await?)
    }

    /// Runs statements separated by semicolons, without parameters.
    pub async fn batch_execute(&self, statements: &str) -> Result<(), TransactionError> {
        Ok(self.open().await?.batch_execute(statements).await?)
    }
}

/// The runtime's side of a [`PostgresTransaction`].
struct PostgresCallTransaction {
    handle: PostgresTransaction,
}

impl PostgresStore {
    /// A new transaction for a transactional call, which takes its
    /// connection on first use ([`CallStore::transaction`]).
    pub(super) fn call_transaction(&self) -> Box<dyn StoreTransaction> {
        Box::new(PostgresCallTransaction {
            handle: PostgresTransaction {
                state: Arc::new(tokio::sync::Mutex::new(Connection::NotBegun)),
                store: self.clone(),
            },
        })
    }
}

impl StoreTransaction for PostgresCallTransaction {
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
            let handle = &self.handle;
            let store = &handle.store;
            // Taken out first: a clone that outlived the tool finds it ended.
            let state = std::mem::replace(&mut *handle.state.lock().await, Connection::Ended);
            let kept = Arc::strong_count(&handle.state) > 1;
            let client = match state {
                Connection::Open(client) if kept => {
                    discard(*client);
                    return Ok(Committed::Refused(
                        "a clone of its PostgresTransaction outlived the tool, so its work was rolled back"
                            .to_owned(),
                    ));
                }
                Connection::Open(client) => *client,
                Connection::Ended => {
                    return Ok(Committed::Refused("its transaction had ended".to_owned()));
                }
                // The tool did no database work: the settlement alone.
                Connection::NotBegun => {
                    let finished = store
                        .finish_notifying(&call_id, epoch, settlement, notifications)
                        .await?;
                    return Ok(if finished {
                        Committed::Yes
                    } else {
                        Committed::Superseded
                    });
                }
            };
            let committing = async {
                let texts = storable_notifications(&notifications)?;
                let noted = (notifications, texts);
                let finished = store
                    .finish_on_noting(&client, &call_id, epoch, settlement, &noted)
                    .await?;
                client
                    .batch_execute(if finished { "COMMIT" } else { "ROLLBACK" })
                    .await?;
                Ok::<_, Failure>(if finished {
                    Committed::Yes
                } else {
                    Committed::Superseded
                })
            };
            match committing.await {
                Ok(committed) => Ok(committed),
                Err(failure) => {
                    // Whether the commit happened is for the store to say:
                    // the connection is not reused.
                    discard(client);
                    Err(store.failed(format_args!(
                        "committing call {:?}",
                        tool_core::Excerpt::of(&call_id)
                    ))(failure))
                }
            }
        })
    }
}

impl Drop for PostgresCallTransaction {
    /// Not committed (the call failed, was stopped, or its future was
    /// dropped): the connection leaves the pool and closes, which rolls
    /// the transaction back on the server; a clone finds it ended.
    fn drop(&mut self) {
        if let Ok(mut state) = self.handle.state.try_lock()
            && let Connection::Open(client) = std::mem::replace(&mut *state, Connection::Ended)
        {
            discard(*client);
        }
    }
}

/// Closes a connection whose transaction must not be reused or committed.
fn discard(client: Object) {
    drop(Object::take(client));
}
