//! Stored calls in a SQLite file: they survive a restart or a `kill -9`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{
    Connection, ErrorCode, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior,
    params,
};
use serde_json::Value;

use tool_core::Excerpt;

use super::{
    AuditEntry, AuditLog, AuditQuery, AuditRetention, CallState, CallStore, Decided, Expected,
    Noted, Notification, PendingCall, PendingKind, PendingOrder, PendingQuery, RecordedOutcome,
    Retention, Revocation, RuleStore, RunStore, Settlement, StandingRule, StoreError,
    StoreTransaction, StoredCall, StoredHead, StoredRun, TaskSignal, TaskSignaller, Transition,
    storable_audit, storable_call, storable_json, storable_notifications, storable_rule,
    storable_run_record,
};

mod outbox;
mod transaction;

pub use transaction::SqliteTransaction;

/// `PRAGMA application_id` of a pending store: "tool" in ASCII.
const APPLICATION_ID: i32 = 0x746F_6F6C;
/// `PRAGMA user_version` of the current layout: 9 keeps the outbox of
/// notifications (table `outbox`, [`ADD_OUTBOX`]); 8 orders waiting calls by
/// when they were asked for and by expiry ([`ADD_WAITING_ORDERS`]); 7
/// keeps standing rules (table `rules`); 6 keeps the audit log
/// (table `audit`); 5 remembers the ids of
/// calls purged by the size bound (table `purged`); 4 adds fencing tokens
/// (column `epoch`, table `fencing`); 3 adds agent runs (table `runs`); 2
/// has the call lifecycle (state, owner, lease, outcome); 1 (pending calls
/// only). Files of layouts 1 to 8 are migrated.
const LAYOUT_VERSION: i32 = 9;
/// How long a write waits for another process holding the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A durable store ([`CallStore`], [`RunStore`], [`AuditLog`],
/// [`RuleStore`]) in one
/// SQLite file (WAL mode, synchronous commits; the I/O runs on tokio's
/// blocking pool, off the async workers): pending approvals and
/// suspensions, running calls and recorded outcomes survive a crash of the
/// process, and several runtimes (in one or several processes on one host)
/// can share the file. Every transition is one
/// immediate transaction, so a decision wins at most once.
///
/// The layout version is recorded in the file (`PRAGMA user_version`): a
/// file of an older layout is migrated when opened (its calls kept), a
/// newer one is refused with an error naming both versions.
///
/// Agent runs ([`save_run`](RunStore::save_run)) are rows of their own
/// table, and so are audit entries; each save or append is one immediate
/// transaction. A run whose record does
/// not read back is an error naming it when it is loaded; the file still
/// opens and every other run and call is served.
///
/// Opening checks the file: a file that is not SQLite, fails SQLite's
/// integrity check or belongs to another program is an error naming the
/// file, and is left untouched. One unreadable record does not stop the
/// store: it is logged with its call id when the store opens and lists,
/// left in place for the operator, and `get` or `take` of that call is an
/// error naming it; every other call is served.
///
/// ```
/// use tool_runtime::store::SqliteStore;
/// use tool_runtime::Runtime;
///
/// let dir = std::env::temp_dir().join(format!("tool-runtime-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("pending.sqlite");
/// let runtime = Runtime::builder().store(SqliteStore::open(&path).unwrap()).build().unwrap();
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert!(runtime.inbox().waiting().await.unwrap().is_empty());
/// # });
///
/// std::fs::write(dir.join("garbage.sqlite"), b"this is not a database, not even close; it is plain text.").unwrap();
/// let error = SqliteStore::open(dir.join("garbage.sqlite")).unwrap_err();
/// assert!(error.to_string().contains("garbage.sqlite"));
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
#[derive(Debug, Clone)]
pub struct SqliteStore {
    // Shared with the blocking-pool jobs that do the I/O.
    file: Arc<SqliteFile>,
    // Tasks stored through this store (and its clones); SQLite cannot tell
    // of another process's, which workers find by polling.
    tasks_stored: TaskSignaller,
}

/// The open file: one connection, used by one job at a time.
#[derive(Debug)]
struct SqliteFile {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens the store at `path`, creating the file if it does not exist.
    /// This is blocking I/O (open, integrity check, reading every record):
    /// call it before serving, as `RuntimeBuilder::build` does.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        SqliteFile::open(path.as_ref()).map(|file| SqliteStore {
            file: Arc::new(file),
            tasks_stored: TaskSignaller::new(),
        })
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Runs `job` on tokio's blocking pool (SQLite's I/O, an fsync per
    /// commit and a busy wait, never runs on an async worker thread), or in
    /// place when there is no tokio runtime.
    async fn blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&SqliteFile) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let file = Arc::clone(&self.file);
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return job(&file);
        };
        let location = file.path.display().to_string();
        handle
            .spawn_blocking(move || job(&file))
            .await
            .unwrap_or_else(|error| {
                Err(StoreError::Io {
                    location,
                    reason: format!("the store's blocking job failed: {error}"),
                    source: Some(Box::new(error)),
                })
            })
    }
}

impl CallStore for SqliteStore {
    async fn insert_notifying(
        &self,
        call: PendingCall,
        notifications: Vec<Notification>,
    ) -> Result<(), StoreError> {
        let task = call.kind == PendingKind::Task;
        let texts = storable_notifications(&notifications)?;
        self.blocking(move |file| file.insert(&call, &notifications, &texts))
            .await?;
        if task {
            self.tasks_stored.notify();
        }
        Ok(())
    }

    async fn decide_notifying(
        &self,
        call_id: &str,
        expected: impl Into<Expected> + Send,
        transition: Transition,
        notifications: Vec<Notification>,
    ) -> Result<Decided, StoreError> {
        let (call_id, expected) = (call_id.to_owned(), expected.into());
        let texts = storable_notifications(&notifications)?;
        let noted = (notifications, texts);
        self.blocking(move |file| file.decide(&call_id, expected, transition, &noted))
            .await
    }

    async fn renew(&self, call_id: &str, epoch: u64, lease: Duration) -> Result<bool, StoreError> {
        let call_id = call_id.to_owned();
        self.blocking(move |file| file.renew(&call_id, epoch, lease))
            .await
    }

