//! Times as the stores keep them: milliseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// `at` in milliseconds since the Unix epoch (0 before it).
pub(crate) fn epoch_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn epoch_ms_now() -> u64 {
    epoch_ms(SystemTime::now())
}
