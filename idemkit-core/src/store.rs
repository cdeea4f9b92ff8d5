//! [`Store`]: the sans-IO idempotency state machine.

use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hashbrown::HashTable;

use crate::capacity::Capacity;
use crate::claim::Claim;
use crate::error::Error;
use crate::expiry::{DeadlineIndex, Slot};
use crate::record::{Record, Response};
use crate::stamp::Stamp;
use crate::token::{ClaimToken, TokenSource};

/// How many due records a claim removes on its way, at most. Each claim adds at most one
/// record, so removing up to two keeps pace with expiry at O(1) per claim.
const PURGE_PER_CLAIM: usize = 2;

/// The idempotency state machine: records by key, with leases, fencing and expiry.
///
/// A `Store` does no I/O and owns no clock, lock or thread: every operation that depends
/// on time takes `now`, and the caller decides when time passes. Wrap it in a mutex to
/// share it, or use [`InMemoryBackend`](crate::InMemoryBackend), which does exactly that
/// (sharded, with wake-ups for waiters).
///
/// Deadlines are inclusive: a lease or expiry `D` is live while `now <= D` and past once
/// `D < now`. `now + duration` saturates, so `Duration::MAX` means "never".
///
/// ```
/// use std::time::{Duration, Instant};
/// use idemkit_core::{Claim, Response, Store};
///
/// let mut store = Store::new();
/// let now = Instant::now();
/// let lease = Duration::from_secs(30);
///
/// let Claim::New(token) = store.claim("order-17", "fp", 1, lease, now)? else { unreachable!() };
/// // ... run the operation, then store its result:
/// assert!(store.complete("order-17", &token, Response::new(201, "created"), Duration::from_secs(3600), now));
///
/// // A retry replays the stored response instead of running again.
/// match store.claim("order-17", "fp", 1, lease, now)? {
///     Claim::Completed(record) => assert_eq!(record.response().unwrap().status, 201),
///     other => panic!("expected a replay, got {other:?}"),
/// }
/// # Ok::<(), idemkit_core::Error>(())
/// ```
pub struct Store {
    /// Slots by key; the key itself lives in the record, stored once.
    keys: HashTable<Slot>,
    hasher: RandomState,
    slots: Vec<Option<Record>>,
    free: Vec<Slot>,
    deadlines: DeadlineIndex,
    capacity: Arc<Capacity>,
    reclaim_grace: Duration,
    /// The latest `now` seen, for `release`, which takes none.
    latest: Stamp,
    tokens: TokenSource,
    len: usize,
}

impl Store {
    /// The capacity of [`Store::new`].
    pub const DEFAULT_MAX_SIZE: usize = 10_000;
    /// How long a claim whose lease lapsed is kept so the next claim reports
    /// [`Claim::Reclaimed`], unless set with [`Store::with_reclaim_grace`].
    pub const DEFAULT_RECLAIM_GRACE: Duration = Duration::from_secs(60);

    /// An empty store holding at most [`Store::DEFAULT_MAX_SIZE`] records.
    pub fn new() -> Store {
        Store::with_max_size(Store::DEFAULT_MAX_SIZE)
    }

    /// An empty store holding at most `max_size` records.
    pub fn with_max_size(max_size: usize) -> Store {
        Store::sharing(
            Arc::new(Capacity::new(max_size)),
            Store::DEFAULT_RECLAIM_GRACE,
        )
    }

    /// This store, keeping a claim whose lease lapsed for `reclaim_grace` before dropping
    /// it. Until then the next claim of its key reports [`Claim::Reclaimed`] and a late
    /// `complete` with its token can still land; afterwards the key is simply free.
    #[must_use]
    pub fn with_reclaim_grace(mut self, reclaim_grace: Duration) -> Store {
        self.reclaim_grace = reclaim_grace;
        self
    }

    /// A store whose records count against `capacity`, shared with other stores (the
    /// shards of one backend).
    pub(crate) fn sharing(capacity: Arc<Capacity>, reclaim_grace: Duration) -> Store {
        Store {
            keys: HashTable::new(),
            hasher: RandomState::new(),
            slots: Vec::new(),
            free: Vec::new(),
            deadlines: DeadlineIndex::default(),
            capacity,
            reclaim_grace,
            latest: Stamp::UNSET,
            tokens: TokenSource::new(),
            len: 0,
        }
    }

