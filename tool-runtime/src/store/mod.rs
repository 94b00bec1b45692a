//! Where calls that wait for a human decision or for resume data are kept:
//! the [`PendingStore`] trait, an in-memory store and a durable SQLite store
//! (feature `sqlite`).
//!
//! Removal is take-once: [`PendingStore::take`] removes and returns an entry
//! in one atomic step, so an approval or a resume runs a call at most once,
//! even when two runtimes share one store.

mod memory;
mod pending;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use memory::MemoryStore;
pub(crate) use pending::PendingCalls;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::SqliteStore;

/// Why a call is pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PendingKind {
    /// Waiting for `approve` or `decline`.
    Approval,
    /// Suspended by the tool, waiting for `resume`.
    Suspended,
}

impl PendingKind {
    /// `"approval"` or `"suspended"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PendingKind::Approval => "approval",
            PendingKind::Suspended => "suspended",
        }
    }
}

/// A stored call: everything needed to run it later, in this process or
/// in the next one.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::{PendingCall, PendingKind};
///
/// let call = PendingCall::new("call-1", "delete-file", PendingKind::Approval, json!({ "path": "/tmp/x" }));
/// assert_eq!(call.kind, PendingKind::Approval);
/// assert!(call.payload.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call's id (the key).
    pub call_id: String,
    /// The tool to run.
    pub tool_id: String,
    /// Why it waits.
    pub kind: PendingKind,
    /// The validated input.
    pub input: Value,
    /// The JSON values of the request context.
    #[serde(default)]
    pub request_context: Map<String, Value>,
    /// The conversation at the time of the call.
    #[serde(default)]
    pub messages: Vec<Value>,
    /// For a suspended call, what it suspended with.
    #[serde(default)]
    pub payload: Option<Value>,
}

impl PendingCall {
    /// A pending call with no request context, messages or payload.
    pub fn new(
        call_id: impl Into<String>,
        tool_id: impl Into<String>,
        kind: PendingKind,
        input: Value,
    ) -> Self {
        PendingCall {
            call_id: call_id.into(),
            tool_id: tool_id.into(),
            kind,
            input,
            request_context: Map::new(),
            messages: Vec::new(),
            payload: None,
        }
    }
}

/// Why the pending store failed. Every variant names what it is about (the
/// file, the call id), so the message alone tells what to fix.
///
/// Where an underlying error caused it (SQLite's, the file system's, a record
/// that does not parse), it is the [`source`](std::error::Error::source),
/// boxed so that no storage crate's types are part of this API; its message
/// is also in `reason`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store file could not be opened or created.
    #[error("cannot open the pending store {}: {reason}", path.display())]
    Open {
        /// The store file.
        path: PathBuf,
        /// What SQLite or the OS reported.
        reason: String,
        /// The error SQLite or the OS reported, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The file exists but is not a readable pending store (corrupt, or
    /// another program's database). It is left untouched.
    #[error("the pending store {} is corrupt or not a tool-runtime store: {reason}; it was left untouched, move it away or fix it", path.display())]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
        /// The error that showed it (SQLite's, or a record's parse error), if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A pending call with this id is already stored.
    #[error("a pending call with id {call_id:?} is already stored")]
    Duplicate {
        /// The id.
        call_id: String,
    },
    /// Reading or writing failed.
    #[error("the pending store {location} failed: {reason}")]
    Io {
        /// The store (a file path, or `memory`).
        location: String,
        /// What failed.
        reason: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

/// Storage of pending calls, keyed by call id. Every method is async: a
/// store may do I/O (a file, a database server), and the runtime awaits it
/// inside the call's future, never on the thread that built the future.
///
/// Implementations must make [`take`](Self::take) atomic: of any number of
/// concurrent takes of one id (from any number of runtimes sharing the
/// store) at most one returns the entry. A store whose I/O blocks runs it
/// off the async worker threads (as [`SqliteStore`] does, on tokio's
/// blocking pool).
///
/// ```
/// use serde_json::json;
/// use tool_runtime::{MemoryStore, PendingCall, PendingKind, PendingStore};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// store.insert(PendingCall::new("c1", "t", PendingKind::Suspended, json!({}))).await.unwrap();
/// assert!(store.take("c1", PendingKind::Approval).await.unwrap().is_none()); // wrong kind: stays
/// assert!(store.take("c1", PendingKind::Suspended).await.unwrap().is_some());
/// assert!(store.take("c1", PendingKind::Suspended).await.unwrap().is_none()); // taken once
/// # });
/// ```
pub trait PendingStore: Send + Sync + 'static {
    /// Stores a call; fails with [`StoreError::Duplicate`] if its id is taken.
    fn insert(&self, call: PendingCall) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Removes and returns the call `call_id` if it is pending for `kind`;
    /// an entry of the other kind stays stored.
    fn take(
        &self,
        call_id: &str,
        kind: PendingKind,
    ) -> impl Future<Output = Result<Option<PendingCall>, StoreError>> + Send;

    /// The call `call_id`, left in place.
    fn get(
        &self,
        call_id: &str,
    ) -> impl Future<Output = Result<Option<PendingCall>, StoreError>> + Send;

    /// Every pending call, ordered by call id.
    fn list(&self) -> impl Future<Output = Result<Vec<PendingCall>, StoreError>> + Send;
}

/// A boxed store future, for the object-safe form of [`PendingStore`].
type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// [`PendingStore`] in a form that can be a trait object (`Arc<dyn ..>`):
/// what the runtime keeps, for any store it is given.
pub(crate) trait DynPendingStore: Send + Sync + 'static {
    fn insert(&self, call: PendingCall) -> StoreFuture<'_, ()>;
    fn take<'a>(
        &'a self,
        call_id: &'a str,
        kind: PendingKind,
    ) -> StoreFuture<'a, Option<PendingCall>>;
    fn get<'a>(&'a self, call_id: &'a str) -> StoreFuture<'a, Option<PendingCall>>;
    fn list(&self) -> StoreFuture<'_, Vec<PendingCall>>;
}

impl<S: PendingStore> DynPendingStore for S {
    fn insert(&self, call: PendingCall) -> StoreFuture<'_, ()> {
        Box::pin(PendingStore::insert(self, call))
    }

    fn take<'a>(
        &'a self,
        call_id: &'a str,
        kind: PendingKind,
    ) -> StoreFuture<'a, Option<PendingCall>> {
        Box::pin(PendingStore::take(self, call_id, kind))
    }

    fn get<'a>(&'a self, call_id: &'a str) -> StoreFuture<'a, Option<PendingCall>> {
        Box::pin(PendingStore::get(self, call_id))
    }

    fn list(&self) -> StoreFuture<'_, Vec<PendingCall>> {
        Box::pin(PendingStore::list(self))
    }
}
