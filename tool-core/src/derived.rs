//! Data derived from a tool once and cached in it: a type-erased slot per
//! type, so an add-on (the provider exports, or a crate of its own) caches
//! what it computes from a tool without the tool knowing about it.

use std::any::Any;
use std::sync::OnceLock;

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
    pub(crate) fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> &T {
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