    /// The most records this store holds (shared with the other shards of a backend).
    pub fn max_size(&self) -> usize {
        self.capacity.max_size()
    }

    /// How long a lapsed claim is kept before it is dropped.
    pub fn reclaim_grace(&self) -> Duration {
        self.reclaim_grace
    }

    /// Claims `key` for the caller, or reports who has it.
    ///
    /// - No record, or only an expired one: the key is claimed with a fresh token,
    ///   [`Claim::New`]. If the store is full it first drops what has expired, and if it
    ///   is still full it returns [`Error::Full`]. A key that is present is never refused.
    /// - A live completed record: [`Claim::Completed`], to replay.
    /// - A claim whose lease is live (`now <= lease_until`): [`Claim::InFlight`].
    /// - A claim whose lease lapsed: taken over with a fresh token, [`Claim::Reclaimed`];
    ///   the old token no longer completes, releases or renews anything.
    ///
    /// The lease runs until `now + lease_ttl` (saturating). The fingerprint is stored for
    /// the caller to compare on replay; the store itself does not interpret it.
    pub fn claim(
        &mut self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
        now: Instant,
    ) -> Result<Claim, Error> {
        if u32::try_from(key.len()).is_err() {
            return Err(Error::KeyTooLong { len: key.len() });
        }
        let now = self.observe(now);
        for _ in 0..PURGE_PER_CLAIM {
            if self.purge_one(now).is_none() {
                break;
            }
        }
        let fresh =
            |token| Record::claimed(key, fingerprint, fingerprint_version, token, now, lease_ttl);
        let result = match self.find(key) {
            Some(slot) => {
                let record = self.record(slot);
                if record.removal_deadline(self.reclaim_grace) < now {
                    let token = self.tokens.next()?;
                    self.replace(slot, fresh(token.clone()));
                    Ok(Claim::New(token))
                } else if record.is_completed() {
                    Ok(Claim::Completed(record.clone()))
                } else if now <= record.deadline() {
                    Ok(Claim::InFlight(record.clone()))
                } else {
                    let token = self.tokens.next()?;
                    self.replace(slot, fresh(token.clone()));
                    Ok(Claim::Reclaimed(token))
                }
            }
            None => {
                let token = self.tokens.next()?;
                self.take_capacity(now)?;
                self.insert(fresh(token.clone()));
                Ok(Claim::New(token))
            }
        };
        self.settle();
        result
    }

    /// Stores the operation's response for the claim `token` holds.
    ///
    /// Succeeds only on a claimed record with this token, even after its lease lapsed as
    /// long as nobody reclaimed the key (within the reclaim grace). The record becomes
    /// completed and is replayed until `now + expires_after` (saturating; never reset by
    /// reads). Returns false otherwise: the key was reclaimed, released or completed, and
    /// the caller's result is discarded.
    pub fn complete(
        &mut self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
        now: Instant,
    ) -> bool {
        let now = self.observe(now);
        let Some(slot) = self.held_by(key, token, now) else {
            return false;
        };
        self.update(slot, |record| record.complete(now, response, expires_after));
        true
    }

    /// Gives the key up: removes the claimed record `token` holds, so the next claim runs
    /// the operation again. Returns false if `token` does not hold the key.
    ///
    /// `release` takes no `now`; it judges whether a lapsed claim is past its reclaim
    /// grace by the latest instant the store has been given.
    pub fn release(&mut self, key: &str, token: &ClaimToken) -> bool {
        let Some(slot) = self.held_by(key, token, self.latest) else {
            return false;
        };
        self.remove(slot);
        self.settle();
        true
    }

    /// Extends the lease `token` holds to `now + lease_ttl` (saturating). Returns false if
    /// `token` does not hold a claimed record of `key`; a completed record is never
    /// touched.
    pub fn renew(
        &mut self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
        now: Instant,
    ) -> bool {
        let now = self.observe(now);
        let Some(slot) = self.held_by(key, token, now) else {
            return false;
        };
        self.update(slot, |record| record.renew(now, lease_ttl));
        true
    }

