//! Data derived from a tool once and cached in it: a type-erased slot per
//! type, so an add-on (the provider exports, or a crate of its own) caches
//! what it computes from a tool without the tool knowing about it.

use std::any::Any;
use std::sync::OnceLock;

use crate::tool::Tool;

/// Values derived from one tool, at most one per type, shared by the tool's
/// clones.
///
/// An append-only list of `OnceLock<T>` cells: a lookup walks it (a handful
/// of types at most), a missing type is appended at the tail, and each value
/// is computed once, inside its own cell, so computing one value blocks only
/// callers waiting for that same value.
#[derive(Default)]
pub(crate) struct Derived {
    head: OnceLock<Box<Node>>,
}

struct Node {
    /// An `OnceLock<T>` for the type this node holds.
    cell: Box<dyn Any + Send + Sync>,
    next: OnceLock<Box<Node>>,
}

impl Derived {
    fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> &T {
        let mut link = &self.head;
        loop {
            let node = link.get_or_init(|| {
                Box::new(Node {
                    cell: Box::new(OnceLock::<T>::new()),
                    next: OnceLock::new(),
                })
            });
            if let Some(cell) = node.cell.downcast_ref::<OnceLock<T>>() {
                return cell.get_or_init(init);
            }
            link = &node.next;
        }
    }
}

impl Tool {
    /// The tool's value of type `T`, computed by `init` on the first call
    /// for `T` and cached in the tool: clones share it, later calls are a
    /// lookup. For add-ons that derive something from a tool once, such as
    /// its provider exports (`Tool::export`, feature `provider`).
    ///
    /// The cache is keyed by type, so an add-on should use a type of its
    /// own (a private newtype) rather than a shared one like `String`.
    /// Concurrent first calls for the same `T` run `init` once and wait for
    /// it; `init` must not ask the same tool for the same `T` (that
    /// deadlocks, as with [`OnceLock`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// struct PropertyCount(usize);
    ///
    /// let tool = Tool::builder("weather")
    ///     .description("Get the weather")
    ///     .input_schema(json!({ "type": "object", "properties": { "city": { "type": "string" } } }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build()
    ///     .unwrap();
    ///
    /// let count = |tool: &Tool| {
    ///     let properties = tool.definition().input_schema["properties"].as_object().map_or(0, |p| p.len());
    ///     PropertyCount(properties)
    /// };
    /// let first = tool.derived(|| count(&tool));
    /// assert_eq!(first.0, 1);
    /// // Cached: a clone sees the same value, `init` does not run again.
    /// let clone = tool.clone();
    /// assert!(std::ptr::eq(first, clone.derived::<PropertyCount>(|| unreachable!())));
    /// ```
    pub fn derived<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> &T {
        self.inner.derived.get_or_init(init)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::Derived;

    #[test]
    fn each_type_is_computed_once_and_kept_apart() {
        let derived = Derived::default();
        assert_eq!(*derived.get_or_init(|| 1_u32), 1);
        assert_eq!(derived.get_or_init(|| "text"), &"text");
        assert_eq!(*derived.get_or_init(|| 2_u32), 1);
        assert_eq!(*derived.get_or_init(|| 3_u64), 3);
        assert_eq!(derived.get_or_init(|| "other"), &"text");
    }

    #[test]
    fn concurrent_first_calls_run_init_once() {
        let derived = Arc::new(Derived::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (derived, runs) = (derived.clone(), runs.clone());
                std::thread::spawn(move || {
                    // Half the threads race on another type first.
                    if i % 2 == 0 {
                        derived.get_or_init(|| i as u8);
                    }
                    *derived.get_or_init(|| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        7_u64
                    })
                })
            })
            .collect();
        for thread in threads {
            assert_eq!(thread.join().unwrap(), 7);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