    async fn finish_notifying(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> Result<bool, StoreError> {
        let call_id = call_id.to_owned();
        let texts = storable_notifications(&notifications)?;
        let noted = (notifications, texts);
        self.blocking(move |file| file.finish(&call_id, epoch, settlement, &noted))
            .await
    }

    async fn recover_expired(
        &self,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Vec<StoredCall>, StoreError> {
        let (owner, tool_ids) = (owner.to_owned(), tool_ids.to_vec());
        self.blocking(move |file| file.recover_expired(&owner, lease, &tool_ids))
            .await
    }

    async fn claim_next(
        &self,
        kind: PendingKind,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Option<StoredCall>, StoreError> {
        let (owner, tool_ids) = (owner.to_owned(), tool_ids.to_vec());
        self.blocking(move |file| file.claim_next(kind, &owner, lease, &tool_ids))
            .await
    }

    async fn purge_settled(&self, retention: Retention) -> Result<usize, StoreError> {
        self.blocking(move |file| file.purge_settled(retention))
            .await
    }

    async fn purged(&self, call_id: &str) -> Result<Option<SystemTime>, StoreError> {
        let call_id = call_id.to_owned();
        self.blocking(move |file| file.purged(&call_id)).await
    }

    async fn get(&self, call_id: &str) -> Result<Option<StoredCall>, StoreError> {
        let call_id = call_id.to_owned();
        self.blocking(move |file| file.get(&call_id)).await
    }

    async fn list(&self) -> Result<Vec<StoredCall>, StoreError> {
        self.blocking(SqliteFile::list).await
    }

    async fn list_page(&self, query: PendingQuery) -> Result<Vec<StoredCall>, StoreError> {
        self.blocking(move |file| file.list_page(&query)).await
    }

    fn transaction(&self) -> Option<Box<dyn StoreTransaction>> {
        Some(self.call_transaction())
    }

    fn task_signal(&self) -> Option<TaskSignal> {
        Some(self.tasks_stored.subscribe())
    }
}

impl AuditLog for SqliteStore {
    async fn append_audit_notifying(
        &self,
        entry: AuditEntry,
        notifications: Vec<Notification>,
    ) -> Result<u64, StoreError> {
        let text = storable_audit(&entry)?;
        let texts = storable_notifications(&notifications)?;
        let noted = (notifications, texts);
        self.blocking(move |file| file.append_audit(&entry, text, &noted))
            .await
    }

    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.blocking(move |file| file.audit(&query)).await
    }

    async fn audit_end(&self) -> Result<u64, StoreError> {
        self.blocking(|file| file.audit_end()).await
    }

    async fn purge_audit(&self, retention: AuditRetention) -> Result<usize, StoreError> {
        self.blocking(move |file| file.purge_audit(retention)).await
    }
}

impl RuleStore for SqliteStore {
    async fn add_rule(&self, rule: StandingRule) -> Result<bool, StoreError> {
        let text = storable_rule(&rule)?;
        self.blocking(move |file| file.add_rule(&rule, &text)).await
    }

    async fn revoke_rule(
        &self,
        rule_id: &str,
        revocation: Revocation,
    ) -> Result<Option<StandingRule>, StoreError> {
        let rule_id = rule_id.to_owned();
        self.blocking(move |file| file.revoke_rule(&rule_id, revocation))
            .await
    }

    async fn rule(&self, rule_id: &str) -> Result<Option<StandingRule>, StoreError> {
        let rule_id = rule_id.to_owned();
        self.blocking(move |file| {
            let rules = file.rules("rule_id = ?1", params![rule_id])?;
            Ok(rules.into_iter().next())
        })
        .await
    }

    async fn rules_in_force(
        &self,
        tool_id: Option<&str>,
        now_ms: u64,
    ) -> Result<Vec<StandingRule>, StoreError> {
        let tool_id = tool_id.map(str::to_owned);
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        self.blocking(move |file| {
            file.rules(
                "(?1 IS NULL OR tool_id = ?1) AND revoked = 0 AND until_ms > ?2",
                params![tool_id, now],
            )
        })
        .await
    }
}

impl RunStore for SqliteStore {
    async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let run_id = run_id.to_owned();
        self.blocking(move |file| file.load_run(&run_id)).await
    }

    async fn save_run(
        &self,
        run_id: &str,
        expected_revision: Option<u64>,
        finished: bool,
        record: Value,
    ) -> Result<Option<u64>, StoreError> {
        let run_id = run_id.to_owned();
        self.blocking(move |file| file.save_run(&run_id, expected_revision, finished, &record))
            .await
    }
}

impl SqliteFile {
    fn open(path: &Path) -> Result<Self, StoreError> {
        let path = path.to_path_buf();
        let open_error = |error: rusqlite::Error| StoreError::Open {
            path: path.clone(),
            reason: error.to_string(),
            source: Some(Box::new(error)),
        };
        if path.is_dir() {
            return Err(StoreError::Open {
                path,
                reason: "it is a directory".to_owned(),
                source: None,
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&path, flags).map_err(open_error)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        let store_error = |e: rusqlite::Error| classify(&path, e);
        // The first read of the file: a non-SQLite file fails here.
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(store_error)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(store_error)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |row| row.get(0))
            .map_err(store_error)?;
        if check != "ok" {
            return Err(StoreError::Corrupt {
                path,
                reason: format!("integrity check failed: {check}"),
                source: None,
            });
        }
        init_layout(&mut conn, &path)?;
        let file = SqliteFile {
            path,
            conn: Mutex::new(conn),
        };
        // Reads every record once: an unreadable one is reported now, with
        // its call id, rather than when someone approves it.
        file.list()?;
        Ok(file)
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn io(&self, error: rusqlite::Error) -> StoreError {
        classify(&self.path, error)
    }

    fn decode(&self, call_id: &str, record: &str) -> Result<PendingCall, StoreError> {
        let corrupt = |e: serde_json::Error| StoreError::Corrupt {
            path: self.path.clone(),
            reason: format!(
                "the record of call {:?} is unreadable: {e}",
                Excerpt::of(call_id)
            ),
            source: Some(Box::new(e)),
        };
        match serde_json::from_str::<Record>(record) {
            Ok(record) => record.decode().map_err(corrupt),
            // Written before records kept their values as text.
            Err(_) => serde_json::from_str(record).map_err(corrupt),
        }
    }

    /// The record of `call`: its values as JSON text each, checked against
    /// the stores' limits ([`storable_call`]).
    fn encode(&self, call: &PendingCall) -> Result<String, StoreError> {
        let record = Record::encode(call)?;
        serde_json::to_string(&record).map_err(|e| StoreError::Io {
            reason: format!(
                "cannot encode call {:?}: {e}",
                Excerpt::of(&call.head.call_id)
            ),
            location: self.path.display().to_string(),
            source: Some(Box::new(e)),
        })
    }
}

/// A stored call, its values (arguments, payload, context, messages) as JSON
/// text: each is read on its own, with the parser's whole depth budget, so a
/// value as deep as a parser reads is never made unreadable by the record
/// around it. Writing checks that each value reads back.
#[derive(serde::Serialize, serde::Deserialize)]
struct Record {
    /// Layout of the record: 2.
    v: u8,
    call_id: String,
    tool_id: String,
    kind: PendingKind,
    input: String,
    request_context: String,
    messages: String,
    payload: Option<String>,
    /// Added with layout 5; absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    /// Added with layout 6; absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    requester: Option<String>,
    /// Added with layout 6; absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at_ms: Option<u64>,
    /// Added after layout 6; absent before (a field of the record, which
    /// needs no new layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked_at_ms: Option<u64>,
    /// Added after layout 6, as `asked_at_ms` was: JSON text, as `agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approvals: Option<String>,
    /// Added after layout 6, as `asked_at_ms` was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
}

impl Record {
    fn encode(call: &PendingCall) -> Result<Self, StoreError> {
        let texts = storable_call(call)?;
        Ok(Record {
            v: 2,
            call_id: call.head.call_id.clone(),
            tool_id: call.head.tool_id.clone(),
            kind: call.kind,
            input: texts.input,
            request_context: texts.request_context,
            messages: texts.messages,
            payload: texts.payload,
            agent: texts.agent,
            requester: call.head.requester.clone(),
            expires_at_ms: call.expires_at_ms,
            asked_at_ms: call.asked_at_ms,
            approvals: texts.approvals,
            timeout_ms: call.head.timeout_ms,
        })
    }

    fn decode(self) -> Result<PendingCall, serde_json::Error> {
        let head = StoredHead {
            call_id: self.call_id,
            tool_id: self.tool_id,
            request_context: serde_json::from_str(&self.request_context)?,
            messages: serde_json::from_str(&self.messages)?,
            agent: self.agent.map(|a| serde_json::from_str(&a)).transpose()?,
            requester: self.requester,
            timeout_ms: self.timeout_ms,
        };
        Ok(PendingCall {
            head,
            kind: self.kind,
            input: serde_json::from_str(&self.input)?,
            payload: self.payload.map(|p| serde_json::from_str(&p)).transpose()?,
            expires_at_ms: self.expires_at_ms,
            asked_at_ms: self.asked_at_ms,
            approvals: self
                .approvals
                .map(|a| serde_json::from_str(&a))
                .transpose()?,
        })
    }
}

/// The calls table (of layouts 2 and 3; layout 4 adds [`ADD_FENCING`]).
/// `lease_expires_at` and `settled_at` are milliseconds since the Unix
/// epoch; `record`, `resume_data` and `outcome` are JSON text.
const CREATE_CALLS: &str = "CREATE TABLE calls (
    call_id TEXT PRIMARY KEY NOT NULL,
    kind TEXT NOT NULL,
    tool_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'settled')),
    owner TEXT,
    lease_expires_at INTEGER,
    attempt INTEGER NOT NULL DEFAULT 0,
    record TEXT NOT NULL,
    resume_data TEXT,
    outcome TEXT,
    settled_at INTEGER
);
CREATE INDEX calls_by_state ON calls (state, lease_expires_at, settled_at);";