    /// The record of `key`, unless there is none or it is gone (an expired completed
    /// record, or a lapsed claim past its reclaim grace, even if not purged yet).
    pub fn get(&self, key: &str, now: Instant) -> Option<&Record> {
        let now = Stamp::from_instant(now);
        let record = self.record(self.find(key)?);
        (now <= record.removal_deadline(self.reclaim_grace)).then_some(record)
    }

    /// Drops every record that has expired by `now` and returns how many. Costs what it
    /// drops, not what the store holds.
    pub fn purge_expired(&mut self, now: Instant) -> usize {
        let now = self.observe(now);
        let purged = self.purge_all(now);
        self.settle();
        purged
    }

    /// The earliest instant at which [`Store::purge_expired`] has something to drop, or
    /// `None` if no record will ever expire. A driver sleeps until then, as with
    /// `quinn-proto`'s `poll_timeout`.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.deadlines
            .next()
            .map(|deadline| deadline.next().to_instant())
    }

    /// Records held, including expired ones not purged yet.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the store holds no record at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn observe(&mut self, now: Instant) -> Stamp {
        let now = Stamp::from_instant(now);
        self.latest = self.latest.max(now);
        now
    }

    fn find(&self, key: &str) -> Option<Slot> {
        let hash = self.hasher.hash_one(key);
        let slots = &self.slots;
        self.keys
            .find(hash, |&slot| key_of(slots, slot) == key)
            .copied()
    }

    /// The slot of `key` if `token` holds its claim and the claim is not gone at `now`.
    fn held_by(&self, key: &str, token: &ClaimToken, now: Stamp) -> Option<Slot> {
        let slot = self.find(key)?;
        let record = self.record(slot);
        let held = !record.is_completed()
            && record.claim_token() == token
            && now <= record.removal_deadline(self.reclaim_grace);
        held.then_some(slot)
    }

    fn record(&self, slot: Slot) -> &Record {
        // Every slot in `keys` is occupied; the table and the slots change together.
        self.slots[slot as usize]
            .as_ref()
            .expect("indexed slot is occupied")
    }

    /// Changes the record in `slot` and re-indexes its deadline.
    fn update(&mut self, slot: Slot, change: impl FnOnce(&mut Record)) {
        let record = self.slots[slot as usize]
            .as_mut()
            .expect("indexed slot is occupied");
        change(record);
        let deadline = record.removal_deadline(self.reclaim_grace);
        self.deadlines.push(deadline, slot);
        self.settle();
    }

    fn take_capacity(&mut self, now: Stamp) -> Result<(), Error> {
        let room_in_table = !self.free.is_empty() || self.slots.len() < Slot::MAX as usize;
        if room_in_table && self.capacity.try_take() {
            return Ok(());
        }
        self.purge_all(now);
        let room_in_table = !self.free.is_empty() || self.slots.len() < Slot::MAX as usize;
        if room_in_table && self.capacity.try_take() {
            return Ok(());
        }
        Err(Error::Full {
            max_size: self.capacity.max_size(),
        })
    }

    /// Inserts a record for a key not present; its capacity is already taken.
    fn insert(&mut self, record: Record) {
        let hash = self.hasher.hash_one(record.key());
        let deadline = record.removal_deadline(self.reclaim_grace);
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(record);
                slot
            }
            None => {
                self.slots.push(Some(record));
                (self.slots.len() - 1) as Slot
            }
        };
        let Store {
            keys,
            hasher,
            slots,
            ..
        } = self;
        keys.insert_unique(hash, slot, |&slot| hasher.hash_one(key_of(slots, slot)));
        self.deadlines.push(deadline, slot);
        self.len += 1;
    }

    /// Puts a fresh claim where a record of the same key was.
    fn replace(&mut self, slot: Slot, record: Record) {
        self.deadlines
            .push(record.removal_deadline(self.reclaim_grace), slot);
        self.slots[slot as usize] = Some(record);
    }

    fn remove(&mut self, slot: Slot) {
        let Some(record) = self.slots[slot as usize].take() else {
            return;
        };
        let hash = self.hasher.hash_one(record.key());
        if let Ok(entry) = self.keys.find_entry(hash, |&indexed| indexed == slot) {
            entry.remove();
        }
        self.free.push(slot);
        self.len -= 1;
        self.capacity.give_back(1);
    }

    /// Removes the record with the earliest deadline if it is due. `None` when nothing is
    /// due; otherwise whether a record was removed (the entry may have been stale).
    fn purge_one(&mut self, now: Stamp) -> Option<bool> {
        let (deadline, slot) = self.deadlines.pop_before(now)?;
        let current = is_current(&self.slots, self.reclaim_grace, deadline, slot);
        if current {
            self.remove(slot);
        }
        Some(current)
    }

    fn purge_all(&mut self, now: Stamp) -> usize {
        let mut purged = 0;
        while let Some(removed) = self.purge_one(now) {
            purged += usize::from(removed);
        }
        purged
    }

    /// Restores the deadline index's promises after a change (see `expiry`).
    fn settle(&mut self) {
        let Store {
            deadlines,
            slots,
            reclaim_grace,
            len,
            ..
        } = self;
        let grace = *reclaim_grace;
        deadlines.settle(
            *len,
            |deadline, slot| is_current(slots, grace, deadline, slot),
            || {
                (0..)
                    .zip(slots.iter())
                    .filter_map(|(slot, record)| {
                        Some((record.as_ref()?.removal_deadline(grace), slot))
                    })
                    .collect()
            },
        );
    }
}

