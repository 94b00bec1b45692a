//! Exactly-once effects in PostgreSQL for tools on Restate (feature
//! `postgres`).
//!
//! Restate journals a step's result once, but a step whose process died
//! before that runs again: a retry-safe tool's body may run twice. Its
//! effects on a database happen once when they commit in one transaction
//! with the call's idempotency key ([`ToolContext::idempotency_key`], the
//! same on every execution of the call): the key's row is inserted first,
//! so a second execution waits for the first's transaction and then finds
//! the key (and the result the first recorded) instead of doing the
//! effect again; a first execution that died rolled back with its key.
//!
//! [`ToolContext::idempotency_key`]: tool_core::ToolContext::idempotency_key

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::{Client, Transaction};

/// The table of effects done, created by [`Once::begin`] when missing,
/// under an advisory lock ("effects"): processes creating it at once
/// would otherwise collide in PostgreSQL's catalog.
const CREATE: &str = "BEGIN;
SELECT pg_advisory_xact_lock(7310582727386789219);
CREATE TABLE IF NOT EXISTS tool_restate_effects (
    key text PRIMARY KEY,
    result jsonb,
    done_at timestamptz NOT NULL DEFAULT now()
);
COMMIT;";

/// An effect keyed by an idempotency key: either done already (its
/// recorded result), or to do now in the transaction it holds.
///
/// ```no_run
/// use serde_json::{json, Value};
/// use tool_restate::effects::Once;
///
/// # async fn transfer(client: &mut tokio_postgres::Client, key: &str) -> Result<Value, tool_restate::effects::EffectError> {
/// match Once::begin(client, key).await? {
///     Once::Done(result) => Ok(result),
///     Once::Fresh(effect) => {
///         effect.transaction().execute("UPDATE accounts SET balance = balance - 5 WHERE id = 1", &[]).await?;
///         effect.commit(json!({ "moved": 5 })).await
///     }
/// }
/// # }
/// ```
pub enum Once<'a, T> {
    /// An earlier execution did it, with this result.
    Done(T),
    /// Not done: do it in this transaction, then commit it with its result.
    Fresh(Effect<'a>),
}

/// An effect being done: its transaction, which holds its key.
pub struct Effect<'a> {
    transaction: Transaction<'a>,
    key: String,
}

/// A database error of an effect, or a result that does not (de)serialize.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EffectError {
    /// The database refused or failed.
    #[error("the effect's transaction: {0}")]
    Database(#[from] tokio_postgres::Error),
    /// The result recorded is not the type asked for.
    #[error("the effect's recorded result: {0}")]
    Result(#[from] serde_json::Error),
}

impl<'a, T: DeserializeOwned> Once<'a, T> {
    /// Begins the effect `key` on `client`: [`Once::Done`] if a committed
    /// execution did it, else [`Once::Fresh`] holding a transaction in which
    /// the key is taken (an execution at the same time waits for it).
    pub async fn begin(client: &'a mut Client, key: &str) -> Result<Self, EffectError> {
        const TAKE: &str = "INSERT INTO tool_restate_effects (key) VALUES ($1)
             ON CONFLICT (key) DO NOTHING RETURNING key";
        // The table is made the first time it is missing (a catalog
        // lookup; creating it under a lock each time would serialize).
        let exists: bool = client
            .query_one(
                "SELECT to_regclass('tool_restate_effects') IS NOT NULL",
                &[],
            )
            .await?
            .try_get(0)?;
        if !exists {
            client.batch_execute(CREATE).await?;
        }
        let transaction = client.transaction().await?;
        let taken = transaction.query_opt(TAKE, &[&key]).await?;
        if taken.is_some() {
            return Ok(Once::Fresh(Effect {
                transaction,
                key: key.to_owned(),
            }));
        }
        let row = transaction
            .query_one(
                "SELECT result FROM tool_restate_effects WHERE key = $1",
                &[&key],
            )
            .await?;
        let result: Option<serde_json::Value> = row.try_get(0)?;
        transaction.rollback().await?;
        Ok(Once::Done(serde_json::from_value(
            result.unwrap_or(serde_json::Value::Null),
        )?))
    }
}

impl Effect<'_> {
    /// The transaction to do the effect in.
    pub fn transaction(&self) -> &Transaction<'_> {
        &self.transaction
    }

    /// Records `result` with the key and commits the effect: `result` is
    /// what a later execution gets as [`Once::Done`].
    pub async fn commit<T: Serialize>(self, result: T) -> Result<T, EffectError> {
        let recorded = serde_json::to_value(&result)?;
        self.transaction
            .execute(
                "UPDATE tool_restate_effects SET result = $2 WHERE key = $1",
                &[&self.key, &recorded],
            )
            .await?;
        self.transaction.commit().await?;
        Ok(result)
    }
}
