//! The deadline index: which record expires next, without scanning the store.
//!
//! Each [`Entry`] says that the record in a slot is due to go after a deadline. Changing a
//! record's deadline adds a new entry rather than searching for the old one, which becomes
//! stale and is skipped when it surfaces (unless it can be taken back at once, see
//! [`DeadlineIndex::reschedule`]). The owner says which entries are current, and the
//! index keeps two promises on top of that:
//!
//! - the earliest entry is always current (after [`DeadlineIndex::prune`]), so the next
//!   deadline is exact;
//! - stale entries never outnumber current ones by much: when they do, the index is
//!   rebuilt from the records, so its size stays proportional to the store's.
//!
//! # Why runs and not only a heap
//!
//! Deadlines are almost always `now + a constant`: every claim of a service uses the same
//! lease, every completion the same TTL. Each such stream arrives already sorted, so the
//! index keeps a few sorted runs (queues whose deadlines never decrease) and appends each
//! new deadline to the run it extends best; taking the earliest entry looks at the runs'
//! fronts only. Both are O(1), against O(log n) and a walk down a large heap (cache
//! misses, once the store holds a million records) for a binary heap. A deadline that
//! extends no run while all [`MAX_RUNS`] are in use goes to a binary heap, so arbitrary
//! deadlines still cost no more than O(log n).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::store::keyhash::KeyHash;
use crate::store::stamp::Stamp;

/// A slot number in the store's record table.
pub(crate) type Slot = u32;

/// How many sorted runs the index keeps before falling back to the heap: enough for a
/// lease stream, a TTL stream and a renewal stream, with room for one more.
const MAX_RUNS: usize = 4;

/// The record in `slot` is due to be removed after `deadline`. Entries order by deadline
/// first. `hash` is the record's key hash, carried in what would otherwise be padding, so
/// removing the record never hashes its key again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    pub(crate) deadline: Stamp,
    pub(crate) slot: Slot,
    pub(crate) hash: KeyHash,
}

/// Where the earliest entry lives: a run's index, or [`HEAP`].
type Source = u8;

const HEAP: Source = MAX_RUNS as Source;

/// What `earliest` holds when the index is empty: later than any indexed entry, since
/// [`Stamp::NEVER`] is never indexed.
const NONE: Stamp = Stamp::NEVER;

/// The back of an empty run: before every entry, so an empty run takes anything.
const EMPTY_RUN: Entry = Entry {
    deadline: Stamp::UNSET,
    slot: 0,
    hash: KeyHash::ZERO,
};

/// What `earliest` holds when the index is empty (its deadline is [`NONE`]).
const NO_ENTRY: Entry = Entry {
    deadline: NONE,
    slot: 0,
    hash: KeyHash::ZERO,
};

pub(crate) struct DeadlineIndex {
    /// Each run's deadlines never decrease from front to back. An emptied run keeps its
    /// memory and takes the next deadline that extends no other run.
    runs: [VecDeque<Entry>; MAX_RUNS],
    /// Each run's last entry, [`EMPTY_RUN`] (before every entry) when it is empty: what
    /// a push compares against, kept apart so the search reads one array.
    backs: [Entry; MAX_RUNS],
    /// Entries that extend no run.
    heap: BinaryHeap<Reverse<Entry>>,
    /// Entries in the runs and the heap together, stale ones included.
    len: usize,
    /// The earliest entry (its deadline is [`NONE`] if there is none) and where it
    /// lives, kept up to date by every change: every store operation looks at it.
    earliest: Entry,
    earliest_in: Source,
}

impl Default for DeadlineIndex {
    fn default() -> DeadlineIndex {
        DeadlineIndex {
            runs: Default::default(),
            backs: [EMPTY_RUN; MAX_RUNS],
            heap: BinaryHeap::new(),
            len: 0,
            earliest: NO_ENTRY,
            earliest_in: HEAP,
        }
    }
}

