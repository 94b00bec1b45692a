//! Pending calls in a SQLite file: they survive a restart or a `kill -9`.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::{PendingCall, PendingKind, PendingStore, StoreError};

/// `PRAGMA application_id` of a pending store: "tool" in ASCII.
const APPLICATION_ID: i32 = 0x746F_6F6C;
/// `PRAGMA user_version` of the current layout.
const LAYOUT_VERSION: i32 = 1;
/// How long a write waits for another process holding the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A durable [`PendingStore`] in one SQLite file (WAL mode, synchronous
/// commits; the I/O runs on tokio's blocking pool, off the async workers): pending approvals and suspensions survive a crash of the
/// process, and several runtimes (in one or several processes) can share
/// the file. Taking an entry is one `DELETE ... RETURNING` inside an
/// immediate transaction, so it happens at most once.
///
/// Opening checks the file: a file that is not SQLite, fails SQLite's
/// integrity check or belongs to another program is an error naming the
/// file, and is left untouched. One unreadable record does not stop the
/// store: it is logged with its call id when the store opens and lists,
/// left in place for the operator, and `get` or `take` of that call is an
/// error naming it; every other call is served.
///
/// ```
/// use tool_runtime::{Runtime, SqliteStore};
///
/// let dir = std::env::temp_dir().join(format!("tool-runtime-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("pending.sqlite");
/// let runtime = Runtime::builder().store(SqliteStore::open(&path).unwrap()).build().unwrap();
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert!(runtime.pending().await.unwrap().is_empty());
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

impl PendingStore for SqliteStore {
    fn insert(&self, call: PendingCall) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.blocking(move |file| file.insert(&call))
    }

    fn take(
        &self,
        call_id: &str,
        kind: PendingKind,
    ) -> impl Future<Output = Result<Option<PendingCall>, StoreError>> + Send {
        let call_id = call_id.to_owned();
        self.blocking(move |file| file.take(&call_id, kind))
    }

    fn get(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Option<PendingCall>, StoreError>> + Send {
        let call_id = call_id.to_owned();
        self.blocking(move |file| file.get(&call_id))
    }

    fn list(&self) -> impl Future<Output = Result<Vec<PendingCall>, StoreError>> + Send {
        self.blocking(SqliteFile::list)
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
            reason: format!("the record of call {call_id:?} is unreadable: {e}"),
            source: Some(Box::new(e)),
        };
        match serde_json::from_str::<Record>(record) {
            Ok(record) => record.decode().map_err(corrupt),
            // Written before records kept their values as text.
            Err(_) => serde_json::from_str(record).map_err(corrupt),
        }
    }

    /// The record of `call`: its values as JSON text each, checked to read back.
    fn encode(&self, call: &PendingCall) -> Result<String, StoreError> {
        let io = |reason: String, source: serde_json::Error| StoreError::Io {
            location: self.path.display().to_string(),
            reason,
            source: Some(Box::new(source)),
        };
        let record = Record::encode(call).map_err(|(what, e)| {
            io(
                format!(
                    "cannot store call {:?}: its {what} cannot be read back ({e}); JSON deeper than {} levels is refused",
                    call.call_id,
                    MAX_JSON_DEPTH
                ),
                e,
            )
        })?;
        serde_json::to_string(&record)
            .map_err(|e| io(format!("cannot encode call {:?}: {e}", call.call_id), e))
    }
}

/// The nesting serde_json reads (and so the deepest value a record holds).
const MAX_JSON_DEPTH: usize = 127;

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
}

impl Record {
    fn encode(call: &PendingCall) -> Result<Self, (&'static str, serde_json::Error)> {
        fn text(
            what: &'static str,
            value: &impl serde::Serialize,
        ) -> Result<String, (&'static str, serde_json::Error)> {
            let text = serde_json::to_string(value).map_err(|e| (what, e))?;
            serde_json::from_str::<serde_json::Value>(&text).map_err(|e| (what, e))?;
            Ok(text)
        }
        Ok(Record {
            v: 2,
            call_id: call.call_id.clone(),
            tool_id: call.tool_id.clone(),
            kind: call.kind,
            input: text("arguments", &call.input)?,
            request_context: text("request context", &call.request_context)?,
            messages: text("messages", &call.messages)?,
            payload: call
                .payload
                .as_ref()
                .map(|payload| text("payload", payload))
                .transpose()?,
        })
    }

    fn decode(self) -> Result<PendingCall, serde_json::Error> {
        Ok(PendingCall {
            call_id: self.call_id,
            tool_id: self.tool_id,
            kind: self.kind,
            input: serde_json::from_str(&self.input)?,
            request_context: serde_json::from_str(&self.request_context)?,
            messages: serde_json::from_str(&self.messages)?,
            payload: self.payload.map(|p| serde_json::from_str(&p)).transpose()?,
        })
    }
}

/// Creates the table in a new file, or checks that an existing file is a
/// pending store of this layout.
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
            "CREATE TABLE pending (
                call_id TEXT PRIMARY KEY NOT NULL,
                kind TEXT NOT NULL,
                tool_id TEXT NOT NULL,
                record TEXT NOT NULL
            );
            PRAGMA application_id = {APPLICATION_ID};
            PRAGMA user_version = {LAYOUT_VERSION};"
        ))
        .map_err(err)?;
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

impl SqliteFile {
    fn insert(&self, call: &PendingCall) -> Result<(), StoreError> {
        let record = self.encode(call)?;
        let conn = self.conn();
        match conn.execute(
            "INSERT INTO pending (call_id, kind, tool_id, record) VALUES (?1, ?2, ?3, ?4)",
            params![call.call_id, call.kind.as_str(), call.tool_id, record],
        ) {
            Ok(_) => Ok(()),
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                Err(StoreError::Duplicate {
                    call_id: call.call_id.clone(),
                })
            }
            Err(e) => Err(self.io(e)),
        }
    }

    fn take(&self, call_id: &str, kind: PendingKind) -> Result<Option<PendingCall>, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.io(e))?;
        let record: Option<String> = tx
            .query_row(
                "DELETE FROM pending WHERE call_id = ?1 AND kind = ?2 RETURNING record",
                params![call_id, kind.as_str()],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.io(e))?;
        let Some(record) = record else {
            tx.commit().map_err(|e| self.io(e))?;
            return Ok(None);
        };
        // An unreadable record stays stored (the transaction rolls back on drop).
        let call = self.decode(call_id, &record)?;
        tx.commit().map_err(|e| self.io(e))?;
        Ok(Some(call))
    }

    fn get(&self, call_id: &str) -> Result<Option<PendingCall>, StoreError> {
        let record: Option<String> = self
            .conn()
            .query_row(
                "SELECT record FROM pending WHERE call_id = ?1",
                params![call_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.io(e))?;
        record.map(|r| self.decode(call_id, &r)).transpose()
    }

    fn list(&self) -> Result<Vec<PendingCall>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT call_id, record FROM pending ORDER BY call_id")
            .map_err(|e| self.io(e))?;
        let rows = stmt
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|e| self.io(e))?;
        let mut calls = Vec::new();
        for row in rows {
            let (call_id, record) = row.map_err(|e| self.io(e))?;
            match self.decode(&call_id, &record) {
                Ok(call) => calls.push(call),
                // One bad record must not hide every other call: it is
                // reported, left for the operator, and named by get and take.
                Err(error) => {
                    tracing::error!(call_id, %error, "unreadable pending call left in the store");
                }
            }
        }
        Ok(calls)
    }
}
