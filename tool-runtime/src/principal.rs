//! Who decides on a stored call: a [`Principal`] (a person or a service,
//! with the groups the application puts them in, or the system itself),
//! and the [`Decider`] a decision is taken as: a principal on one version
//! of the call.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;

/// Who takes a decision: a person or a service as the application
/// authenticated them, with the groups it puts them in (what an approval
/// requirement "from a group" counts), or the system itself
/// ([`Principal::system`]): code that decides without a person names
/// itself so, and the audit log records it as such.
///
/// ```
/// use tool_runtime::Principal;
///
/// let alice = Principal::new("alice").in_group("finance");
/// assert_eq!(alice.id(), "alice");
/// assert!(alice.is_in("finance") && !alice.is_in("support"));
/// assert!(!alice.is_system());
///
/// let nightly = Principal::system("nightly-reconciliation");
/// assert!(nightly.is_system());
/// assert_eq!(nightly.to_string(), "system:nightly-reconciliation");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    groups: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    system: bool,
}

impl Principal {
    /// The person or service `id` (a user name, an email, a service
    /// account), as the application names them.
    pub fn new(id: impl Into<String>) -> Self {
        Principal {
            id: id.into(),
            groups: Vec::new(),
            system: false,
        }
    }

    /// The system itself, named `name` (a job, a rule engine): what code
    /// that decides without a person names. It is never a call's requester,
    /// so separation of duties does not refuse it; the audit log records
    /// its decisions as `system:<name>`.
    pub fn system(name: impl Into<String>) -> Self {
        Principal {
            id: name.into(),
            groups: Vec::new(),
            system: true,
        }
    }

    /// `self`, also in `group` (as the application's authentication says).
    #[must_use]
    pub fn in_group(mut self, group: impl Into<String>) -> Self {
        let group = group.into();
        if !self.groups.contains(&group) {
            self.groups.push(group);
        }
        self
    }

    /// Its id (for the system, the name given).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The groups it is in.
    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    /// Whether it is in `group`.
    pub fn is_in(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Whether it is the system rather than a person or service.
    pub fn is_system(&self) -> bool {
        self.system
    }
}

/// How the audit log names it: its id, or `system:<name>`.
impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.system {
            write!(f, "system:{}", self.id)
        } else {
            f.write_str(&self.id)
        }
    }
}

/// Who takes a decision, and on which version of the item: for
/// [`Runtime::decide_as`](crate::Runtime::decide_as). The digest is the
/// one the listing gave ([`StoredCall::digest`](crate::StoredCall::digest)):
/// a person decides on what they were shown, never on a call that changed
/// since. The two are of different types, so they cannot be swapped.
///
/// ```
/// use tool_runtime::{Decider, Digest, Principal};
///
/// let decider = Decider::new(Principal::new("alice"), Digest::new("sha256:0f"));
/// assert_eq!(decider.principal.id(), "alice");
/// assert_eq!(decider.digest.as_str(), "sha256:0f");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decider {
    /// Who decides.
    pub principal: Principal,
    /// The digest of the item as it was read.
    pub digest: Digest,
}

impl Decider {
    /// `principal` deciding on the item with `digest`.
    pub fn new(principal: Principal, digest: Digest) -> Self {
        Decider { principal, digest }
    }
}