/// The runs table, added by layout 3. `saved_at` is milliseconds since the
/// Unix epoch; `record` is JSON text.
const CREATE_RUNS: &str = "CREATE TABLE runs (
    run_id TEXT PRIMARY KEY NOT NULL,
    revision INTEGER NOT NULL,
    finished INTEGER NOT NULL CHECK (finished IN (0, 1)),
    record TEXT NOT NULL,
    saved_at INTEGER NOT NULL
);
CREATE INDEX runs_finished ON runs (finished, saved_at);";

/// What layout 4 adds: each call's fencing token, and the last token drawn
/// (one row), so that a token never repeats, even for a call id purged and
/// used again.
const ADD_FENCING: &str = "ALTER TABLE calls ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
CREATE TABLE fencing (last INTEGER NOT NULL);
INSERT INTO fencing (last) VALUES (0);";

/// What layout 5 adds: the ids of calls purged by the size bound of the
/// retention, with when (milliseconds since the Unix epoch), themselves
/// purged after the retention's age.
const ADD_PURGED: &str = "CREATE TABLE purged (
    call_id TEXT PRIMARY KEY NOT NULL,
    purged_at INTEGER NOT NULL
);
CREATE INDEX purged_by_time ON purged (purged_at);";

/// What layout 6 adds: the audit log, appended to and never updated;
/// `seq` orders it, `entry` is the entry as JSON text.
const ADD_AUDIT: &str = "CREATE TABLE audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id TEXT NOT NULL,
    entry TEXT NOT NULL
);
CREATE INDEX audit_by_call ON audit (call_id, seq);";

/// What layout 7 adds: standing rules, each as JSON text, with the
/// columns that select those in force (`until_ms`, milliseconds since the
/// Unix epoch); `seq` keeps the order they were added in.
const ADD_RULES: &str = "CREATE TABLE rules (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    rule_id TEXT NOT NULL UNIQUE,
    tool_id TEXT NOT NULL,
    until_ms INTEGER NOT NULL,
    revoked INTEGER NOT NULL CHECK (revoked IN (0, 1)),
    rule TEXT NOT NULL
);
CREATE INDEX rules_in_force ON rules (tool_id, revoked, until_ms);";

/// What layout 8 adds: the keys of the orders by time of waiting calls
/// (`PendingOrder::Asked`, `Expires`), read from the record (a call
/// without the time after every other: `NO_TIME`), each with an index of
/// the waiting calls in that order, so a page reads its rows only. A
/// record that is not JSON has no time (rather than failing every write
/// and read of the index: it is left for the operator, as elsewhere).
const ADD_WAITING_ORDERS: &str = "ALTER TABLE calls ADD COLUMN asked_key INTEGER
    GENERATED ALWAYS AS (COALESCE(CASE WHEN json_valid(record)
        THEN json_extract(record, '$.asked_at_ms') END, 9223372036854775807)) VIRTUAL;
