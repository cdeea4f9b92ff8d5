//! The record budget: `max_size`, kept exact across every shard that shares it.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How many records may be held, and how many are. One budget is shared by all the
/// shards of a backend, so the limit is global and exact: a slot is taken before a record
/// is inserted and given back when it is removed.
#[derive(Debug)]
pub(crate) struct Capacity {
    max_size: usize,
    held: AtomicUsize,
}

impl Capacity {
    pub(crate) fn new(max_size: usize) -> Capacity {
        Capacity {
            max_size,
            held: AtomicUsize::new(0),
        }
    }

    pub(crate) fn max_size(&self) -> usize {
        self.max_size
    }

    /// Records held by every store sharing this budget.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Takes a slot; false when all `max_size` are taken.
    pub(crate) fn try_take(&self) -> bool {
        // Relaxed is enough: the counter guards a number, and publishes no data.
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held < self.max_size).then_some(held + 1)
            })
            .is_ok()
    }

    /// Gives back `count` slots.
    pub(crate) fn give_back(&self, count: usize) {
        self.held.fetch_sub(count, Ordering::Relaxed);
    }
}
