//! The outbox in a SQLite file (table `outbox`, layout 9): notifications
//! written in the transaction of the change they report, and their
//! delivery.

use std::time::{Duration, SystemTime};

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::{SqliteFile, SqliteStore, millis};
use crate::store::{
    Delivery, DeliveryState, Notification, NotificationKind, Outbox, OutboxEntry, OutboxQuery,
    Retention, StoreError,
};

/// The columns an [`OutboxEntry`] is read from, in [`SqliteFile::entry`]'s order.
const ENTRY_COLUMNS: &str = "seq, id, at_ms, call_id, tool_id, kind, data, state, owner,
    lease_expires_at, attempts, epoch, next_at, delivered_to, last_error, settled_at";

impl SqliteFile {
    /// Writes `notifications` (their data as `texts`) into the outbox, in
    /// `tx`: the transaction of the change they report.
    pub(super) fn note(
        &self,
        tx: &Transaction<'_>,
        notifications: &[Notification],
        texts: &[String],
    ) -> Result<(), StoreError> {
        for (notification, data) in notifications.iter().zip(texts) {
            tx.execute(
                "INSERT INTO outbox (id, at_ms, call_id, tool_id, kind, data, state, next_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'waiting', ?2)",
                params![
                    notification.id,
                    to_sql(notification.at_ms),
                    notification.call_id,
                    notification.tool_id,
                    notification.kind.as_str(),
                    data,
                ],
            )
            .map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    /// One outbox row as an entry.
    fn entry(&self, row: &Row<'_>) -> Result<OutboxEntry, StoreError> {
        let raw = (|| -> rusqlite::Result<_> {
            Ok((
                (
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, String>(5)?,
                    row.get::<_, String>(6)?,
                ),
                (
                    row.get::<_, String>(7)?,
                    row.get::<_, Option<String>>(8)?,
                    row.get::<_, Option<i64>>(9)?,
                    row.get::<_, i64>(10)?,
                    row.get::<_, i64>(11)?,
                    row.get::<_, i64>(12)?,
                    row.get::<_, String>(13)?,
                    row.get::<_, Option<String>>(14)?,
                    row.get::<_, Option<i64>>(15)?,
                ),
            ))
        })()
        .map_err(|e| self.io(e))?;
        let ((seq, id, at_ms, call_id, tool_id, kind, data), rest) = raw;
        let (state, owner, lease, attempts, epoch, next_at, delivered_to, last_error, settled_at) =
            rest;
        let corrupt = |reason: String| StoreError::Corrupt {
            path: self.path.clone(),
            reason: format!("outbox entry {seq}: {reason}"),
            source: None,
        };
        let kind = NotificationKind::from_name(&kind)
            .ok_or_else(|| corrupt(format!("unknown kind {kind:?}")))?;
        let data = serde_json::from_str(&data).map_err(|e| corrupt(e.to_string()))?;
        let delivered_to =
            serde_json::from_str(&delivered_to).map_err(|e| corrupt(e.to_string()))?;
        let settled_at_ms = from_sql(settled_at.unwrap_or_default());
        let state = match state.as_str() {
            "waiting" => DeliveryState::Waiting,
            "sending" => DeliveryState::Sending {
                owner: owner.unwrap_or_default(),
                lease_expires_at_ms: from_sql(lease.unwrap_or_default()),
            },
            "delivered" => DeliveryState::Delivered {
                at_ms: settled_at_ms,
            },
            "dead" => DeliveryState::Dead {
                at_ms: settled_at_ms,
            },
            other => return Err(corrupt(format!("unknown state {other:?}"))),
        };
        let mut notification = Notification::new(kind, call_id, tool_id, data);
        notification.id = id;
        notification.seq = from_sql(seq);
        notification.at_ms = from_sql(at_ms);
        let mut entry = OutboxEntry::waiting(notification);
        entry.state = state;
        entry.attempts = u32::try_from(attempts).unwrap_or(u32::MAX);
        entry.epoch = from_sql(epoch);
        entry.next_at_ms = from_sql(next_at);
        entry.delivered_to = delivered_to;
        entry.last_error = last_error;
        Ok(entry)
    }

    /// The entries a statement of [`ENTRY_COLUMNS`] reads.
    fn entries(
        &self,
        tx: &rusqlite::Connection,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut stmt = tx.prepare(sql).map_err(|e| self.io(e))?;
        let mut rows = stmt.query(params).map_err(|e| self.io(e))?;
        let mut entries = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.io(e))? {
            entries.push(self.entry(row)?);
        }
        Ok(entries)
    }

    fn claim_notifications(
        &self,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let now = millis(SystemTime::now());
        let expires = millis(SystemTime::now() + lease);
        self.write(|tx| {
            // Due, and the first unsettled notification of its call.
            let due: Vec<i64> = {
                let mut stmt = tx
                    .prepare(
                        "SELECT seq FROM outbox AS o
                         WHERE state IN ('waiting', 'sending')
                           AND ((state = 'waiting' AND next_at <= ?1)
                             OR (state = 'sending' AND lease_expires_at <= ?1))
                           AND NOT EXISTS (SELECT 1 FROM outbox AS e
                               WHERE e.call_id = o.call_id AND e.seq < o.seq
                                 AND e.state IN ('waiting', 'sending'))
                         ORDER BY seq LIMIT ?2",
                    )
                    .map_err(|e| self.io(e))?;
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                stmt.query_map(params![now, limit], |row| row.get(0))
                    .map_err(|e| self.io(e))?
                    .collect::<Result<_, _>>()
                    .map_err(|e| self.io(e))?
            };
            let mut claimed = Vec::new();
            for seq in due {
                let sql = format!(
                    "UPDATE outbox SET state = 'sending', owner = ?2, lease_expires_at = ?3,
                         attempts = attempts + 1, epoch = epoch + 1
                     WHERE seq = ?1 RETURNING {ENTRY_COLUMNS}"
                );
                claimed.extend(self.entries(tx, &sql, params![seq, owner, expires])?);
            }
            Ok(claimed)
        })
    }

    fn settle_notification(
        &self,
        seq: u64,
        epoch: u64,
        delivery: &Delivery,
    ) -> Result<bool, StoreError> {
        let now = millis(SystemTime::now());
        let row = delivery.row();
        let (state, error) = (row.state, row.error);
        let next_at = row.next_at_ms.map(to_sql);
        let delivered_to = row.delivered_to;
        let delivered_to = serde_json::to_string(delivered_to).unwrap_or_else(|_| "[]".into());
        let settled_at = (state != "waiting").then_some(now);
        let changed = self
            .conn()
            .execute(
                "UPDATE outbox SET state = ?3, owner = NULL, lease_expires_at = NULL,
                     next_at = COALESCE(?4, next_at), delivered_to = ?5,
                     last_error = COALESCE(?6, last_error), settled_at = ?7
                 WHERE seq = ?1 AND epoch = ?2 AND state = 'sending'",
                params![
                    to_sql(seq),
                    to_sql(epoch),
                    state,
                    next_at,
                    delivered_to,
                    error,
                    settled_at
                ],
            )
            .map_err(|e| self.io(e))?;
        Ok(changed == 1)
    }

    fn outbox(&self, query: &OutboxQuery) -> Result<Vec<OutboxEntry>, StoreError> {
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM outbox
             WHERE seq > ?1 AND (?2 IS NULL OR state = ?2) AND (?3 IS NULL OR call_id = ?3)
             ORDER BY seq LIMIT ?4"
        );
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let conn = self.conn();
        self.entries(
            &conn,
            &sql,
            params![to_sql(query.after), query.state, query.call_id, limit],
        )
    }

