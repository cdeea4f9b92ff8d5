//! The record budget: `max_size`, kept exact across every shard that shares it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A record limit that several stores count against together: the shards of one
/// backend share one, so `max_size` holds across all of them, exactly.
///
/// A slot is taken before a record is inserted and given back when it is removed (or
/// its store dropped). Cloning the handle shares the count; give it to each store with
/// [`StoreBuilder::shared_capacity`](crate::StoreBuilder::shared_capacity).
///
/// ```
/// use std::time::{Duration, Instant};
/// use idemkit_core::{Error, SharedCapacity, Store};
///
/// let capacity = SharedCapacity::new(1);
/// let mut one = Store::builder().shared_capacity(capacity.clone()).build()?;
/// let mut other = Store::builder().shared_capacity(capacity.clone()).build()?;
/// let (now, lease) = (Instant::now(), Duration::from_secs(30));
/// one.claim("a", "fp", 1, lease, now)?;
/// assert!(matches!(other.claim("b", "fp", 1, lease, now), Err(Error::Full { max_size: 1 })));
/// assert_eq!(capacity.held(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct SharedCapacity(Arc<Count>);

#[derive(Debug)]
struct Count {
    max_size: usize,
    held: AtomicUsize,
}

impl SharedCapacity {
    /// A limit of `max_size` records, none held yet.
    pub fn new(max_size: usize) -> SharedCapacity {
        SharedCapacity(Arc::new(Count {
            max_size,
            held: AtomicUsize::new(0),
        }))
    }

    /// The most records the stores sharing it hold together.
    pub fn max_size(&self) -> usize {
        self.0.max_size
    }

    /// Records held by every store sharing this limit, expired ones not purged yet
    /// included.
    pub fn held(&self) -> usize {
        self.0.held.load(Ordering::Relaxed)
    }

    /// Takes a slot; false when all `max_size` are taken.
    fn try_take(&self) -> bool {
        // Relaxed is enough: the counter guards a number, and publishes no data.
        self.0
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held < self.0.max_size).then_some(held + 1)
            })
            .is_ok()
    }

    /// Gives back `count` slots.
    fn give_back(&self, count: usize) {
        self.0.held.fetch_sub(count, Ordering::Relaxed);
    }
}

/// What one store counts its records against: a limit of its own, or the budget it shares
/// with the other shards of a backend. A lone store keeps a plain count, so its hot path
/// has no atomic read-modify-write at all.
#[derive(Debug)]
pub(crate) enum Budget {
    /// A store on its own: `held` of `max_size`.
    Own { max_size: usize, held: usize },
    /// A shard of a backend: the budget all shards share, and `credit`, slots this shard
    /// freed during the operation in progress and has not handed back yet.
    ///
    /// A claim that drops an expired record and inserts a new one (the steady state of a
    /// store at its working size) then touches the shared counter not at all, instead
    /// of twice. The credit never outlives the operation (the store returns it before
    /// the shard's lock is released), so the global count stays exact: it only looks as
    /// if the record were dropped at the end of the operation instead of in its middle.
    Shared {
        capacity: SharedCapacity,
        credit: usize,
    },
}

impl Budget {
    pub(crate) fn own(max_size: usize) -> Budget {
        Budget::Own { max_size, held: 0 }
    }

    pub(crate) fn shared(capacity: SharedCapacity) -> Budget {
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

    /// Gives back `count` slots (to the shared budget once [`Budget::return_credit`] runs).
    pub(crate) fn give_back(&mut self, count: usize) {
        match self {
            Budget::Own { held, .. } => *held -= count,
            Budget::Shared { credit, .. } => *credit += count,
        }
    }

    /// Hands the credit of the operation that just finished back to the shared budget.
    pub(crate) fn return_credit(&mut self) {
        if let Budget::Shared { capacity, credit } = self
            && *credit > 0
        {
            capacity.give_back(std::mem::take(credit));
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
        let capacity = SharedCapacity::new(3);
        let mut first = Budget::shared(capacity.clone());
        let mut second = Budget::shared(capacity.clone());
        assert!(first.try_take());
        assert!(second.try_take());
        assert!(first.try_take());
        assert!(!second.try_take(), "the fourth slot of three");
        assert_eq!(capacity.held(), 3);
        first.give_back(2);
        first.return_credit();
        assert_eq!(capacity.held(), 1);
        assert!(second.try_take());
        assert!(second.try_take());
        assert!(!first.try_take());
    }

    #[test]
    fn a_shards_credit_is_its_own_until_returned() {
        let capacity = SharedCapacity::new(2);
        let mut first = Budget::shared(capacity.clone());
        let mut second = Budget::shared(capacity.clone());
        assert!(first.try_take());
        assert!(first.try_take());
        // The first shard drops a record and, in the same operation, inserts another:
        // the slot goes from one record to the next without the count moving.
        first.give_back(1);
        assert!(
            !second.try_take(),
            "mid-operation, the slot is still the first's"
        );
        assert!(first.try_take());
        first.return_credit();
        assert_eq!(capacity.held(), 2);
        // A drop whose slot is not reused is handed back when the operation ends.
        first.give_back(1);
        first.return_credit();
        assert_eq!(capacity.held(), 1);
        assert!(second.try_take());
        assert!(!second.try_take());
        assert_eq!(capacity.held(), 2);
    }
}