ALTER TABLE calls ADD COLUMN expiry_key INTEGER
    GENERATED ALWAYS AS (COALESCE(CASE WHEN json_valid(record)
        THEN json_extract(record, '$.expires_at_ms') END, 9223372036854775807)) VIRTUAL;
CREATE INDEX calls_waiting_by_asked ON calls (asked_key, call_id) WHERE state = 'pending';
CREATE INDEX calls_waiting_by_expiry ON calls (expiry_key, call_id) WHERE state = 'pending';";

/// What layout 9 adds: the outbox of notifications, each written in the
/// transaction of the change it reports (`data` is its data as JSON text),
/// with its delivery (`state`; `lease_expires_at`, `next_at` and
/// `settled_at` in milliseconds since the Unix epoch; `delivered_to` a
/// JSON array of sink names). The partial index holds the unsettled
/// notifications only, by call: what a dispatcher's claim reads (an
/// earlier unsettled notification of a call holds back its later ones),
/// few when delivery keeps up, sorted by `seq` as read. One index, since
/// each is a page more to write with every notification.
const ADD_OUTBOX: &str = "CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    tool_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('waiting', 'sending', 'delivered', 'dead')),
    owner TEXT,
    lease_expires_at INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    epoch INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,
    delivered_to TEXT NOT NULL DEFAULT '[]',
    last_error TEXT,
    settled_at INTEGER
);
CREATE INDEX outbox_unsettled ON outbox (call_id, seq) WHERE state IN ('waiting', 'sending');
CREATE INDEX outbox_settled ON outbox (settled_at) WHERE state IN ('delivered', 'dead');";

/// Creates the tables in a new file, migrates a file of an older layout (in
/// the same transaction: a failed migration leaves the file as it was), or
/// checks that an existing file is a pending store of this layout.
fn init_layout(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let err = |e: rusqlite::Error| classify(path, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    let app_id: i32 = tx
        .query_row("PRAGMA application_id", [], |row| row.get(0))
        .map_err(err)?;
    let version: i32 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(err)?;
    let objects: i64 = tx
        .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
        .map_err(err)?;
    if app_id == 0 && version == 0 && objects == 0 {
        tx.execute_batch(&format!(
            "{CREATE_CALLS}
            {CREATE_RUNS}
            {ADD_FENCING}
            {ADD_PURGED}
            {ADD_AUDIT}
            {ADD_RULES}
            {ADD_WAITING_ORDERS}
            {ADD_OUTBOX}
            PRAGMA application_id = {APPLICATION_ID};
            PRAGMA user_version = {LAYOUT_VERSION};"
        ))
        .map_err(err)?;
    } else if app_id == APPLICATION_ID && (1..LAYOUT_VERSION).contains(&version) {
        if version == 1 {
            // Layout 1 kept pending calls only: they become pending rows.
            tx.execute_batch(&format!(
                "{CREATE_CALLS}
                INSERT INTO calls (call_id, kind, tool_id, state, attempt, record)
                    SELECT call_id, kind, tool_id, 'pending', 0, record FROM pending;
                DROP TABLE pending;"
            ))
            .map_err(err)?;
        }
        if version <= 2 {
            // Layout 2 had no runs.
            tx.execute_batch(CREATE_RUNS).map_err(err)?;
        }
        if version <= 3 {
            // Layout 3 had no fencing tokens.
            tx.execute_batch(ADD_FENCING).map_err(err)?;
        }
        if version <= 4 {
            // Layout 4 did not remember purged calls.
            tx.execute_batch(ADD_PURGED).map_err(err)?;
        }
        if version <= 5 {
            // Layout 5 kept no audit log.
            tx.execute_batch(ADD_AUDIT).map_err(err)?;
        }
        if version <= 6 {
            // Layout 6 kept no standing rules.
            tx.execute_batch(ADD_RULES).map_err(err)?;
        }
        if version <= 7 {
            // Layout 7 kept no orders by time.
            tx.execute_batch(ADD_WAITING_ORDERS).map_err(err)?;
        }
        // Layout 8 kept no outbox.
        tx.execute_batch(&format!(
            "{ADD_OUTBOX}
            PRAGMA user_version = {LAYOUT_VERSION};"
        ))
        .map_err(err)?;
        tracing::info!(path = %path.display(), "pending store migrated from layout {version} to {LAYOUT_VERSION}");
    } else if app_id != APPLICATION_ID {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!(
                "it is a SQLite database of another program (application_id {app_id:#x})"
            ),
            source: None,
        });
    } else if version != LAYOUT_VERSION {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!(
                "unsupported layout version {version} (this build reads {LAYOUT_VERSION})"
            ),
            source: None,
        });
    }
    tx.commit().map_err(err)
}

/// Maps a SQLite error: a file that is not a database is corrupt, anything
/// else an I/O failure; both name the file.
fn classify(path: &Path, error: rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: error.to_string(),
            source: Some(Box::new(error)),
        },
        _ => StoreError::Io {
            location: path.display().to_string(),
            reason: error.to_string(),
            source: Some(Box::new(error)),
        },
    }
}

/// The columns a [`StoredCall`] is read from, in [`SqliteFile::stored`]'s order.
const COLUMNS: &str = "call_id, record, state, owner, lease_expires_at, attempt, resume_data, outcome, settled_at, epoch";

impl SqliteFile {
    fn insert(
        &self,
        call: &PendingCall,
        notifications: &[Notification],
        texts: &[String],
    ) -> Result<(), StoreError> {
        let record = self.encode(call)?;
        self.write(|tx| {
            self.insert_in(tx, call, &record)?;
            self.note(tx, notifications, texts)
        })
    }

