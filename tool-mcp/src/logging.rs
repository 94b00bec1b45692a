//! Logging to the client (`logging/setLevel`, `notifications/message`):
//! the log messages a tool writes during its call, at or above the level
//! the session's client set (info until it sets one). MCP's logging is
//! deprecated by SEP-2577 and absent from the 2026-07-28 protocol: such
//! peers get none.
#![allow(
    deprecated,
    reason = "rmcp marks MCP logging deprecated (SEP-2577); older peers still use it"
)]

use std::sync::atomic::{AtomicU8, Ordering};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use serde_json::Value;
use tool_core::LogRecord;

/// One session's logging level.
#[derive(Debug)]
pub(crate) struct SessionLog {
    /// The rank of the least severe level sent ([`rank`]).
    threshold: AtomicU8,
}

impl Default for SessionLog {
    fn default() -> Self {
        SessionLog {
            threshold: AtomicU8::new(rank(LoggingLevel::Info)),
        }
    }
}

impl SessionLog {
    /// `logging/setLevel`: messages at `level` and above are sent from now on.
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.threshold.store(rank(level), Ordering::Relaxed);
    }

    /// The notification for `record` of tool `tool_id`, if its level is sent.
    pub(crate) fn message(
        &self,
        tool_id: &str,
        record: &LogRecord,
    ) -> Option<LoggingMessageNotificationParam> {
        let level = level_of(record.level);
        if rank(level) < self.threshold.load(Ordering::Relaxed) {
            return None;
        }
        // Structured data goes with its message; a plain message alone.
        let data = match &record.data {
            Some(data) => serde_json::json!({ "message": record.message, "data": data }),
            None => Value::String(record.message.clone()),
        };
        Some(notification(tool_id, level, data))
    }

    /// The notification for a custom chunk of tool `tool_id` (`ctx.writer()`):
    /// `{"custom": chunk}` at level info, so that a client tells it from a
    /// log message; none when the client set a level above info.
    pub(crate) fn custom(
        &self,
        tool_id: &str,
        chunk: &Value,
    ) -> Option<LoggingMessageNotificationParam> {
        if rank(LoggingLevel::Info) < self.threshold.load(Ordering::Relaxed) {
            return None;
        }
        let data = serde_json::json!({ "custom": chunk });
        Some(notification(tool_id, LoggingLevel::Info, data))
    }
}

/// A `notifications/message` of tool `tool_id` (its logger).
fn notification(
    tool_id: &str,
    level: LoggingLevel,
    data: Value,
) -> LoggingMessageNotificationParam {
    let mut message = LoggingMessageNotificationParam::new(level, data);
    message.logger = Some(tool_id.to_owned());
    message
}

/// `tracing`'s levels as MCP's (syslog's).
fn level_of(level: tracing::Level) -> LoggingLevel {
    match level {
        tracing::Level::ERROR => LoggingLevel::Error,
        tracing::Level::WARN => LoggingLevel::Warning,
        tracing::Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// Severity order, least severe first.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_below_the_level_set_are_not_sent() {
        let log = SessionLog::default();
        let debug = LogRecord::new(tracing::Level::DEBUG, "details");
        let warn = LogRecord::new(tracing::Level::WARN, "careful");
        assert!(log.message("t", &debug).is_none(), "info until set");
        let sent = log.message("t", &warn).unwrap();
        assert_eq!(
            (sent.level, sent.logger.as_deref()),
            (LoggingLevel::Warning, Some("t"))
        );
        assert_eq!(sent.data, Value::String("careful".into()));
        log.set(LoggingLevel::Debug);
        assert!(log.message("t", &debug).is_some());
        log.set(LoggingLevel::Error);
        assert!(log.message("t", &warn).is_none());
    }

    #[test]
    fn structured_data_is_sent_with_its_message() {
        let log = SessionLog::default();
        let record = LogRecord::new(tracing::Level::WARN, "slow answer")
            .with_data(serde_json::json!({ "ms": 1200 }));
        let sent = log.message("t", &record).unwrap();
        assert_eq!(
            sent.data,
            serde_json::json!({ "message": "slow answer", "data": { "ms": 1200 } })
        );
    }
}