impl DeadlineIndex {
    /// Adds `entry`. A deadline of [`Stamp::NEVER`] is not indexed: nothing ever has to
    /// wake for it.
    pub(crate) fn push(&mut self, entry: Entry) {
        if entry.deadline == Stamp::NEVER {
            return;
        }
        self.len += 1;
        // The best run ends latest among those ending at or before the entry, so that
        // runs stay apart (patience sorting). An empty run's back is before everything,
        // so it is chosen only when no other run fits. Runs are sorted by whole entries,
        // deadline first, the order the earliest entry is judged by.
        let mut best = HEAP;
        let mut best_back = EMPTY_RUN;
        for (index, &back) in self.backs.iter().enumerate() {
            if back <= entry && back >= best_back {
                best = index as Source;
                best_back = back;
            }
        }
        if best == HEAP {
            self.heap.push(Reverse(entry));
        } else {
            self.runs[usize::from(best)].push_back(entry);
            self.backs[usize::from(best)] = entry;
        }
        // An entry earlier than every other one is at its run's front, or the heap's top.
        if entry < self.earliest {
            self.earliest = entry;
            self.earliest_in = best;
        }
    }

    /// Moves `old`'s record to `deadline`: what a renewal, a completion or a reclaim
    /// does.
    ///
    /// When `old` is the last entry its run received (a claim that completes or renews
    /// before any other deadline was indexed after it: the usual case for short
    /// operations), it is changed in place (moving earlier) or taken back (moving later)
    /// instead of being left to go stale, so the index does not grow and nothing has to
    /// skip it later. Otherwise it goes stale as usual.
    pub(crate) fn reschedule(&mut self, old: Entry, deadline: Stamp) {
        let new = Entry { deadline, ..old };
        let Some(index) = self.last_in_run(old) else {
            self.push(new);
            return;
        };
        let run = &mut self.runs[index];
        let before = run.len().checked_sub(2).map(|at| run[at]);
        // In place only when moving earlier (a completion with a short TTL): a later
        // deadline belongs to another stream, whose run the push below finds.
        let fits = new <= old && before.is_none_or(|before| before <= new);
        if fits {
            *run.back_mut().expect("`old` is in this run") = new;
            self.backs[index] = new;
        } else {
            run.pop_back();
            self.backs[index] = run.back().copied().unwrap_or(EMPTY_RUN);
            self.len -= 1;
        }
        if self.earliest_in == index as Source && self.earliest == old {
            if fits && before.is_none() {
                // `old` was alone in its run and earlier than everything: so is `new`.
                self.earliest = new;
            } else {
                self.refresh_earliest();
            }
        } else if fits && new < self.earliest {
            self.earliest = new;
            self.earliest_in = index as Source;
        }
        if !fits {
            self.push(new);
        }
    }

    /// The run whose last entry is `old`, if any.
    fn last_in_run(&self, old: Entry) -> Option<usize> {
        if old.deadline == Stamp::NEVER {
            return None;
        }
        (0..MAX_RUNS).find(|&index| self.backs[index] == old && !self.runs[index].is_empty())
    }

    /// Drops stale entries from the front, so [`DeadlineIndex::next`] is exact, and
    /// rebuilds the index from `current` when stale entries outnumber `live` records.
    pub(crate) fn prune(
        &mut self,
        live: usize,
        is_current: impl Fn(&Entry) -> bool,
        current: impl FnOnce() -> Vec<Entry>,
    ) {
        if self.len > 2 * live + 64 {
            self.rebuild(current());
        }
        while self.earliest.deadline != NONE && !is_current(&self.earliest) {
            self.take_earliest();
        }
    }

    /// The earliest current deadline, once pruned.
    pub(crate) fn next(&self) -> Option<Stamp> {
        (self.earliest.deadline != NONE).then_some(self.earliest.deadline)
    }

    /// Takes the earliest entry if its deadline is before `now`. It may be stale: the
    /// caller checks.
    pub(crate) fn pop_before(&mut self, now: Stamp) -> Option<Entry> {
        // `NONE` is never before anything.
        (self.earliest.deadline < now).then(|| self.take_earliest())
    }

    /// Entries held, stale ones included (for tests of the size bound).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Takes the earliest entry (there is one) and finds the next earliest.
    fn take_earliest(&mut self) -> Entry {
        let entry = self.earliest;
        if self.earliest_in == HEAP {
            self.heap.pop();
        } else {
            let index = usize::from(self.earliest_in);
            let run = &mut self.runs[index];
            run.pop_front();
            if run.is_empty() {
                self.backs[index] = EMPTY_RUN;
            }
        }
        self.len -= 1;
        self.refresh_earliest();
        entry
    }

