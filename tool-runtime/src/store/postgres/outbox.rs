//! The outbox in PostgreSQL (table `tool_runtime_outbox`, schema 11):
//! notifications written in the transaction of the change they report,
//! and their delivery.

use std::time::Duration;

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::noted::NotedColumns;
use super::{Failure, PostgresStore, millis};
use crate::store::{
    Delivery, DeliveryState, Noted, Notification, NotificationKind, Outbox, OutboxEntry,
    OutboxQuery, Retention, StoreError,
};

/// The columns an [`OutboxEntry`] is read from ([`PostgresStore::entry`]).
const ENTRY_COLUMNS: &str = "seq, id, at_ms, call_id, tool_id, kind, data, state, owner, \
     lease_expires_at, attempts, epoch, next_at, delivered_to, last_error, settled_at";

/// The database's clock in milliseconds since the Unix epoch.
const NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

impl PostgresStore {
    /// Writes `noted` into the outbox on `client`, inside the transaction
    /// of the change the notifications report: one statement for all.
    pub(super) async fn note(
        &self,
        client: &impl GenericClient,
        noted: &Noted,
    ) -> Result<(), Failure> {
        let Some(columns) = NotedColumns::of(noted) else {
            return Ok(());
        };
        let sql = format!("WITH {} SELECT 1", columns.cte(1, ""));
        let statement = client.prepare_cached(&sql).await?;
        client.execute(&statement, &columns.params()).await?;
        Ok(())
    }

    /// One outbox row as an entry.
    fn entry(&self, row: &Row) -> Result<OutboxEntry, Failure> {
        let seq: i64 = row.try_get(0)?;
        let corrupt = |reason: String| {
            Failure::Store(StoreError::Io {
                location: self.location.to_string(),
                reason: format!("outbox entry {seq} does not read: {reason}"),
                source: None,
            })
        };
        let kind: String = row.try_get(5)?;
        let kind = NotificationKind::from_name(&kind)
            .ok_or_else(|| corrupt(format!("unknown kind {kind:?}")))?;
        let data: String = row.try_get(6)?;
        let data = serde_json::from_str(&data).map_err(|e| corrupt(e.to_string()))?;
        let settled_at = from_sql(row.try_get::<_, Option<i64>>(15)?.unwrap_or_default());
        let state: String = row.try_get(7)?;
        let state = match state.as_str() {
            "waiting" => DeliveryState::Waiting,
            "sending" => DeliveryState::Sending {
                owner: row.try_get::<_, Option<String>>(8)?.unwrap_or_default(),
                lease_expires_at_ms: from_sql(
                    row.try_get::<_, Option<i64>>(9)?.unwrap_or_default(),
                ),
            },
            "delivered" => DeliveryState::Delivered { at_ms: settled_at },
            "dead" => DeliveryState::Dead { at_ms: settled_at },
            other => return Err(corrupt(format!("unknown state {other:?}"))),
        };
        let delivered_to: String = row.try_get(13)?;
        let mut notification = Notification::new(
            kind,
            row.try_get::<_, String>(3)?,
            row.try_get::<_, String>(4)?,
            data,
        );
        notification.id = row.try_get(1)?;
        notification.seq = from_sql(seq);
        notification.at_ms = from_sql(row.try_get(2)?);
        let mut entry = OutboxEntry::waiting(notification);
        entry.state = state;
        entry.attempts = u32::try_from(row.try_get::<_, i32>(10)?).unwrap_or_default();
        entry.epoch = from_sql(row.try_get(11)?);
        entry.next_at_ms = from_sql(row.try_get(12)?);
        entry.delivered_to =
            serde_json::from_str(&delivered_to).map_err(|e| corrupt(e.to_string()))?;
        entry.last_error = row.try_get(14)?;
        Ok(entry)
    }

    fn entries(&self, rows: &[Row]) -> Result<Vec<OutboxEntry>, Failure> {
        rows.iter().map(|row| self.entry(row)).collect()
    }

