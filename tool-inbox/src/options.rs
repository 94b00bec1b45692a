//! The inbox's limits and allowed origins, each with its default.

use std::time::Duration;

/// The largest request body, in bytes, by default (64 KiB): a decision
/// with its reason, resume data or output.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The most items a page lists, by default.
pub const MAX_PAGE: usize = 100;
/// The longest decline reason, in characters, by default.
pub const MAX_REASON_CHARS: usize = 2_000;

/// How many event streams one principal may hold open, by default.
pub const MAX_STREAMS_PER_PRINCIPAL: usize = 8;
/// How many event streams the inbox holds open at once, all principals
/// together, by default: each holds a connection and a follower of the
/// store's snapshots.
pub const MAX_STREAMS: usize = 256;
/// How often the event stream reads the store's audit log for the changes
/// of other instances, by default (this runtime's own changes show at
/// once): an open page sees another approver's decision within it.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The inbox's settings; see [`Inbox`](crate::Inbox)'s methods.
#[derive(Debug, Clone)]
pub(crate) struct InboxOptions {
    pub(crate) max_body_bytes: usize,
    pub(crate) max_page: usize,
    pub(crate) max_reason_chars: usize,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) max_streams_per_principal: usize,
    pub(crate) max_streams: usize,
    pub(crate) poll_interval: Duration,
}

impl Default for InboxOptions {
    fn default() -> Self {
        InboxOptions {
            max_body_bytes: MAX_BODY_BYTES,
            max_page: MAX_PAGE,
            max_reason_chars: MAX_REASON_CHARS,
            allowed_origins: Vec::new(),
            max_streams_per_principal: MAX_STREAMS_PER_PRINCIPAL,
            max_streams: MAX_STREAMS,
            poll_interval: POLL_INTERVAL,
        }
    }
}
