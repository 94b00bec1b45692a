//! A check a claimed stored call passes right before its tool runs
//! ([`RuntimeBuilder::before_run`](crate::RuntimeBuilder::before_run)):
//! what an engine that takes a step again after a crash (tool-restate) asks
//! of its own records, so that a step's second execution treats the call as
//! interrupted instead of running a tool that is not retry-safe twice.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::store::{StoreError, StoredCall};

/// What a [`before_run`](crate::RuntimeBuilder::before_run) check says of
/// a claimed call about to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunCheck {
    /// Run it.
    Run,
    /// An earlier execution of this run began and was lost without a
    /// trace the store has: recover the call as an interrupted one (settled
    /// as interrupted, reconciled, or run again where its tool allows), as
    /// [`Runtime::recover`](crate::Runtime::recover) does.
    Interrupted,
}

/// The check's future.
type Checking = Pin<Box<dyn Future<Output = Result<RunCheck, StoreError>> + Send>>;

/// The check, shared by the runtime's clones.
#[derive(Clone)]
pub(crate) struct BeforeRun(Arc<dyn Fn(&StoredCall) -> Checking + Send + Sync>);

impl BeforeRun {
    pub(crate) fn new<F, Fut>(check: F) -> Self
    where
        F: Fn(&StoredCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RunCheck, StoreError>> + Send + 'static,
    {
        BeforeRun(Arc::new(move |stored: &StoredCall| -> Checking {
            Box::pin(check(stored))
        }))
    }

    /// What the check says of `stored`, claimed and about to run.
    pub(crate) fn check(&self, stored: &StoredCall) -> Checking {
        (self.0)(stored)
    }
}

impl fmt::Debug for BeforeRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BeforeRun(..)")
    }
}

/// Which run of a claimed call this is: a first one passes the check, a
/// recovery's does not (it is the answer to the check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunKind {
    First,
    Recovery,
}
