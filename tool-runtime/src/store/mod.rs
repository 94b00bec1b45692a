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

use std::path::PathBuf;

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

/// Storage of pending calls, keyed by call id.
///
/// Implementations must make [`take`](Self::take) atomic: of any number of
/// concurrent takes of one id (from any number of runtimes sharing the
/// store) at most one returns the entry. Calls are short; a networked
/// store may block the calling thread (use `tokio::task::block_in_place`).
///
/// ```
/// use serde_json::json;
/// use tool_runtime::{MemoryStore, PendingCall, PendingKind, PendingStore};
///
/// let store = MemoryStore::new();
/// store.insert(&PendingCall::new("c1", "t", PendingKind::Suspended, json!({}))).unwrap();
/// assert!(store.take("c1", PendingKind::Approval).unwrap().is_none()); // wrong kind: stays
/// assert!(store.take("c1", PendingKind::Suspended).unwrap().is_some());
/// assert!(store.take("c1", PendingKind::Suspended).unwrap().is_none()); // taken once
/// ```
pub trait PendingStore: Send + Sync + 'static {
    /// Stores a call; fails with [`StoreError::Duplicate`] if its id is taken.
    fn insert(&self, call: &PendingCall) -> Result<(), StoreError>;

    /// Removes and returns the call `call_id` if it is pending for `kind`;
    /// an entry of the other kind stays stored.
    fn take(&self, call_id: &str, kind: PendingKind) -> Result<Option<PendingCall>, StoreError>;

    /// The call `call_id`, left in place.
    fn get(&self, call_id: &str) -> Result<Option<PendingCall>, StoreError>;

    /// Every pending call, ordered by call id.
    fn list(&self) -> Result<Vec<PendingCall>, StoreError>;
}
