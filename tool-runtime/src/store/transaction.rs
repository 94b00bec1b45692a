//! Transactional calls: a tool's database work done in the store's own
//! transaction, committed together with the call's settlement and the
//! fencing check, or not at all.
//!
//! A store that can run tools in its transactions answers
//! [`CallStore::begin_transaction`](super::CallStore::begin_transaction)
//! with a [`StoreTransaction`]: the runtime gives its handle to the tool
//! (through the call's extensions) and, once the tool returned, commits it
//! with the outcome. PostgreSQL's handle is
//! [`PostgresTransaction`](super::PostgresTransaction), SQLite's
//! [`SqliteTransaction`](super::SqliteTransaction); the memory store has
//! none, and a runtime with a transactional tool refuses to build on it.

use std::future::Future;
use std::pin::Pin;

use tool_core::Extensions;

use super::{Notification, Settlement, StoreError};

/// What became of a transactional call's commit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Committed {
    /// The tool's work and the settlement are in the store, together.
    Yes,
    /// The call's claim is no longer the one with the token given (another
    /// instance took it over): nothing was committed.
    Superseded,
    /// The tool's work could not be committed (a handle outlived the tool,
    /// or its deferred work failed): nothing was committed; why.
    Refused(String),
}

/// A transactional call's handle was used after its tool returned: the
/// call's transaction had ended (committed, rolled back, or refused because
/// the handle outlived the tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the call's transaction has ended: its handle was used after the tool returned")]
pub struct TransactionEnded;

/// The future a [`StoreTransaction`] commits in.
pub type CommitFuture = Pin<Box<dyn Future<Output = Result<Committed, StoreError>> + Send>>;

/// One transactional call's transaction, as a store runs it: a handle the
/// tool uses, and the commit of its work with the call's settlement.
/// Dropping it without committing rolls the work back.
///
/// A store of another crate implements it to run transactional tools;
/// the runtime only calls it.
pub trait StoreTransaction: Send + 'static {
    /// Gives the tool its handle: adds it to the call's extensions, where
    /// the tool finds it by type (`ctx.extension::<Handle>()`).
    fn add_handle(&self, extensions: &mut Extensions);

    /// Settles the running call `call_id` with `settlement` if its claim is
    /// still the one with fencing token `epoch` (as
    /// [`CallStore::finish`](super::CallStore::finish)), and commits the
    /// tool's work with it in one transaction, with `notifications` into the
    /// outbox ([`CallStore::finish_notifying`](super::CallStore::finish_notifying));
    /// otherwise commits nothing.
    fn commit(
        self: Box<Self>,
        call_id: String,
        epoch: u64,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> CommitFuture;
}