    async fn try_claim_notifications(
        &self,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, Failure> {
        let client = self.pool.get().await?;
        // SKIP LOCKED: concurrent claimers take different notifications; a
        // later notification of a call whose earlier one is unsettled (or
        // being claimed) is not due.
        let statement = client
            .prepare_cached(&format!(
                "UPDATE tool_runtime_outbox SET state = 'sending', owner = $1,
                     lease_expires_at = {NOW_MS} + $2::bigint,
                     attempts = attempts + 1, epoch = epoch + 1
                 WHERE seq IN (
                     SELECT seq FROM tool_runtime_outbox AS o
                     WHERE state IN ('waiting', 'sending')
                       AND ((state = 'waiting' AND next_at <= {NOW_MS})
                         OR (state = 'sending' AND lease_expires_at <= {NOW_MS}))
                       AND NOT EXISTS (SELECT 1 FROM tool_runtime_outbox AS e
                           WHERE e.call_id = o.call_id AND e.seq < o.seq
                             AND e.state IN ('waiting', 'sending'))
                     ORDER BY seq LIMIT $3
                     FOR UPDATE SKIP LOCKED)
                 RETURNING {ENTRY_COLUMNS}"
            ))
            .await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(&statement, &[&owner, &millis(lease), &limit])
            .await?;
        let mut claimed = self.entries(&rows)?;
        claimed.sort_by_key(|entry| entry.notification.seq);
        Ok(claimed)
    }

    async fn try_settle_notification(
        &self,
        seq: u64,
        epoch: u64,
        delivery: &Delivery,
    ) -> Result<bool, Failure> {
        let row = delivery.row();
        let (state, error) = (row.state, row.error);
        let next_at = row.next_at_ms.map(to_sql);
        let delivered_to = row.delivered_to;
        let delivered_to = serde_json::to_string(delivered_to).unwrap_or_else(|_| "[]".into());
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached(&format!(
                "UPDATE tool_runtime_outbox SET state = $3, owner = NULL, lease_expires_at = NULL,
                     next_at = COALESCE($4, next_at), delivered_to = $5,
                     last_error = COALESCE($6, last_error),
                     settled_at = CASE WHEN $3 = 'waiting' THEN NULL ELSE {NOW_MS} END
                 WHERE seq = $1 AND epoch = $2 AND state = 'sending'"
            ))
            .await?;
        let changed = client
            .execute(
                &statement,
                &[
                    &to_sql(seq),
                    &to_sql(epoch),
                    &state,
                    &next_at,
                    &delivered_to,
                    &error,
                ],
            )
            .await?;
        Ok(changed == 1)
    }

    async fn try_outbox(&self, query: &OutboxQuery) -> Result<Vec<OutboxEntry>, Failure> {
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {ENTRY_COLUMNS} FROM tool_runtime_outbox
                 WHERE seq > $1 AND ($2::text IS NULL OR state = $2)
                   AND ($3::text IS NULL OR call_id = $3)
                 ORDER BY seq LIMIT $4"
            ))
            .await?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = client
            .query(
                &statement,
                &[&to_sql(query.after), &query.state, &query.call_id, &limit],
            )
            .await?;
        self.entries(&rows)
    }

    async fn try_redeliver(&self, seq: u64) -> Result<bool, Failure> {
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached(&format!(
                "UPDATE tool_runtime_outbox SET state = 'waiting', next_at = {NOW_MS},
                     attempts = 0, settled_at = NULL
                 WHERE seq = $1 AND state = 'dead'"
            ))
            .await?;
        Ok(client.execute(&statement, &[&to_sql(seq)]).await? == 1)
    }

    async fn try_purge_outbox(&self, retention: Retention) -> Result<usize, Failure> {
        let client = self.pool.get().await?;
        let cutoff = to_sql(retention.cutoff_ms());
        let keep = i64::try_from(retention.max_settled).unwrap_or(i64::MAX);
        // Too old, then beyond the newest `keep` settled (of two settled at
        // once, the smaller seq goes first).
        let statement = client
            .prepare_cached(
                "WITH settled AS (
                     SELECT seq, settled_at,
                         row_number() OVER (ORDER BY settled_at DESC, seq DESC) AS newest
                     FROM tool_runtime_outbox WHERE state IN ('delivered', 'dead'))
                 DELETE FROM tool_runtime_outbox WHERE seq IN (
                     SELECT seq FROM settled WHERE settled_at < $1 OR newest > $2)",
            )
            .await?;
        let purged = client.execute(&statement, &[&cutoff, &keep]).await?;
        Ok(usize::try_from(purged).unwrap_or(usize::MAX))
    }
}

impl Outbox for PostgresStore {
    async fn claim_notifications(
        &self,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        self.try_claim_notifications(owner, lease, limit)
            .await
            .map_err(self.failed("claiming notifications"))
    }

    async fn settle_notification(
        &self,
        seq: u64,
        epoch: u64,
        delivery: Delivery,
    ) -> Result<bool, StoreError> {
        self.try_settle_notification(seq, epoch, &delivery)
            .await
            .map_err(self.failed(format_args!("settling notification {seq}")))
    }

    async fn outbox(&self, query: OutboxQuery) -> Result<Vec<OutboxEntry>, StoreError> {
        self.try_outbox(&query)
            .await
            .map_err(self.failed("reading the outbox"))
    }

    async fn redeliver(&self, seq: u64) -> Result<bool, StoreError> {
        self.try_redeliver(seq)
            .await
            .map_err(self.failed(format_args!("sending notification {seq} again")))
    }

    async fn purge_outbox(&self, retention: Retention) -> Result<usize, StoreError> {
        self.try_purge_outbox(retention)
            .await
            .map_err(self.failed("purging the outbox"))
    }
}

/// A count or time as PostgreSQL's `bigint`.
fn to_sql(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A `bigint` as a count or time (never negative here).
fn from_sql(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}