    fn insert_in(
        &self,
        tx: &Transaction<'_>,
        call: &PendingCall,
        record: &str,
    ) -> Result<(), StoreError> {
        match tx.execute(
            "INSERT INTO calls (call_id, kind, tool_id, state, attempt, record)
             VALUES (?1, ?2, ?3, 'pending', 0, ?4)",
            params![
                call.head.call_id,
                call.kind.as_str(),
                call.head.tool_id,
                record
            ],
        ) {
            Ok(_) => Ok(()),
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                Err(StoreError::Duplicate {
                    call_id: call.head.call_id.clone(),
                })
            }
            Err(e) => Err(self.io(e)),
        }
    }

    /// Runs `job` in one immediate transaction (the write lock taken at
    /// once, so a read-then-write cannot interleave with another process's);
    /// it commits only when `job` succeeds.
    fn write<T>(
        &self,
        job: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.io(e))?;
        let value = job(&tx)?;
        tx.commit().map_err(|e| self.io(e))?;
        Ok(value)
    }

    /// The call `call_id` as `conn` sees it.
    fn read(&self, conn: &Connection, call_id: &str) -> Result<Option<StoredCall>, StoreError> {
        conn.query_row(
            &format!("SELECT {COLUMNS} FROM calls WHERE call_id = ?1"),
            params![call_id],
            RawRow::read,
        )
        .optional()
        .map_err(|e| self.io(e))?
        .map(|row| self.stored(row))
        .transpose()
    }

    fn decide(
        &self,
        call_id: &str,
        expected: Expected,
        transition: Transition,
        (notifications, texts): &Noted,
    ) -> Result<Decided, StoreError> {
        self.write(|tx| {
            let Some(mut stored) = self.read(tx, call_id)? else {
                return Ok(Decided::Lost(None));
            };
            if !expected.matches(&stored) {
                return Ok(Decided::Lost(Some(stored)));
            }
            let now = SystemTime::now();
            match transition {
                Transition::Run {
                    owner,
                    lease,
                    resume_data,
                } => {
                    let resume_text = resume_data
                        .as_ref()
                        .map(|data| self.json_text(call_id, "resume data", data))
                        .transpose()?;
                    tx.execute(
                        "UPDATE calls SET resume_data = ?2 WHERE call_id = ?1",
                        params![call_id, resume_text],
                    )
                    .map_err(|e| self.io(e))?;
                    stored = self.claim(tx, call_id, &owner, millis(now + lease))?;
                }
                Transition::Settle(outcome) => {
                    self.settle(tx, call_id, &outcome, now)?;
                    stored.state = CallState::Settled {
                        outcome,
                        settled_at: time(millis(now)),
                    };
                }
                Transition::RunEdited {
                    owner,
                    lease,
                    input,
                } => {
                    let mut call = stored.call;
                    call.input = input;
                    let record = self.encode(&call)?;
                    tx.execute(
                        "UPDATE calls SET record = ?2, resume_data = NULL WHERE call_id = ?1",
                        params![call_id, record],
                    )
                    .map_err(|e| self.io(e))?;
                    stored = self.claim(tx, call_id, &owner, millis(now + lease))?;
                }
                Transition::Revise { input, approvals } => {
                    let mut call = stored.call;
                    call.input = input;
                    call.approvals = approvals;
                    let record = self.encode(&call)?;
                    let epoch = self.next_epoch(tx)?;
                    tx.execute(
                        "UPDATE calls SET record = ?2, epoch = ?3 WHERE call_id = ?1",
                        params![call_id, record, epoch],
                    )
                    .map_err(|e| self.io(e))?;
                    stored = self.read(tx, call_id)?.ok_or_else(|| StoreError::Io {
                        location: self.path.display().to_string(),
                        reason: format!(
                            "call {:?} vanished while being revised",
                            Excerpt::of(call_id)
                        ),
                        source: None,
                    })?;
                }
            }
            self.note(tx, notifications, texts)?;
            Ok(Decided::Won(stored))
        })
    }

    /// Marks `call_id` settled with `outcome`.
    fn settle(
        &self,
        tx: &Transaction<'_>,
        call_id: &str,
        outcome: &RecordedOutcome,
        now: SystemTime,
    ) -> Result<(), StoreError> {
        let outcome = self.json_text(call_id, "outcome", outcome)?;
        tx.execute(
            "UPDATE calls SET state = 'settled', owner = NULL, lease_expires_at = NULL,
                 outcome = ?2, settled_at = ?3
             WHERE call_id = ?1",
            params![call_id, outcome, millis(now)],
        )
        .map_err(|e| self.io(e))?;
        Ok(())
    }

    /// Claims `call_id` for `owner` until `expires` (milliseconds) with a
    /// new fencing token, counting one more attempt; the call as it is now.
    fn claim(
        &self,
        tx: &Transaction<'_>,
        call_id: &str,
        owner: &str,
        expires: i64,
    ) -> Result<StoredCall, StoreError> {
        let epoch = self.next_epoch(tx)?;
        tx.execute(
            "UPDATE calls SET state = 'running', owner = ?2, lease_expires_at = ?3,
                 attempt = attempt + 1, epoch = ?4
             WHERE call_id = ?1",
            params![call_id, owner, expires, epoch],
        )
        .map_err(|e| self.io(e))?;
        self.read(tx, call_id)?.ok_or_else(|| StoreError::Io {
            location: self.path.display().to_string(),
            reason: format!(
                "call {:?} vanished while being claimed",
                Excerpt::of(call_id)
            ),
            source: None,
        })
    }

    /// The next fencing token (epoch): a new version of a call, claimed or
    /// revised.
    fn next_epoch(&self, tx: &Transaction<'_>) -> Result<i64, StoreError> {
        tx.query_row(
            "UPDATE fencing SET last = last + 1 RETURNING last",
            [],
            |row| row.get(0),
        )
        .map_err(|e| self.io(e))
    }

    fn renew(&self, call_id: &str, epoch: u64, lease: Duration) -> Result<bool, StoreError> {
        let expires = millis(SystemTime::now() + lease);
        let changed = self
            .conn()
            .execute(
                "UPDATE calls SET lease_expires_at = ?3
                 WHERE call_id = ?1 AND state = 'running' AND epoch = ?2",
                params![call_id, epoch_value(epoch), expires],
            )
            .map_err(|e| self.io(e))?;
        Ok(changed == 1)
    }

    fn finish(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        noted: &Noted,
    ) -> Result<bool, StoreError> {
        self.write(|tx| self.finish_in(tx, call_id, epoch, settlement, noted))
    }

    /// [`finish`](Self::finish) inside `tx`.
    fn finish_in(
        &self,
        tx: &Transaction<'_>,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        (notifications, texts): &Noted,
    ) -> Result<bool, StoreError> {
        {
            let owned: Option<String> = tx
                .query_row(
                    "SELECT record FROM calls WHERE call_id = ?1 AND state = 'running' AND epoch = ?2",
                    params![call_id, epoch_value(epoch)],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| self.io(e))?;
            let Some(record) = owned else {
                return Ok(false);
            };
            match settlement {
                Settlement::Settled(outcome) => {
                    self.settle(tx, call_id, &outcome, SystemTime::now())?;
                }
                Settlement::Suspended { payload } => {
                    let mut call = self.decode(call_id, &record)?;
                    call.kind = PendingKind::Suspended;
                    call.payload = Some(payload);
                    tx.execute(
                        "UPDATE calls SET state = 'pending', kind = 'suspended', owner = NULL,
                             lease_expires_at = NULL, attempt = 0, resume_data = NULL, record = ?2
                         WHERE call_id = ?1",
                        params![call_id, self.encode(&call)?],
                    )
                    .map_err(|e| self.io(e))?;
                }
            }
            self.note(tx, notifications, texts)?;
            Ok(true)
        }
    }

    fn recover_expired(
        &self,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Vec<StoredCall>, StoreError> {
        let now = SystemTime::now();
        self.write(|tx| {
            let mut stmt = tx
                .prepare(
                    "SELECT call_id, tool_id FROM calls
                     WHERE state = 'running' AND lease_expires_at <= ?1 ORDER BY call_id",
                )
                .map_err(|e| self.io(e))?;
            let expired_ids = stmt
                .query_map(params![millis(now)], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(|e| self.io(e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.io(e))?;
            let expires = millis(now + lease);
            let mut expired = Vec::new();
            for (call_id, tool_id) in expired_ids {
                if !tool_ids.contains(&tool_id) {
                    continue;
                }
                match self.claim(tx, &call_id, owner, expires) {
                    Ok(stored) => expired.push(stored),
                    Err(error @ StoreError::Corrupt { .. }) => {
                        // Claimed but unreadable: left to the operator, like a pending one.
                        tracing::error!(call_id, %error, "unreadable running call left in the store");
                    }
                    Err(error) => return Err(error),
                }
            }
            Ok(expired)
        })
    }

    fn claim_next(
        &self,
        kind: PendingKind,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Option<StoredCall>, StoreError> {
        self.write(|tx| {
            let mut stmt = tx
                .prepare(
                    "SELECT call_id, tool_id FROM calls WHERE state = 'pending' AND kind = ?1
                     ORDER BY call_id",
                )
                .map_err(|e| self.io(e))?;
            let rows = stmt
                .query_map(params![kind.as_str()], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(|e| self.io(e))?;
            let mut first = None;
            for row in rows {
                let (call_id, tool_id) = row.map_err(|e| self.io(e))?;
                if tool_ids.contains(&tool_id) {
                    first = Some(call_id);
                    break;
                }
            }
            let Some(call_id) = first else {
                return Ok(None);
            };
            let expires = millis(SystemTime::now() + lease);
            self.claim(tx, &call_id, owner, expires).map(Some)
        })
    }

    fn purge_settled(&self, retention: Retention) -> Result<usize, StoreError> {
        let now = SystemTime::now();
        let before = millis(now.checked_sub(retention.age).unwrap_or(UNIX_EPOCH));
        // Past i64 keeps every one: no table holds that many rows.
        let kept = i64::try_from(retention.max_settled).unwrap_or(i64::MAX);
        self.write(|tx| {
            let aged = tx
                .execute(
                    "DELETE FROM calls WHERE state = 'settled' AND settled_at < ?1",
                    params![before],
                )
                .map_err(|e| self.io(e))?;
            // Beyond the newest `kept`, oldest settled first; each id
            // remembered as purged.
            let excess: Vec<String> = tx
                .prepare(
                    "DELETE FROM calls WHERE call_id IN (
                         SELECT call_id FROM calls WHERE state = 'settled'
                         ORDER BY settled_at DESC, call_id DESC LIMIT -1 OFFSET ?1)
                     RETURNING call_id",
                )
                .and_then(|mut stmt| {
                    stmt.query_map(params![kept], |row| row.get(0))?
                        .collect::<Result<_, _>>()
                })
                .map_err(|e| self.io(e))?;
            for call_id in &excess {
                tx.execute(
                    "INSERT INTO purged (call_id, purged_at) VALUES (?1, ?2)
                     ON CONFLICT (call_id) DO UPDATE SET purged_at = excluded.purged_at",
                    params![call_id, millis(now)],
                )
                .map_err(|e| self.io(e))?;
            }
            tx.execute("DELETE FROM purged WHERE purged_at < ?1", params![before])
                .map_err(|e| self.io(e))?;
            let runs = tx
                .execute(
                    "DELETE FROM runs WHERE finished = 1 AND saved_at < ?1",
                    params![before],
                )
                .map_err(|e| self.io(e))?;
            Ok(aged + excess.len() + runs)
        })
    }

    fn purged(&self, call_id: &str) -> Result<Option<SystemTime>, StoreError> {
        let purged_at: Option<i64> = self
            .conn()
            .query_row(
                "SELECT purged_at FROM purged WHERE call_id = ?1",
                params![call_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.io(e))?;
        Ok(purged_at.map(time))
    }

    fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT revision, finished, record FROM runs WHERE run_id = ?1",
                params![run_id],
                |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, String>(2)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.io(e))?;
        let Some((revision, finished, record)) = row else {
            return Ok(None);
        };
        let corrupt = |reason: String| StoreError::Corrupt {
            path: self.path.clone(),
            reason: format!(
                "the record of run {:?} is unreadable: {reason}",
                Excerpt::of(run_id)
            ),
            source: None,
        };
        let revision =
            u64::try_from(revision).map_err(|_| corrupt(format!("revision {revision}")))?;
        let record = serde_json::from_str(&record).map_err(|e| corrupt(e.to_string()))?;
        Ok(Some(StoredRun::new(
            run_id,
            revision,
            finished != 0,
            record,
        )))
    }

    fn save_run(
        &self,
        run_id: &str,
        expected_revision: Option<u64>,
        finished: bool,
        record: &Value,
    ) -> Result<Option<u64>, StoreError> {
        let record = storable_run_record(run_id, record)?;
        let now = millis(SystemTime::now());
        self.write(|tx| {
            let saved = match expected_revision {
                None => tx.execute(
                    "INSERT INTO runs (run_id, revision, finished, record, saved_at)
                     VALUES (?1, 1, ?2, ?3, ?4) ON CONFLICT (run_id) DO NOTHING",
                    params![run_id, finished, record, now],
                ),
                Some(expected) => {
                    // A revision past i64 was never stored: nothing to replace.
                    let Ok(expected) = i64::try_from(expected) else {
                        return Ok(None);
                    };
                    tx.execute(
                        "UPDATE runs SET revision = revision + 1, finished = ?3, record = ?4,
                             saved_at = ?5
                         WHERE run_id = ?1 AND revision = ?2",
                        params![run_id, expected, finished, record, now],
                    )
                }
            }
            .map_err(|e| self.io(e))?;
            Ok((saved == 1).then(|| expected_revision.map_or(1, |r| r + 1)))
        })
    }

    fn get(&self, call_id: &str) -> Result<Option<StoredCall>, StoreError> {
        self.read(&self.conn(), call_id)
    }

    fn list(&self) -> Result<Vec<StoredCall>, StoreError> {
        self.pending_after(PendingOrder::CallId, None, None, usize::MAX)
    }

    /// A page of the pending calls `query` selects: read in call-id order
    /// from its `after` on (the primary key's order, so a page costs the
    /// rows it passes over, not every row), a batch at a time, until the
    /// page is full or no call is left.
    fn list_page(&self, query: &PendingQuery) -> Result<Vec<StoredCall>, StoreError> {
        // Rows the page's filters may pass over, read at a time after a
        // first read of the page's size.
        const BATCH: usize = 200;
        let mut page = Vec::new();
        let mut after = query.after.clone();
        let mut size = query.limit.clamp(1, BATCH);
        let mut after_key = query.after_key;
        while page.len() < query.limit {
            let start = after.as_deref().map(|id| (after_key, id));
            let batch = self.pending_after(query.order, start, query.tool_id.as_deref(), size)?;
            let Some(last) = batch.last() else { break };
            after = Some(last.call.head.call_id.clone());
            after_key = query.order.key(&last.call);
            let full = batch.len() == size;
            page.extend(
                batch
                    .into_iter()
                    .filter(|stored| query.selects(&stored.call)),
            );
            if !full {
                break;
            }
            size = BATCH;
        }
        page.truncate(query.limit);
        Ok(page)
    }

    /// Up to `limit` pending calls in `order` after `after` (its key in
    /// that order, and its call id; all, for `None`), of tool `tool_id`
    /// (every tool's, for `None`). An unreadable record is logged and left
    /// out.
    fn pending_after(
        &self,
        order: PendingOrder,
        after: Option<(Option<u64>, &str)>,
        tool_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredCall>, StoreError> {
        let conn = self.conn();
        let sql = match order {
            // In the primary key's order from `after`: `+state` keeps the
            // planner off the state index, which would read every pending
            // row and sort them.
            PendingOrder::CallId => {
                let from = if after.is_some() {
                    "call_id > ?1"
                } else {
                    "?1 IS NULL"
                };
                format!(
                    "SELECT call_id, record, epoch FROM calls
                     WHERE {from} AND +state = 'pending' AND (?2 IS NULL OR tool_id = ?2)
                     ORDER BY call_id LIMIT ?3"
                )
            }
            // Along the order's index of waiting calls, named: without
            // statistics the planner would take the state index and sort
            // every waiting call.
            order => {
                let (key, index) = if order == PendingOrder::Asked {
                    ("asked_key", "calls_waiting_by_asked")
                } else {
                    ("expiry_key", "calls_waiting_by_expiry")
                };
                let from = if after.is_some() {
                    format!("({key}, call_id) > (?4, ?1)")
                } else {
                    "?1 IS NULL AND ?4 IS NULL".to_owned()
                };
                format!(
                    "SELECT call_id, record, epoch FROM calls INDEXED BY {index}
                     WHERE {from} AND state = 'pending' AND (?2 IS NULL OR tool_id = ?2)
                     ORDER BY {key}, call_id LIMIT ?3"
                )
            }
        };
        let mut stmt = conn.prepare(&sql).map_err(|e| self.io(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (after_key, after) = match after {
            Some((key, id)) => (
                key.map(|key| i64::try_from(key).unwrap_or(i64::MAX)),
                Some(id),
            ),
            None => (None, None),
        };
        let ordered = params![after, tool_id, limit, after_key];
        // By call id the statement takes no key.
        let taken = if order == PendingOrder::CallId { 3 } else { 4 };
        let bound = &ordered[..taken];
        let rows = stmt
            .query_map(bound, |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            })
            .map_err(|e| self.io(e))?;
        let mut calls = Vec::new();
        for row in rows {
            let (call_id, record, epoch) = row.map_err(|e| self.io(e))?;
            match self.decode(&call_id, &record) {
                // Pending: no attempt, no resume data, only its version.
                Ok(call) => calls.push(StoredCall {
                    epoch: u64::try_from(epoch).unwrap_or_default(),
                    ..StoredCall::pending(call)
                }),
                // One bad record must not hide every other call: it is
                // reported, left for the operator, and named by get and decide.
                Err(error) => {
                    tracing::error!(call_id, %error, "unreadable pending call left in the store");
                }
            }
        }
        Ok(calls)
    }

    fn add_rule(&self, rule: &StandingRule, text: &str) -> Result<bool, StoreError> {
        let until = i64::try_from(rule.until_ms).unwrap_or(i64::MAX);
        let added = self
            .conn()
            .execute(
                "INSERT INTO rules (rule_id, tool_id, until_ms, revoked, rule)
                 VALUES (?1, ?2, ?3, 0, ?4) ON CONFLICT (rule_id) DO NOTHING",
                params![rule.rule_id, rule.tool_id, until, text],
            )
            .map_err(|e| self.io(e))?;
        Ok(added == 1)
    }

    fn revoke_rule(
        &self,
        rule_id: &str,
        revocation: Revocation,
    ) -> Result<Option<StandingRule>, StoreError> {
        self.write(|tx| {
            let text: Option<String> = tx
                .query_row(
                    "SELECT rule FROM rules WHERE rule_id = ?1 AND revoked = 0",
                    params![rule_id],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| self.io(e))?;
            let Some(text) = text else { return Ok(None) };
            let mut rule = self.decode_rule(rule_id, &text)?;
            rule.revoked = Some(revocation);
            let text = storable_rule(&rule)?;
            tx.execute(
                "UPDATE rules SET revoked = 1, rule = ?2 WHERE rule_id = ?1",
                params![rule_id, text],
            )
            .map_err(|e| self.io(e))?;
            Ok(Some(rule))
        })
    }

    /// The rules `filter` (an SQL condition on the rules table, with
    /// `params`) selects, in the order they were added.
    fn rules(
        &self,
        filter: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<StandingRule>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT rule_id, rule FROM rules WHERE {filter} ORDER BY seq"
            ))
            .map_err(|e| self.io(e))?;
        let rows = stmt
            .query_map(params, |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|e| self.io(e))?;
        let mut rules = Vec::new();
        for row in rows {
            let (rule_id, text) = row.map_err(|e| self.io(e))?;
            rules.push(self.decode_rule(&rule_id, &text)?);
        }
        Ok(rules)
    }

    fn decode_rule(&self, rule_id: &str, text: &str) -> Result<StandingRule, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            reason: format!(
                "standing rule {:?} is unreadable: {e}",
                Excerpt::of(rule_id)
            ),
            source: Some(Box::new(e)),
        })
    }

    fn append_audit(
        &self,
        entry: &AuditEntry,
        text: String,
        (notifications, texts): &Noted,
    ) -> Result<u64, StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO audit (call_id, entry) VALUES (?1, ?2)",
                params![entry.call_id, text],
            )
            .map_err(|e| self.io(e))?;
            // AUTOINCREMENT rowids start at 1 and only grow.
            let seq = u64::try_from(tx.last_insert_rowid()).unwrap_or_default();
            self.note(tx, notifications, texts)?;
            Ok(seq)
        })
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT seq, entry FROM audit WHERE seq > ?1 AND (?2 IS NULL OR call_id = ?2)
                 ORDER BY seq LIMIT ?3",
            )
            .map_err(|e| self.io(e))?;
        let after = i64::try_from(query.after).unwrap_or(i64::MAX);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![after, query.call_id, limit], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|e| self.io(e))?;
        let mut entries = Vec::new();
        for row in rows {
            let (seq, text) = row.map_err(|e| self.io(e))?;
            let mut entry: AuditEntry =
                serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                    path: self.path.clone(),
                    reason: format!("audit entry {seq} is unreadable: {e}"),
                    source: Some(Box::new(e)),
                })?;
            entry.seq = u64::try_from(seq).unwrap_or_default();
            entries.push(entry);
        }
        Ok(entries)
    }

    fn audit_end(&self) -> Result<u64, StoreError> {
        let seq: i64 = self
            .conn()
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM audit", [], |row| {
                row.get(0)
            })
            .map_err(|e| self.io(e))?;
        Ok(u64::try_from(seq).unwrap_or_default())
    }

    fn purge_audit(&self, retention: AuditRetention) -> Result<usize, StoreError> {
        let cutoff = i64::try_from(retention.cutoff_ms()).unwrap_or(i64::MAX);
        // Past i64 keeps every one: no table holds that many rows.
        let kept = i64::try_from(retention.max_entries).unwrap_or(i64::MAX);
        // A pending call's entries stay: its grants count.
        const PURGEABLE: &str = "NOT EXISTS (SELECT 1 FROM calls
             WHERE calls.call_id = audit.call_id AND calls.state = 'pending')";
        self.write(|tx| {
            let aged = tx
                .execute(
                    &format!(
                        "DELETE FROM audit WHERE json_extract(entry, '$.atMs') < ?1 AND {PURGEABLE}"
                    ),
                    params![cutoff],
                )
                .map_err(|e| self.io(e))?;
            let total: i64 = tx
                .query_row("SELECT COUNT(*) FROM audit", [], |row| row.get(0))
                .map_err(|e| self.io(e))?;
            let excess = total.saturating_sub(kept).max(0);
            let over = tx
                .execute(
                    &format!(
                        "DELETE FROM audit WHERE seq IN (
                             SELECT seq FROM audit WHERE {PURGEABLE} ORDER BY seq LIMIT ?1)"
                    ),
                    params![excess],
                )
                .map_err(|e| self.io(e))?;
            Ok(aged + over)
        })
    }

    /// The stored call a row holds; an unreadable value is an error naming the call.
    fn stored(&self, row: RawRow) -> Result<StoredCall, StoreError> {
        let call_id = row.call_id;
        let corrupt = |what: &str, reason: String| StoreError::Corrupt {
            path: self.path.clone(),
            reason: format!(
                "the {what} of call {:?} is unreadable: {reason}",
                Excerpt::of(&call_id)
            ),
            source: None,
        };
        let call = self.decode(&call_id, &row.record)?;
        let state = match row.state.as_str() {
            "pending" => CallState::Pending,
            "running" => CallState::Running {
                owner: row.owner.unwrap_or_default(),
                lease_expires_at: time(row.lease_expires_at.unwrap_or(0)),
            },
            "settled" => {
                let outcome = row.outcome.unwrap_or_default();
                CallState::Settled {
                    outcome: serde_json::from_str(&outcome)
                        .map_err(|e| corrupt("outcome", e.to_string()))?,
                    settled_at: time(row.settled_at.unwrap_or(0)),
                }
            }
            other => return Err(corrupt("state", format!("unknown state {other:?}"))),
        };
        let resume_data = row
            .resume_data
            .map(|text| serde_json::from_str::<Value>(&text))
            .transpose()
            .map_err(|e| corrupt("resume data", e.to_string()))?;
        Ok(StoredCall {
            call,
            state,
            attempt: u32::try_from(row.attempt).unwrap_or(0),
            epoch: u64::try_from(row.epoch).unwrap_or(0),
            resume_data,
        })
    }

    /// `value` as JSON text, checked to read back ([`storable_json`]).
    fn json_text(
        &self,
        call_id: &str,
        what: &str,
        value: &impl serde::Serialize,
    ) -> Result<String, StoreError> {
        storable_json(call_id, what, value)
    }
}

/// One row of `calls`, as SQLite gives it ([`COLUMNS`]).
struct RawRow {
    call_id: String,
    record: String,
    state: String,
    owner: Option<String>,
    lease_expires_at: Option<i64>,
    attempt: i64,
    resume_data: Option<String>,
    outcome: Option<String>,
    settled_at: Option<i64>,
    epoch: i64,
}

impl RawRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(RawRow {
            call_id: row.get(0)?,
            record: row.get(1)?,
            state: row.get(2)?,
            owner: row.get(3)?,
            lease_expires_at: row.get(4)?,
            attempt: row.get(5)?,
            resume_data: row.get(6)?,
            outcome: row.get(7)?,
            settled_at: row.get(8)?,
            epoch: row.get(9)?,
        })
    }
}

/// A fencing token as SQLite keeps it (a signed 64-bit integer); a token
/// beyond its range matches no row.
fn epoch_value(epoch: u64) -> i64 {
    i64::try_from(epoch).unwrap_or(-1)
}

/// Milliseconds since the Unix epoch (what the table keeps).
fn millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The time `ms` milliseconds after the Unix epoch.
fn time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
