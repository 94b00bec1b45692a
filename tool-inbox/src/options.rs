//! The inbox's limits and allowed origins, each with its default.

/// The largest request body, in bytes, by default (64 KiB): a decision
/// with its reason, resume data or output.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The most items a page lists, by default.
pub const MAX_PAGE: usize = 100;
/// The longest decline reason, in characters, by default.
pub const MAX_REASON_CHARS: usize = 2_000;

/// The inbox's settings; see [`Inbox`](crate::Inbox)'s methods.
#[derive(Debug, Clone)]
pub(crate) struct InboxOptions {
    pub(crate) max_body_bytes: usize,
    pub(crate) max_page: usize,
    pub(crate) max_reason_chars: usize,
    pub(crate) allowed_origins: Vec<String>,
}

impl Default for InboxOptions {
    fn default() -> Self {
        InboxOptions {
            max_body_bytes: MAX_BODY_BYTES,
            max_page: MAX_PAGE,
            max_reason_chars: MAX_REASON_CHARS,
            allowed_origins: Vec::new(),
        }
    }
}
