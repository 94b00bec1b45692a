//! The 2025-11-25 hook of the stdio transport (`crate::stdio`): what
//! [`inbound`], [`rename`] and [`outbound_initialize`] do over HTTP, for
//! the one session of a connection, a line at a time.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::wire::{inbound, outbound_initialize, rename};
use crate::stdio::LineHook;

/// Longest line the stdio edge reads as a message to look into (longer
/// ones pass unchanged).
const MAX_LINE: usize = 4 * 1024 * 1024;

/// The 2025-11-25 rewriting of one stdio connection's lines.
#[derive(Debug, Default)]
pub(crate) struct StdioEdge {
    /// Whether the session's `initialize` passed: a session has one, and
    /// the lines after it are not searched for another.
    initialized: AtomicBool,
    /// Whether that `initialize` declared tasks: the session's task
    /// requests are renamed.
    declared: AtomicBool,
    /// The id of the `initialize` that declared tasks, until its result passed.
    initialize: Mutex<Option<Value>>,
}

impl LineHook for StdioEdge {
    fn inbound(&self, line: &[u8]) -> Option<Vec<u8>> {
        // Only an `initialize` or a message of a session that declared
        // tasks can need a rewrite: any other line passes unparsed (the
        // method's name, unescaped as every client writes it, tells).
        let declared_tasks = self.declared.load(Ordering::SeqCst);
        let may_initialize = || {
            !self.initialized.load(Ordering::SeqCst)
                && std::str::from_utf8(line).is_ok_and(|text| text.contains("\"initialize\""))
        };
        if line.len() > MAX_LINE || !(declared_tasks || may_initialize()) {
            return None;
        }
        let mut message = serde_json::from_slice::<Value>(line).ok()?;
        if message.get("method").and_then(Value::as_str) == Some("initialize") {
            self.initialized.store(true, Ordering::SeqCst);
        }
        let seen = inbound(&mut message);
        if seen.declares_tasks {
            *self.initialize.lock().unwrap_or_else(|e| e.into_inner()) = message.get("id").cloned();
            self.declared.store(true, Ordering::SeqCst);
        }
        let renamed =
            self.declared.load(Ordering::SeqCst) && !seen.declares_tasks && rename(&mut message);
        (seen.changed || renamed).then(|| format!("{message}\n").into_bytes())
    }

    fn outbound(&self, line: &[u8]) -> Option<Vec<u8>> {
        let id = self
            .initialize
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        let mut message = serde_json::from_slice::<Value>(line).ok()?;
        if message.get("id") != Some(&id) {
            return None;
        }
        *self.initialize.lock().unwrap_or_else(|e| e.into_inner()) = None;
        outbound_initialize(&mut message).then(|| format!("{message}\n").into_bytes())
    }
}
