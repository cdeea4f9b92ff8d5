//! The deadline index: which record expires next, without scanning the store.
//!
//! A min-heap of `(deadline, slot)` entries. Changing a record's deadline pushes a new
//! entry instead of moving the old one (a renew or a completion pushes a later deadline,
//! which lands at the bottom of the heap in O(1)); the old entry becomes stale and is
//! skipped when it surfaces. The owner says which entries are current, and the index
//! keeps two promises on top of that:
//!
//! - the top entry is always current (after [`DeadlineIndex::settle`]), so the next
//!   deadline is exact;
//! - stale entries never outnumber current ones by much: when they do, the heap is
//!   rebuilt from the records, so its size stays proportional to the store's.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::stamp::Stamp;

/// A slot number in the store's record table.
pub(crate) type Slot = u32;

#[derive(Default)]
pub(crate) struct DeadlineIndex {
    heap: BinaryHeap<Reverse<(Stamp, Slot)>>,
}

impl DeadlineIndex {
    /// Records that `slot` is now due to be removed after `deadline`. A deadline of
    /// [`Stamp::NEVER`] is not indexed: nothing ever has to wake for it.
    pub(crate) fn push(&mut self, deadline: Stamp, slot: Slot) {
        if deadline != Stamp::NEVER {
            self.heap.push(Reverse((deadline, slot)));
        }
    }

    /// Drops stale entries from the top, so [`DeadlineIndex::next`] is exact, and rebuilds
    /// the heap from `current` when stale entries outnumber `live` records.
    pub(crate) fn settle(
        &mut self,
        live: usize,
        is_current: impl Fn(Stamp, Slot) -> bool,
        current: impl FnOnce() -> Vec<(Stamp, Slot)>,
    ) {
        if self.heap.len() > 2 * live + 64 {
            let entries = current()
                .into_iter()
                .filter(|&(deadline, _)| deadline != Stamp::NEVER);
            self.heap = entries.map(Reverse).collect();
        }
        while let Some(&Reverse((deadline, slot))) = self.heap.peek() {
            if is_current(deadline, slot) {
                break;
            }
            self.heap.pop();
        }
    }

    /// The earliest current deadline, once settled.
    pub(crate) fn next(&self) -> Option<Stamp> {
        self.heap.peek().map(|&Reverse((deadline, _))| deadline)
    }

    /// Takes the top entry if its deadline is before `now`. It may be stale: the caller
    /// checks.
    pub(crate) fn pop_before(&mut self, now: Stamp) -> Option<(Stamp, Slot)> {
        match self.heap.peek() {
            Some(&Reverse((deadline, _))) if deadline < now => {
                self.heap.pop().map(|Reverse(entry)| entry)
            }
            _ => None,
        }
    }

    /// Entries held, stale ones included (for tests of the size bound).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}