    fn refresh_earliest(&mut self) {
        let (mut earliest, mut earliest_in) = match self.heap.peek() {
            Some(&Reverse(top)) => (top, HEAP),
            // A constant, not `DeadlineIndex::default().earliest`: building (and dropping)
            // a whole empty index here showed up in profiles of every purge.
            None => (NO_ENTRY, HEAP),
        };
        for (index, run) in self.runs.iter().enumerate() {
            if let Some(&front) = run.front()
                && front < earliest
            {
                earliest = front;
                earliest_in = index as Source;
            }
        }
        self.earliest = earliest;
        self.earliest_in = earliest_in;
    }

    /// Replaces every entry with `entries` (the current ones), as one sorted run.
    pub(crate) fn rebuild(&mut self, mut entries: Vec<Entry>) {
        entries.retain(|entry| entry.deadline != Stamp::NEVER);
        entries.sort_unstable();
        *self = DeadlineIndex::default();
        self.len = entries.len();
        if let Some(&last) = entries.last() {
            self.backs[0] = last;
        }
        self.runs[0] = VecDeque::from(entries);
        self.refresh_earliest();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(deadline: i64, slot: Slot) -> Entry {
        Entry {
            deadline: Stamp::from_nanos(deadline),
            slot,
            hash: KeyHash::ZERO,
        }
    }

    /// Every entry of the index, in the order they are taken, as (deadline, slot).
    fn drain(index: &mut DeadlineIndex) -> Vec<(i64, Slot)> {
        let mut taken = Vec::new();
        while let Some(entry) = index.pop_before(Stamp::NEVER) {
            taken.push((entry.deadline.nanos(), entry.slot));
        }
        assert_eq!(index.len(), 0);
        assert_eq!(index.next(), None);
        taken
    }

    fn runs_in_use(index: &DeadlineIndex) -> usize {
        index.runs.iter().filter(|run| !run.is_empty()).count()
    }

    #[test]
    fn sorted_streams_take_one_run_each_and_come_out_in_order() {
        let mut index = DeadlineIndex::default();
        // A lease stream (now + 90) and a TTL stream (now + 1000), interleaved.
        for now in 0..100 {
            index.push(entry(now + 90, now as Slot));
            index.push(entry(now + 1_000, now as Slot));
        }
        assert_eq!(runs_in_use(&index), 2);
        assert!(index.heap.is_empty());
        let taken = drain(&mut index);
        assert_eq!(taken.len(), 200);
        assert!(taken.is_sorted(), "{taken:?}");
    }

    #[test]
    fn deadlines_in_any_order_come_out_sorted() {
        let mut index = DeadlineIndex::default();
        // A fixed pseudo-random permutation: far more descents than runs.
        let deadlines: Vec<i64> = (0..1_000).map(|i| (i * 7_919) % 1_009).collect();
        for (slot, &deadline) in deadlines.iter().enumerate() {
            index.push(entry(deadline, slot as Slot));
        }
        assert!(!index.heap.is_empty(), "the heap takes what no run extends");
        let mut expected: Vec<(i64, Slot)> = deadlines
            .iter()
            .enumerate()
            .map(|(slot, &deadline)| (deadline, slot as Slot))
            .collect();
        expected.sort_unstable();
        assert_eq!(drain(&mut index), expected);
    }

    #[test]
    fn rescheduling_a_lone_last_entry_changes_it_in_place() {
        let mut index = DeadlineIndex::default();
        index.push(entry(100, 1));
        index.reschedule(entry(100, 1), Stamp::from_nanos(50));
        assert_eq!(index.len(), 1);
        assert_eq!(index.next(), Some(Stamp::from_nanos(50)));
        // Later: taken back and pushed again, still one entry.
        index.reschedule(entry(50, 1), Stamp::from_nanos(70));
        assert_eq!(index.len(), 1);
        assert_eq!(index.next(), Some(Stamp::from_nanos(70)));
        assert_eq!(drain(&mut index), [(70, 1)]);
    }

    #[test]
    fn rescheduling_a_last_entry_keeps_its_run_sorted() {
        let mut index = DeadlineIndex::default();
        index.push(entry(100, 1));
        index.push(entry(200, 2));
        // Earlier, but not earlier than its predecessor: changed in place.
        index.reschedule(entry(200, 2), Stamp::from_nanos(150));
        assert_eq!(index.len(), 2);
        assert_eq!(index.runs.iter().map(VecDeque::len).max(), Some(2));
        // Earlier than its predecessor: taken back and pushed elsewhere.
        index.reschedule(entry(150, 2), Stamp::from_nanos(50));
        assert_eq!(index.len(), 2);
        assert_eq!(index.next(), Some(Stamp::from_nanos(50)));
        assert_eq!(drain(&mut index), [(50, 2), (100, 1)]);
    }

    #[test]
    fn streams_stay_in_their_runs_when_claims_complete_in_order() {
        let mut index = DeadlineIndex::default();
        // Claim (lease deadline now + 90), then complete (TTL deadline now + 1000).
        for now in 0..100 {
            index.push(entry(now + 90, now as Slot));
            index.reschedule(entry(now + 90, now as Slot), Stamp::from_nanos(now + 1_000));
        }
        assert_eq!(index.len(), 100, "no stale lease entries");
        assert!(index.heap.is_empty());
        assert_eq!(runs_in_use(&index), 1);
        let taken = drain(&mut index);
        assert_eq!(
            taken,
            (0..100)
                .map(|now| (now + 1_000, now as Slot))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn rescheduling_an_entry_that_is_not_last_leaves_it_stale() {
        let mut index = DeadlineIndex::default();
        index.push(entry(100, 1));
        index.push(entry(200, 2));
        index.reschedule(entry(100, 1), Stamp::from_nanos(300));
        assert_eq!(index.len(), 3, "the old entry stays, for the owner to skip");
        assert_eq!(drain(&mut index), [(100, 1), (200, 2), (300, 1)]);
    }

    #[test]
    fn rescheduling_to_never_unindexes() {
        let mut index = DeadlineIndex::default();
        index.push(entry(10, 0));
        index.reschedule(entry(10, 0), Stamp::NEVER);
        assert_eq!(index.len(), 0);
        assert_eq!(index.next(), None);
    }

    #[test]
    fn rescheduling_the_earliest_entry_later_finds_the_next_earliest() {
        let mut index = DeadlineIndex::default();
        index.push(entry(500, 1));
        index.push(entry(10, 0));
        assert_eq!(index.next(), Some(Stamp::from_nanos(10)));
        index.reschedule(entry(10, 0), Stamp::from_nanos(40));
        assert_eq!(index.next(), Some(Stamp::from_nanos(40)));
        index.reschedule(entry(40, 0), Stamp::from_nanos(900));
        assert_eq!(index.next(), Some(Stamp::from_nanos(500)));
        assert_eq!(drain(&mut index), [(500, 1), (900, 0)]);
    }

    #[test]
    fn never_is_not_indexed() {
        let mut index = DeadlineIndex::default();
        index.push(Entry {
            deadline: Stamp::NEVER,
            ..entry(0, 1)
        });
        assert_eq!(index.len(), 0);
        assert_eq!(index.next(), None);
    }

    #[test]
    fn pop_before_is_strict() {
        let mut index = DeadlineIndex::default();
        index.push(entry(10, 0));
        assert_eq!(
            index.pop_before(Stamp::from_nanos(10)),
            None,
            "due once past"
        );
        assert_eq!(index.pop_before(Stamp::from_nanos(11)), Some(entry(10, 0)));
    }

    #[test]
    fn prune_drops_stale_fronts_and_rebuilds_when_stale_entries_pile_up() {
        let mut index = DeadlineIndex::default();
        for slot in 0..10 {
            index.push(entry(i64::from(slot), slot));
        }
        // Only the odd slots are current.
        let is_current = |entry: &Entry| entry.slot % 2 == 1;
        index.prune(5, is_current, || unreachable!("no rebuild below the bound"));
        assert_eq!(index.next(), Some(Stamp::from_nanos(1)));
        assert_eq!(index.len(), 9);

        // Pile up stale entries past 2 * live + 64.
        for slot in 0..200 {
            index.push(entry(1_000 + i64::from(slot), 0));
        }
        let current = || {
            (0..5)
                .map(|i| entry(2 * i + 1, (2 * i + 1) as Slot))
                .collect()
        };
        index.prune(5, is_current, current);
        assert_eq!(index.len(), 5);
        assert_eq!(drain(&mut index), [(1, 1), (3, 3), (5, 5), (7, 7), (9, 9)]);
    }
}
