//! The chaos tables (executions, answers, faults, created calls,
//! deliveries of notifications) on PostgreSQL or SQLite, each written over
//! a connection of its own, never through the store; the effects of tool
//! (f) (`chaos_effects`), written only inside the runtime's transactions
//! (for SQLite, in the store's own file); and the reads of the store's own
//! tables (calls, outbox) for the check.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use crate::check::{
    Answer, Created, Data, Delivery, Effect, Exec, Fault, StoreCall, StoreNotification,
};
use crate::common::Store;

/// How long one statement may take before it counts as failed (a server
/// that is down or restarting).
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

const PG_TABLES: &str = "
CREATE TABLE IF NOT EXISTS chaos_executions (
    id text PRIMARY KEY, call_id text NOT NULL, tool text NOT NULL,
    instance text NOT NULL, pid integer NOT NULL, attempt integer NOT NULL,
    started_at timestamptz, ended_at timestamptz, dropped_at timestamptz);
CREATE TABLE IF NOT EXISTS chaos_answers (
    id bigserial PRIMARY KEY, call_id text NOT NULL, instance text NOT NULL,
    verb text NOT NULL, ok text, error text, error_kind text,
    asked_at timestamptz NOT NULL, answered_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS chaos_faults (
    id bigserial PRIMARY KEY, kind text NOT NULL, target text NOT NULL,
    pid integer NOT NULL, at timestamptz NOT NULL, clock text NOT NULL,
    detail text NOT NULL);
CREATE TABLE IF NOT EXISTS chaos_calls (
    call_id text PRIMARY KEY, tool text NOT NULL, instance text NOT NULL,
    answer text);
CREATE TABLE IF NOT EXISTS chaos_effects (
    id bigserial PRIMARY KEY, call_id text NOT NULL, execution text NOT NULL,
    at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS chaos_deliveries (
    id text PRIMARY KEY, notification_id text NOT NULL, kind text NOT NULL,
    call_id text NOT NULL, instance text NOT NULL, pid integer NOT NULL,
    delivered_at timestamptz NOT NULL);";

const PG_DROP: &str = "DROP TABLE IF EXISTS chaos_executions, chaos_answers, chaos_faults, chaos_calls, chaos_effects, chaos_deliveries;";

const LITE_TABLES: &str = "
CREATE TABLE IF NOT EXISTS chaos_executions (
    id TEXT PRIMARY KEY, call_id TEXT NOT NULL, tool TEXT NOT NULL,
    instance TEXT NOT NULL, pid INTEGER NOT NULL, attempt INTEGER NOT NULL,
    started_at TEXT, ended_at TEXT, dropped_at TEXT);
CREATE TABLE IF NOT EXISTS chaos_answers (
    id INTEGER PRIMARY KEY, call_id TEXT NOT NULL, instance TEXT NOT NULL,
    verb TEXT NOT NULL, ok TEXT, error TEXT, error_kind TEXT,
    asked_at TEXT NOT NULL, answered_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chaos_faults (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL,
    pid INTEGER NOT NULL, at TEXT NOT NULL, clock TEXT NOT NULL,
    detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chaos_calls (
    call_id TEXT PRIMARY KEY, tool TEXT NOT NULL, instance TEXT NOT NULL,
    answer TEXT);
CREATE TABLE IF NOT EXISTS chaos_deliveries (
    id TEXT PRIMARY KEY, notification_id TEXT NOT NULL, kind TEXT NOT NULL,
    call_id TEXT NOT NULL, instance TEXT NOT NULL, pid INTEGER NOT NULL,
    delivered_at TEXT NOT NULL);";

const LITE_DROP: &str = "DROP TABLE IF EXISTS chaos_executions; DROP TABLE IF EXISTS chaos_answers;
DROP TABLE IF EXISTS chaos_faults; DROP TABLE IF EXISTS chaos_calls;
DROP TABLE IF EXISTS chaos_deliveries;";

/// The effects of tool (f) on SQLite: in the store's file, where the
/// runtime's transaction is. No unique key on `call_id`: the check must
/// see a duplicate.
const LITE_EFFECTS: &str = "
CREATE TABLE IF NOT EXISTS chaos_effects (
    id INTEGER PRIMARY KEY, call_id TEXT NOT NULL, execution TEXT NOT NULL,
    at TEXT NOT NULL);";

/// The insert of one effect in a SQLite call's transaction (`?1` the call,
/// `?2` the execution).
pub const LITE_EFFECT_INSERT: &str = "INSERT INTO chaos_effects (call_id, execution, at)
     VALUES (?1, ?2, strftime('%Y-%m-%d %H:%M:%f','now'))";

/// The insert of one effect in a PostgreSQL call's transaction.
pub const PG_EFFECT_INSERT: &str = "INSERT INTO chaos_effects (call_id, execution, at)
     VALUES ($1, $2, clock_timestamp())";

/// The columns of the store's outbox the check reads, the same on both
/// stores ([`StoreNotification`]).
const NOTIFICATION_COLUMNS: &str =
    "seq, id, kind, call_id, state, CAST(attempts AS bigint), data, last_error";

/// SQLite's clock, as the chaos tables keep it.
const LITE_NOW: &str = "strftime('%Y-%m-%d %H:%M:%f','now')";

/// A PostgreSQL timestamp as microseconds since the epoch.
fn pg_us(column: &str) -> String {
    format!("(extract(epoch from {column}) * 1000000)::bigint")
}

/// A SQLite text stamp as microseconds since the epoch (millisecond resolution).
fn lite_us(column: &str) -> String {
    format!("CAST(ROUND((julianday({column}) - 2440587.5) * 86400000.0) AS INTEGER) * 1000")
}

/// Seconds since the epoch, for `to_timestamp` and SQLite's `unixepoch`.
#[expect(
    clippy::cast_precision_loss,
    reason = "microseconds of today fit in an f64's 52 bits"
)]
fn seconds(us: i64) -> f64 {
    us as f64 / 1_000_000.0
}

/// One PostgreSQL connection, opened again when it broke.
pub struct PgConn {
    url: String,
    client: tokio::sync::Mutex<Option<Arc<tokio_postgres::Client>>>,
}

impl PgConn {
    fn new(url: &str) -> PgConn {
        PgConn {
            url: url.to_owned(),
            client: tokio::sync::Mutex::new(None),
        }
    }

    async fn client(&self) -> Result<Arc<tokio_postgres::Client>, String> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref()
            && !client.is_closed()
        {
            return Ok(Arc::clone(client));
        }
        *slot = None;
        let (client, connection) =
            tokio::time::timeout(STATEMENT_TIMEOUT, tokio_postgres::connect(&self.url, NoTls))
                .await
                .map_err(|_| "connecting timed out".to_owned())?
                .map_err(|e| format!("connecting: {e}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let client = Arc::new(client);
        *slot = Some(Arc::clone(&client));
        Ok(client)
    }

    async fn forget(&self) {
        *self.client.lock().await = None;
    }

    async fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, String> {
        let client = self.client().await?;
        match tokio::time::timeout(STATEMENT_TIMEOUT, client.execute(sql, params)).await {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => {
                if client.is_closed() {
                    self.forget().await;
                }
                Err(format!("{e}"))
            }
            Err(_) => {
                self.forget().await;
                Err("statement timed out".to_owned())
            }
        }
    }

    async fn batch(&self, sql: &str) -> Result<(), String> {
        let client = self.client().await?;
        client.batch_execute(sql).await.map_err(|e| format!("{e}"))
    }

    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, String> {
        let client = self.client().await?;
        tokio::time::timeout(Duration::from_secs(60), client.query(sql, params))
            .await
            .map_err(|_| "query timed out".to_owned())?
            .map_err(|e| format!("{e}"))
    }
}

/// Where the chaos tables are: a PostgreSQL connection, or a SQLite file.
#[derive(Clone)]
pub enum ChaosDb {
    Pg(Arc<PgConn>),
    Lite(Arc<Mutex<rusqlite::Connection>>),
}

/// Runs `f` on the SQLite connection off the async threads.
async fn lite<T: Send + 'static>(
    conn: &Arc<Mutex<rusqlite::Connection>>,
    f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
) -> Result<T, String> {
    let conn = Arc::clone(conn);
    tokio::task::spawn_blocking(move || {
        let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
        f(&conn).map_err(|e| format!("{e}"))
    })
    .await
    .map_err(|e| format!("{e}"))?
}

fn opt_text(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    row.get(i)
}

impl ChaosDb {
    /// The chaos tables of `store`.
    pub fn open(store: &Store) -> Result<ChaosDb, String> {
        match store {
            Store::Postgres { url } => Ok(ChaosDb::Pg(Arc::new(PgConn::new(url)))),
            Store::Sqlite { chaos, .. } => {
                let conn =
                    rusqlite::Connection::open(chaos).map_err(|e| format!("{chaos}: {e}"))?;
                conn.busy_timeout(Duration::from_secs(30))
                    .map_err(|e| format!("{e}"))?;
                let _: String = conn
                    .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
                    .map_err(|e| format!("{e}"))?;
                Ok(ChaosDb::Lite(Arc::new(Mutex::new(conn))))
            }
        }
    }

    /// Creates the tables, dropping earlier ones when `fresh`; on SQLite
    /// `chaos_effects` in the store's file.
    pub async fn setup(&self, store: &Store, fresh: bool) -> Result<(), String> {
        match (self, store) {
            (ChaosDb::Pg(pg), _) => {
                if fresh {
                    pg.batch(PG_DROP).await?;
                }
                pg.batch(PG_TABLES).await
            }
            (ChaosDb::Lite(conn), Store::Sqlite { path, .. }) => {
                lite(conn, move |c| {
                    if fresh {
                        c.execute_batch(LITE_DROP)?;
                    }
                    c.execute_batch(LITE_TABLES)
                })
                .await?;
                let path = path.clone();
                tokio::task::spawn_blocking(move || {
                    let c = rusqlite::Connection::open(&path)?;
                    c.busy_timeout(Duration::from_secs(30))?;
                    if fresh {
                        c.execute_batch("DROP TABLE IF EXISTS chaos_effects")?;
                    }
                    c.execute_batch(LITE_EFFECTS)
                })
                .await
                .map_err(|e| format!("{e}"))?
                .map_err(|e| format!("chaos_effects in the store's file: {e}"))
            }
            (ChaosDb::Lite(_), Store::Postgres { .. }) => Err("mismatched store".to_owned()),
        }
    }

    /// Records the start of an execution, stamped by the database. Idempotent:
    /// asked again after an error that hid a commit, it keeps the first stamp.
    pub async fn exec_start(&self, e: &ExecStart) -> Result<(), String> {
        match self {
            ChaosDb::Pg(pg) => pg
                .execute(
                    "INSERT INTO chaos_executions (id, call_id, tool, instance, pid, attempt, started_at)
                     VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp())
                     ON CONFLICT (id) DO UPDATE SET started_at = clock_timestamp()
                     WHERE chaos_executions.started_at IS NULL",
                    &[&e.id, &e.call_id, &e.tool, &e.instance, &e.pid, &e.attempt],
                )
                .await
                .map(drop),
            ChaosDb::Lite(conn) => {
                let e = e.clone();
                lite(conn, move |c| {
                    c.execute(
                        &format!(
                            "INSERT INTO chaos_executions (id, call_id, tool, instance, pid, attempt, started_at)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, {LITE_NOW})
                             ON CONFLICT (id) DO UPDATE SET started_at = {LITE_NOW}
                             WHERE chaos_executions.started_at IS NULL"
                        ),
                        rusqlite::params![e.id, e.call_id, e.tool, e.instance, e.pid, e.attempt],
                    )
                })
                .await
                .map(drop)
            }
        }
    }

    /// Records the end of execution `id`, stamped by the database.
    pub async fn exec_end(&self, id: &str) -> Result<(), String> {
        match self {
            ChaosDb::Pg(pg) => pg
                .execute(
                    "UPDATE chaos_executions SET ended_at = clock_timestamp() WHERE id = $1 AND ended_at IS NULL",
                    &[&id],
                )
                .await
                .map(drop),
            ChaosDb::Lite(conn) => {
                let id = id.to_owned();
                lite(conn, move |c| {
                    c.execute(
                        &format!("UPDATE chaos_executions SET ended_at = {LITE_NOW} WHERE id = ?1 AND ended_at IS NULL"),
                        [id],
                    )
                })
                .await
                .map(drop)
            }
        }
    }

    /// Records a delivery of a notification, stamped by the database. No
    /// unique key on the notification: the check must see one delivered
    /// twice.
    pub async fn delivered(&self, d: &DeliveryRec) -> Result<(), String> {
        match self {
            ChaosDb::Pg(pg) => pg
                .execute(
                    "INSERT INTO chaos_deliveries (id, notification_id, kind, call_id, instance, pid, delivered_at)
                     VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp())",
                    &[&d.id, &d.notification_id, &d.kind, &d.call_id, &d.instance, &d.pid],
                )
                .await
                .map(drop),
            ChaosDb::Lite(conn) => {
                let d = d.clone();
                lite(conn, move |c| {
                    c.execute(
                        &format!(
                            "INSERT INTO chaos_deliveries (id, notification_id, kind, call_id, instance, pid, delivered_at)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, {LITE_NOW})"
                        ),
                        rusqlite::params![d.id, d.notification_id, d.kind, d.call_id, d.instance, d.pid],
                    )
                })
                .await
                .map(drop)
            }
        }
    }

    /// Writes one record of the background recorder.
    async fn record(&self, rec: &Rec) -> Result<(), String> {
        match (self, rec) {
            (ChaosDb::Pg(pg), Rec::Dropped(e, at_us)) => pg
                .execute(
                    "INSERT INTO chaos_executions (id, call_id, tool, instance, pid, attempt, dropped_at)
                     VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7))
                     ON CONFLICT (id) DO UPDATE SET dropped_at = to_timestamp($7)",
                    &[&e.id, &e.call_id, &e.tool, &e.instance, &e.pid, &e.attempt, &seconds(*at_us)],
                )
                .await
                .map(drop),
            (ChaosDb::Pg(pg), Rec::Answer(a)) => pg
                .execute(
                    "INSERT INTO chaos_answers (call_id, instance, verb, ok, error, error_kind, asked_at, answered_at)
                     VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7), to_timestamp($8))",
                    &[
                        &a.call_id,
                        &a.instance,
                        &a.verb,
                        &a.ok,
                        &a.error,
                        &a.error_kind,
                        &seconds(a.asked_us),
                        &seconds(a.answered_us),
                    ],
                )
                .await
                .map(drop),
            (ChaosDb::Pg(pg), Rec::Created(c)) => pg
                .execute(
                    "INSERT INTO chaos_calls (call_id, tool, instance, answer) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (call_id) DO UPDATE SET answer = EXCLUDED.answer
                     WHERE EXCLUDED.answer IS NOT NULL",
                    &[&c.call_id, &c.tool, &c.instance, &c.answer],
                )
                .await
                .map(drop),
            (ChaosDb::Lite(conn), rec) => {
                let rec = rec.clone();
                lite(conn, move |c| match rec {
                    Rec::Dropped(e, at_us) => c.execute(
                        "INSERT INTO chaos_executions (id, call_id, tool, instance, pid, attempt, dropped_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, strftime('%Y-%m-%d %H:%M:%f', ?7, 'unixepoch'))
                         ON CONFLICT (id) DO UPDATE SET dropped_at = strftime('%Y-%m-%d %H:%M:%f', ?7, 'unixepoch')",
                        rusqlite::params![e.id, e.call_id, e.tool, e.instance, e.pid, e.attempt, seconds(at_us)],
                    ),
                    Rec::Answer(a) => c.execute(
                        "INSERT INTO chaos_answers (call_id, instance, verb, ok, error, error_kind, asked_at, answered_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, strftime('%Y-%m-%d %H:%M:%f', ?7, 'unixepoch'),
                                 strftime('%Y-%m-%d %H:%M:%f', ?8, 'unixepoch'))",
                        rusqlite::params![
                            a.call_id,
                            a.instance,
                            a.verb,
                            a.ok,
                            a.error,
                            a.error_kind,
                            seconds(a.asked_us),
                            seconds(a.answered_us)
                        ],
                    ),
                    Rec::Created(cr) => c.execute(
                        "INSERT INTO chaos_calls (call_id, tool, instance, answer) VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT (call_id) DO UPDATE SET answer = excluded.answer
                         WHERE excluded.answer IS NOT NULL",
                        rusqlite::params![cr.call_id, cr.tool, cr.instance, cr.answer],
                    ),
                })
                .await
                .map(drop)
            }
        }
    }

    /// Records a fault, stamped by the database; by this process's clock
    /// when the database cannot be reached. Returns the clock used.
    pub async fn fault(&self, kind: &str, target: &str, pid: i32, detail: &str) -> &'static str {
        // A connection the server closed (a restart) fails once: ask again.
        for _ in 0..3 {
            if self.fault_stamped(kind, target, pid, detail).await.is_ok() {
                return "db";
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let at = seconds(crate::common::now_us());
        for _ in 0..600 {
            if self.fault_at(kind, target, pid, detail, at).await.is_ok() {
                return "process";
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        "lost"
    }

    /// Records a fault stamped by the database.
    async fn fault_stamped(
        &self,
        kind: &str,
        target: &str,
        pid: i32,
        detail: &str,
    ) -> Result<(), String> {
        match self {
            ChaosDb::Pg(pg) => pg
                .execute(
                    "INSERT INTO chaos_faults (kind, target, pid, at, clock, detail)
                     VALUES ($1, $2, $3, clock_timestamp(), 'db', $4)",
                    &[&kind, &target, &pid, &detail],
                )
                .await
                .map(drop),
            ChaosDb::Lite(conn) => {
                let (kind, target, detail) =
                    (kind.to_owned(), target.to_owned(), detail.to_owned());
                lite(conn, move |c| {
                    c.execute(
                        &format!(
                            "INSERT INTO chaos_faults (kind, target, pid, at, clock, detail)
                             VALUES (?1, ?2, ?3, {LITE_NOW}, 'db', ?4)"
                        ),
                        rusqlite::params![kind, target, pid, detail],
                    )
                })
                .await
                .map(drop)
            }
        }
    }

    /// Records a fault at `at` (seconds since the epoch) by this process's clock.
    async fn fault_at(
        &self,
        kind: &str,
        target: &str,
        pid: i32,
        detail: &str,
        at: f64,
    ) -> Result<(), String> {
        match self {
            ChaosDb::Pg(pg) => pg
                .execute(
                    "INSERT INTO chaos_faults (kind, target, pid, at, clock, detail)
                     VALUES ($1, $2, $3, to_timestamp($4), 'process', $5)",
                    &[&kind, &target, &pid, &at, &detail],
                )
                .await
                .map(drop),
            ChaosDb::Lite(conn) => {
                let (kind, target, detail) =
                    (kind.to_owned(), target.to_owned(), detail.to_owned());
                lite(conn, move |c| {
                    c.execute(
                        "INSERT INTO chaos_faults (kind, target, pid, at, clock, detail)
                         VALUES (?1, ?2, ?3, strftime('%Y-%m-%d %H:%M:%f', ?4, 'unixepoch'), 'process', ?5)",
                        rusqlite::params![kind, target, pid, at, detail],
                    )
                })
                .await
                .map(drop)
            }
        }
    }

    /// Everything the check reads: the store's calls of run `run` and their
    /// notifications, and the chaos tables. Deliveries too only of the
    /// run's calls: a store used before may hold notifications of an
    /// earlier run's, which this run's dispatchers deliver as well.
    pub async fn load(&self, store: &Store, run: &str) -> Result<Data, String> {
        let prefix = format!("{run}-%");
        match self {
            ChaosDb::Pg(pg) => {
                let calls = pg
                    .query(
                        &format!(
                            "SELECT call_id, tool_id, kind, state, outcome, {} FROM tool_runtime_calls WHERE call_id LIKE $1",
                            pg_us("settled_at")
                        ),
                        &[&prefix],
                    )
                    .await?
                    .iter()
                    .map(|r| StoreCall {
                        call_id: r.get(0),
                        tool: r.get(1),
                        kind: r.get(2),
                        state: r.get(3),
                        outcome: r.get::<_, Option<String>>(4).and_then(|t| serde_json::from_str(&t).ok()),
                        settled_us: r.get(5),
                    })
                    .collect();
                let executions = pg
                    .query(
                        &format!(
                            "SELECT id, call_id, tool, instance, pid::bigint, attempt::bigint, {}, {}, {} FROM chaos_executions",
                            pg_us("started_at"),
                            pg_us("ended_at"),
                            pg_us("dropped_at")
                        ),
                        &[],
                    )
                    .await?
                    .iter()
                    .map(|r| Exec {
                        id: r.get(0),
                        call_id: r.get(1),
                        tool: r.get(2),
                        instance: r.get(3),
                        pid: r.get(4),
                        attempt: r.get(5),
                        start_us: r.get(6),
                        ended_us: r.get(7),
                        dropped_us: r.get(8),
                    })
                    .collect();
                let answers = pg
                    .query(
                        &format!(
                            "SELECT call_id, instance, verb, ok, error, error_kind, {}, {} FROM chaos_answers ORDER BY id",
                            pg_us("asked_at"),
                            pg_us("answered_at")
                        ),
                        &[],
                    )
                    .await?
                    .iter()
                    .map(|r| Answer {
                        call_id: r.get(0),
                        instance: r.get(1),
                        verb: r.get(2),
                        ok: r.get(3),
                        error: r.get(4),
                        error_kind: r.get(5),
                        asked_us: r.get(6),
                        answered_us: r.get(7),
                    })
                    .collect();
                let faults = pg
                    .query(
                        &format!(
                            "SELECT kind, target, pid::bigint, {}, clock FROM chaos_faults ORDER BY at, id",
                            pg_us("at")
                        ),
                        &[],
                    )
                    .await?
                    .iter()
                    .map(|r| Fault {
                        kind: r.get(0),
                        target: r.get(1),
                        pid: r.get(2),
                        at_us: r.get(3),
                        clock: r.get(4),
                    })
                    .collect();
                let created = pg
                    .query(
                        "SELECT call_id, tool, instance, answer FROM chaos_calls",
                        &[],
                    )
                    .await?
                    .iter()
                    .map(|r| Created {
                        call_id: r.get(0),
                        tool: r.get(1),
                        instance: r.get(2),
                        answer: r.get(3),
                    })
                    .collect();
                let effects = pg
                    .query(
                        &format!(
                            "SELECT id, call_id, execution, {} FROM chaos_effects ORDER BY id",
                            pg_us("at")
                        ),
                        &[],
                    )
                    .await?
                    .iter()
                    .map(|r| Effect {
                        id: r.get(0),
                        call_id: r.get(1),
                        execution: r.get(2),
                        at_us: r.get(3),
                    })
                    .collect();
                let notifications = pg
                    .query(
                        &format!("SELECT {NOTIFICATION_COLUMNS} FROM tool_runtime_outbox WHERE call_id LIKE $1 ORDER BY seq"),
                        &[&prefix],
                    )
                    .await?
                    .iter()
                    .map(|r| StoreNotification {
                        seq: r.get(0),
                        id: r.get(1),
                        kind: r.get(2),
                        call_id: r.get(3),
                        state: r.get(4),
                        attempts: r.get(5),
                        data: serde_json::from_str(r.get(6)).unwrap_or(Value::Null),
                        last_error: r.get(7),
                    })
                    .collect();
                let deliveries = pg
                    .query(
                        &format!(
                            "SELECT id, notification_id, kind, call_id, instance, pid::bigint, {} FROM chaos_deliveries
                             WHERE call_id LIKE $1 ORDER BY delivered_at, id",
                            pg_us("delivered_at")
                        ),
                        &[&prefix],
                    )
                    .await?
                    .iter()
                    .map(|r| Delivery {
                        id: r.get(0),
                        notification_id: r.get(1),
                        kind: r.get(2),
                        call_id: r.get(3),
                        instance: r.get(4),
                        pid: r.get(5),
                        at_us: r.get(6),
                    })
                    .collect();
                Ok(Data {
                    calls,
                    executions,
                    answers,
                    faults,
                    created,
                    effects,
                    notifications,
                    deliveries,
                })
            }
            ChaosDb::Lite(conn) => {
                let Store::Sqlite { path, .. } = store else {
                    return Err("a SQLite chaos file with a PostgreSQL store".to_owned());
                };
                let path = path.clone();
                lite(conn, move |c| {
                    c.execute("ATTACH DATABASE ?1 AS store", [&path])?;
                    let calls = c
                        .prepare(
                            "SELECT call_id, tool_id, kind, state, outcome, settled_at * 1000 FROM store.calls WHERE call_id LIKE ?1",
                        )?
                        .query_map([&prefix], |r| {
                            Ok(StoreCall {
                                call_id: r.get(0)?,
                                tool: r.get(1)?,
                                kind: r.get(2)?,
                                state: r.get(3)?,
                                outcome: opt_text(r, 4)?.and_then(|t| serde_json::from_str::<Value>(&t).ok()),
                                settled_us: r.get(5)?,
                            })
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    let effects = c
                        .prepare(&format!(
                            "SELECT id, call_id, execution, {} FROM store.chaos_effects ORDER BY id",
                            lite_us("at")
                        ))?
                        .query_map([], |r| {
                            Ok(Effect {
                                id: r.get(0)?,
                                call_id: r.get(1)?,
                                execution: r.get(2)?,
                                at_us: r.get(3)?,
                            })
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    let notifications = c
                        .prepare(&format!(
                            "SELECT {NOTIFICATION_COLUMNS} FROM store.outbox WHERE call_id LIKE ?1 ORDER BY seq"
                        ))?
                        .query_map([&prefix], |r| {
                            Ok(StoreNotification {
                                seq: r.get(0)?,
                                id: r.get(1)?,
                                kind: r.get(2)?,
                                call_id: r.get(3)?,
                                state: r.get(4)?,
                                attempts: r.get(5)?,
                                data: serde_json::from_str(&r.get::<_, String>(6)?).unwrap_or(Value::Null),
                                last_error: r.get(7)?,
                            })
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    c.execute("DETACH DATABASE store", [])?;
                    let executions = c
                        .prepare(&format!(
                            "SELECT id, call_id, tool, instance, pid, attempt, {}, {}, {} FROM chaos_executions",
                            lite_us("started_at"),
                            lite_us("ended_at"),
                            lite_us("dropped_at")
                        ))?
                        .query_map([], |r| {
                            Ok(Exec {
                                id: r.get(0)?,
                                call_id: r.get(1)?,
                                tool: r.get(2)?,
                                instance: r.get(3)?,
                                pid: r.get(4)?,
                                attempt: r.get(5)?,
                                start_us: r.get(6)?,
                                ended_us: r.get(7)?,
                                dropped_us: r.get(8)?,
                            })
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    let answers = c
                        .prepare(&format!(
                            "SELECT call_id, instance, verb, ok, error, error_kind, {}, {} FROM chaos_answers ORDER BY id",
                            lite_us("asked_at"),
                            lite_us("answered_at")
                        ))?
                        .query_map([], |r| {
                            Ok(Answer {
                                call_id: r.get(0)?,
                                instance: r.get(1)?,
                                verb: r.get(2)?,
                                ok: r.get(3)?,
                                error: r.get(4)?,
                                error_kind: r.get(5)?,
                                asked_us: r.get(6)?,
                                answered_us: r.get(7)?,
                            })
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    let faults = c
                        .prepare(&format!(
                            "SELECT kind, target, pid, {}, clock FROM chaos_faults ORDER BY at, id",
                            lite_us("at")
                        ))?
                        .query_map([], |r| {
                            Ok(Fault {
                                kind: r.get(0)?,
                                target: r.get(1)?,
                                pid: r.get(2)?,
                                at_us: r.get(3)?,
                                clock: r.get(4)?,
                            })
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    let created = c
                        .prepare("SELECT call_id, tool, instance, answer FROM chaos_calls")?
                        .query_map([], |r| {
                            Ok(Created {
                                call_id: r.get(0)?,
                                tool: r.get(1)?,
                                instance: r.get(2)?,
                                answer: r.get(3)?,
                            })
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    let deliveries = c
                        .prepare(&format!(
                            "SELECT id, notification_id, kind, call_id, instance, pid, {} FROM chaos_deliveries
                             WHERE call_id LIKE ?1 ORDER BY delivered_at, id",
                            lite_us("delivered_at")
                        ))?
                        .query_map([&prefix], |r| {
                            Ok(Delivery {
                                id: r.get(0)?,
                                notification_id: r.get(1)?,
                                kind: r.get(2)?,
                                call_id: r.get(3)?,
                                instance: r.get(4)?,
                                pid: r.get(5)?,
                                at_us: r.get(6)?,
                            })
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    Ok(Data {
                        calls,
                        executions,
                        answers,
                        faults,
                        created,
                        effects,
                        notifications,
                        deliveries,
                    })
                })
                .await
            }
        }
    }

    /// How many calls of run `run` the store has, and how many of them are
    /// not settled.
    pub async fn unsettled(&self, store: &Store, run: &str) -> Result<(i64, i64), String> {
        let table = ("tool_runtime_calls", "calls");
        self.count_of_run(store, run, table, "state <> 'settled'")
            .await
    }

    /// How many notifications of run `run`'s calls the store's outbox has,
    /// and how many of them are not settled (waiting or sending).
    pub async fn undelivered(&self, store: &Store, run: &str) -> Result<(i64, i64), String> {
        let table = ("tool_runtime_outbox", "outbox");
        self.count_of_run(store, run, table, "state IN ('waiting', 'sending')")
            .await
    }

    /// How many rows of the store's `table` (its name on PostgreSQL, on
    /// SQLite) name a call of run `run`, and for how many of them
    /// `unfinished` holds.
    async fn count_of_run(
        &self,
        store: &Store,
        run: &str,
        (pg_table, lite_table): (&str, &str),
        unfinished: &str,
    ) -> Result<(i64, i64), String> {
        let prefix = format!("{run}-%");
        let counting = |table: &str, param: &str| {
            format!(
                "SELECT count(*), coalesce(sum(CASE WHEN {unfinished} THEN 1 ELSE 0 END), 0)
                 FROM {table} WHERE call_id LIKE {param}"
            )
        };
        match (self, store) {
            (ChaosDb::Pg(pg), _) => {
                let rows = pg.query(&counting(pg_table, "$1"), &[&prefix]).await?;
                let row = rows.first().ok_or("no row")?;
                Ok((row.get(0), row.get(1)))
            }
            (ChaosDb::Lite(_), Store::Sqlite { path, .. }) => {
                let (path, sql) = (path.clone(), counting(lite_table, "?1"));
                tokio::task::spawn_blocking(move || {
                    let c = rusqlite::Connection::open_with_flags(
                        &path,
                        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
                    )
                    .map_err(|e| format!("{e}"))?;
                    c.busy_timeout(Duration::from_secs(10))
                        .map_err(|e| format!("{e}"))?;
                    c.query_row(&sql, [&prefix], |r| Ok((r.get(0)?, r.get(1)?)))
                        .map_err(|e| format!("{e}"))
                })
                .await
                .map_err(|e| format!("{e}"))?
            }
            (ChaosDb::Lite(_), Store::Postgres { .. }) => Err("mismatched store".to_owned()),
        }
    }
}

/// What identifies an execution.
#[derive(Clone, Debug)]
pub struct ExecStart {
    pub id: String,
    pub call_id: String,
    pub tool: String,
    pub instance: String,
    pub pid: i32,
    pub attempt: i32,
}

/// An answer a process got, to record.
#[derive(Clone, Debug)]
pub struct AnswerRec {
    pub call_id: String,
    pub instance: String,
    pub verb: String,
    pub ok: Option<String>,
    pub error: Option<String>,
    pub error_kind: Option<String>,
    pub asked_us: i64,
    pub answered_us: i64,
}

/// A call the front created, and what `Runtime::call` answered (none yet).
#[derive(Clone, Debug)]
pub struct CreatedRec {
    pub call_id: String,
    pub tool: String,
    pub instance: String,
    pub answer: Option<String>,
}

/// A delivery of a notification to the dispatchers' sink, to record.
#[derive(Clone, Debug)]
pub struct DeliveryRec {
    pub id: String,
    pub notification_id: String,
    pub kind: String,
    pub call_id: String,
    pub instance: String,
    pub pid: i32,
}

/// What the background recorder writes.
#[derive(Clone, Debug)]
enum Rec {
    /// An execution's future was dropped before its end, at this time.
    Dropped(ExecStart, i64),
    Answer(AnswerRec),
    Created(CreatedRec),
}

/// Writes records in order in the background, each tried again until the
/// database takes it (a PostgreSQL outage delays them, never loses them
/// while the process lives).
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::UnboundedSender<Rec>,
}

impl Recorder {
    pub fn spawn(db: ChaosDb) -> Recorder {
        let (tx, mut rx) = mpsc::unbounded_channel::<Rec>();
        tokio::spawn(async move {
            while let Some(rec) = rx.recv().await {
                let mut pause = Duration::from_millis(50);
                while let Err(error) = db.record(&rec).await {
                    eprintln!("chaos: recording {rec:?} failed, trying again: {error}");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        });
        Recorder { tx }
    }

    pub fn dropped(&self, exec: ExecStart, at_us: i64) {
        let _ = self.tx.send(Rec::Dropped(exec, at_us));
    }

    pub fn answer(&self, answer: AnswerRec) {
        let _ = self.tx.send(Rec::Answer(answer));
    }

    pub fn created(&self, created: CreatedRec) {
        let _ = self.tx.send(Rec::Created(created));
    }
}