    fn redeliver(&self, seq: u64) -> Result<bool, StoreError> {
        let now = millis(SystemTime::now());
        let changed = self
            .conn()
            .execute(
                "UPDATE outbox SET state = 'waiting', next_at = ?2, attempts = 0, settled_at = NULL
                 WHERE seq = ?1 AND state = 'dead'",
                params![to_sql(seq), now],
            )
            .map_err(|e| self.io(e))?;
        Ok(changed == 1)
    }

    fn purge_outbox(&self, retention: Retention) -> Result<usize, StoreError> {
        let cutoff = to_sql(retention.cutoff_ms());
        let keep = i64::try_from(retention.max_settled).unwrap_or(i64::MAX);
        self.write(|tx| {
            let old = tx
                .execute(
                    "DELETE FROM outbox WHERE state IN ('delivered', 'dead') AND settled_at < ?1",
                    params![cutoff],
                )
                .map_err(|e| self.io(e))?;
            // The newest `keep` settled stay; of two settled at once, the
            // smaller seq goes first.
            let beyond = tx
                .query_row(
                    "SELECT settled_at, seq FROM outbox WHERE state IN ('delivered', 'dead')
                     ORDER BY settled_at DESC, seq DESC LIMIT 1 OFFSET ?1",
                    params![keep],
                    |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)),
                )
                .optional()
                .map_err(|e| self.io(e))?;
            let over = match beyond {
                Some((at, seq)) => tx
                    .execute(
                        "DELETE FROM outbox WHERE state IN ('delivered', 'dead')
                         AND (settled_at < ?1 OR (settled_at = ?1 AND seq <= ?2))",
                        params![at, seq],
                    )
                    .map_err(|e| self.io(e))?,
                None => 0,
            };
            Ok(old + over)
        })
    }
}

impl Outbox for SqliteStore {
    async fn claim_notifications(
        &self,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let owner = owner.to_owned();
        self.blocking(move |file| file.claim_notifications(&owner, lease, limit))
            .await
    }

    async fn settle_notification(
        &self,
        seq: u64,
        epoch: u64,
        delivery: Delivery,
    ) -> Result<bool, StoreError> {
        self.blocking(move |file| file.settle_notification(seq, epoch, &delivery))
            .await
    }

    async fn outbox(&self, query: OutboxQuery) -> Result<Vec<OutboxEntry>, StoreError> {
        self.blocking(move |file| file.outbox(&query)).await
    }

    async fn redeliver(&self, seq: u64) -> Result<bool, StoreError> {
        self.blocking(move |file| file.redeliver(seq)).await
    }

    async fn purge_outbox(&self, retention: Retention) -> Result<usize, StoreError> {
        self.blocking(move |file| file.purge_outbox(retention))
            .await
    }
}

/// A count or time as SQLite's integer (which is signed).
fn to_sql(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// SQLite's integer as a count or time (never negative here).
fn from_sql(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}