fn key_of(slots: &[Option<Record>], slot: Slot) -> &str {
    slots[slot as usize].as_ref().map_or("", Record::key)
}

/// Whether a deadline index entry still describes the record in `slot`.
fn is_current(slots: &[Option<Record>], grace: Duration, deadline: Stamp, slot: Slot) -> bool {
    slots[slot as usize]
        .as_ref()
        .is_some_and(|record| record.removal_deadline(grace) == deadline)
}

impl Default for Store {
    fn default() -> Store {
        Store::new()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // Other shards may share the capacity: hand back what this store held.
        self.capacity.give_back(self.len);
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("len", &self.len)
            .field("max_size", &self.capacity.max_size())
            .field("reclaim_grace", &self.reclaim_grace)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(30);

    #[test]
    fn renewing_forever_keeps_the_deadline_index_proportional_to_the_store() {
        let mut store = Store::new();
        let mut now = Instant::now();
        let Claim::New(token) = store.claim("k", "fp", 1, LEASE, now).unwrap() else {
            panic!()
        };
        for _ in 0..10_000 {
            now += Duration::from_millis(1);
            assert!(store.renew("k", &token, LEASE, now));
        }
        assert!(
            store.deadlines.len() <= 2 * store.len() + 65,
            "{} entries",
            store.deadlines.len()
        );
        assert_eq!(
            store.next_expiry(),
            Some(now + LEASE + store.reclaim_grace() + Duration::from_nanos(1))
        );
    }

    #[test]
    fn the_index_top_is_exact_after_every_kind_of_change() {
        let mut store = Store::new().with_reclaim_grace(Duration::ZERO);
        let now = Instant::now();
        let Claim::New(a) = store.claim("a", "fp", 1, LEASE, now).unwrap() else {
            panic!()
        };
        let Claim::New(b) = store.claim("b", "fp", 1, 2 * LEASE, now).unwrap() else {
            panic!()
        };
        let first = |lease: Duration| Some(now + lease + Duration::from_nanos(1));
        assert_eq!(store.next_expiry(), first(LEASE));
        assert!(store.renew("a", &a, 3 * LEASE, now));
        assert_eq!(store.next_expiry(), first(2 * LEASE));
        assert!(store.release("b", &b));
        assert_eq!(store.next_expiry(), first(3 * LEASE));
        assert!(store.complete("a", &a, Response::new(200, "ok"), Duration::MAX, now));
        assert_eq!(
            store.next_expiry(),
            None,
            "a record that never expires is not indexed"
        );
    }
}
