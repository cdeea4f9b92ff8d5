//! The record budget: `max_size`, kept exact across every shard that shares it.

use std::sync::Arc;
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

    /// Slots taken by every store sharing this budget (their records, and the credit
    /// they keep).
    #[cfg(test)]
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

/// How many freed slots a shard keeps for its next claims instead of handing them back to
/// the shared count (see [`Budget::Shared`]).
const KEPT_CREDIT: usize = 8;

/// What one store counts its records against: a limit of its own, or the budget it shares
/// with the other shards of a backend. A lone store keeps a plain count, so its hot path
/// has no atomic read-modify-write at all.
#[derive(Debug)]
pub(crate) enum Budget {
    /// A store on its own: `held` of `max_size`.
    Own { max_size: usize, held: usize },
    /// A shard of a backend: the budget all shards share, and `credit`, slots this shard
    /// took from it and holds no record in (records it dropped).
    ///
    /// A shard at its working size drops about one expired record per claim and inserts
    /// one: kept as credit, the dropped record's slot pays for the next insert without
    /// touching the shared counter, a cache line every thread would otherwise write on
    /// almost every claim. A shard keeps at most [`KEPT_CREDIT`] slots at the end of an
    /// operation (so the counter is touched only when its drops and inserts drift that
    /// far apart) and hands back the rest. The shared count therefore counts records
    /// plus the shards' credit, and may report the budget spent while shards still hold
    /// credit: a claim refused that way hands every shard's credit back (see
    /// [`Budget::return_credit`]) and tries again, so a claim is refused only when
    /// `max_size` records are held.
    Shared {
        capacity: Arc<Capacity>,
        credit: usize,
    },
}

impl Budget {
    pub(crate) fn own(max_size: usize) -> Budget {
        Budget::Own { max_size, held: 0 }
    }

    pub(crate) fn shared(capacity: Arc<Capacity>) -> Budget {
        Budget::Shared {
            capacity,
            credit: 0,
        }
    }

    pub(crate) fn max_size(&self) -> usize {
        match self {
            Budget::Own { max_size, .. } => *max_size,
            Budget::Shared { capacity, .. } => capacity.max_size(),
        }
    }

    /// Changes the limit of a budget of its own (a shared budget's limit is its
    /// backend's, fixed when it was built).
    pub(crate) fn set_max_size(&mut self, limit: usize) {
        match self {
            Budget::Own { max_size, .. } => *max_size = limit,
            Budget::Shared { .. } => {}
        }
    }

    /// Takes a slot; false when all `max_size` are taken.
    pub(crate) fn try_take(&mut self) -> bool {
        match self {
            Budget::Own { max_size, held } => {
                let room = *held < *max_size;
                *held += usize::from(room);
                room
            }
            Budget::Shared { credit, .. } if *credit > 0 => {
                *credit -= 1;
                true
            }
            Budget::Shared { capacity, .. } => capacity.try_take(),
        }
    }

    /// Gives back `count` slots (kept as credit by a shard: see [`Budget::settle`]).
    pub(crate) fn give_back(&mut self, count: usize) {
        match self {
            Budget::Own { held, .. } => *held -= count,
            Budget::Shared { credit, .. } => *credit += count,
        }
    }

    /// What a shard does at the end of each operation: hands back its credit beyond
    /// [`KEPT_CREDIT`].
    pub(crate) fn settle(&mut self) {
        if let Budget::Shared { capacity, credit } = self
            && *credit > KEPT_CREDIT
        {
            capacity.give_back(*credit - KEPT_CREDIT);
            *credit = KEPT_CREDIT;
        }
    }

    /// Hands all of a shard's credit back to the shared budget, and says how many slots
    /// that was.
    pub(crate) fn return_credit(&mut self) -> usize {
        match self {
            Budget::Shared { capacity, credit } if *credit > 0 => {
                let returned = std::mem::take(credit);
                capacity.give_back(returned);
                returned
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_of_its_own_is_exact() {
        let mut budget = Budget::own(2);
        assert!(budget.try_take());
        assert!(budget.try_take());
        assert!(!budget.try_take(), "a third slot of two");
        budget.give_back(1);
        assert!(budget.try_take());
        assert!(!budget.try_take());
        assert_eq!(budget.max_size(), 2);
    }

    #[test]
    fn shared_budgets_draw_on_one_count() {
        let capacity = Arc::new(Capacity::new(3));
        let mut first = Budget::shared(capacity.clone());
        let mut second = Budget::shared(capacity.clone());
        assert!(first.try_take());
        assert!(second.try_take());
        assert!(first.try_take());
        assert!(!second.try_take(), "the fourth slot of three");
        assert_eq!(capacity.held(), 3);
        first.give_back(2);
        assert_eq!(first.return_credit(), 2);
        assert_eq!(capacity.held(), 1);
        assert!(second.try_take());
        assert!(second.try_take());
        assert!(!first.try_take());
    }

    #[test]
    fn a_shard_keeps_a_little_credit_and_hands_the_rest_back() {
        let capacity = Arc::new(Capacity::new(2 * KEPT_CREDIT));
        let mut first = Budget::shared(capacity.clone());
        let mut second = Budget::shared(capacity.clone());
        for _ in 0..2 * KEPT_CREDIT {
            assert!(first.try_take());
        }
        // The first shard drops a record and, in the same operation, inserts another:
        // the slot goes from one record to the next without the count moving.
        first.give_back(1);
        assert!(!second.try_take(), "the slot is the first shard's credit");
        assert!(first.try_take());
        first.settle();
        assert_eq!(capacity.held(), 2 * KEPT_CREDIT);
        // Dropped records' slots stay with the shard, up to KEPT_CREDIT of them...
        first.give_back(KEPT_CREDIT + 3);
        first.settle();
        assert_eq!(
            capacity.held(),
            2 * KEPT_CREDIT - 3,
            "the rest is handed back"
        );
        for _ in 0..3 {
            assert!(second.try_take());
        }
        assert!(!second.try_take());
        // ... until someone needs them: then they are handed back too.
        assert_eq!(first.return_credit(), KEPT_CREDIT);
        assert_eq!(first.return_credit(), 0);
        for _ in 0..KEPT_CREDIT {
            assert!(second.try_take());
        }
        assert!(!second.try_take());
        assert_eq!(capacity.held(), 2 * KEPT_CREDIT);
    }
}
