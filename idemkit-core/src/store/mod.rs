//! [`Store`]: the sans-IO idempotency state machine.
//!
//! The store keeps records in [`slots`], finds them by key through a hash table of slot
//! numbers ([`keyhash`]), drops them as they expire through a [`expiry`] index, counts
//! them against a [`capacity`] (its own, or a [`SharedCapacity`]), and draws claim tokens
//! from its [`RandomSource`]. Instants are kept as 8-byte [`stamp`]s on the store's own
//! timeline. [`StoreBuilder`] sets a store up; [`Watch`] is what a waiter reads.

mod builder;
mod capacity;
mod expiry;
mod keyhash;
mod names;
mod slots;
mod stamp;
mod stored;
#[cfg(test)]
mod tests;
mod watch;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hashbrown::HashTable;

use crate::claim::Claim;
use crate::error::Error;
use crate::record::Record;
use crate::response::Response;
use crate::token::ClaimToken;

use crate::random::RandomSource;

pub use self::builder::StoreBuilder;
pub use self::capacity::SharedCapacity;
pub use self::keyhash::{HashedKey, KeyHasher};
pub use self::watch::Watch;

use self::capacity::Budget;
use self::expiry::{DeadlineIndex, Entry, Slot};
use self::keyhash::KeyHash;
use self::slots::Slots;
use self::stamp::{Span, Stamp, Timeline};
use self::stored::StoredRecord;

/// How many slots beyond twice the records held a store may keep before it compacts: a
/// few, so a store that swings between zero and one record does not reallocate.
const COMPACT_SLACK: usize = 16;

/// How many due records a claim removes on its way, at most. Each claim adds at most one
/// record, so removing up to two keeps pace with expiry at O(1) per claim.
const PURGE_PER_CLAIM: usize = 2;

/// The idempotency state machine: records by key, with leases, fencing and expiry.
///
/// A `Store` does no I/O and owns no clock, lock or thread: every operation that depends
/// on time takes `now`, and the caller decides when time passes. Wrap it in a mutex to
/// share it, or use [`InMemoryBackend`](crate::InMemoryBackend), which does exactly that
/// (sharded, with wake-ups for waiters), built from this type's public API only: one
/// [`KeyHasher`] hashes each key once to pick its shard ([`HashedKey::shard`]) and find
/// it there (the `*_hashed` operations), one [`SharedCapacity`] bounds every shard, and a
/// waiter reads [`Store::watch_hashed`] under the shard's lock before it sleeps. Claim
/// tokens come from the store's [`RandomSource`] ([`StoreBuilder::random`]).
///
/// Deadlines are inclusive: a lease or expiry `D` is live while `now <= D` and past once
/// `D < now`. `now + duration` saturates, so `Duration::MAX` means "never".
///
/// # Time
///
/// A store measures time from the first instant it is given and keeps instants as
/// nanoseconds from there, exact within about 292 years either side of it. An instant
/// farther away is clamped to that limit: a `now` 300 years ahead acts as 292 years
/// ahead (every lease and result of the present has lapsed by then), and one 300 years
/// back acts as 292 years back (everything of the present is still live). Each store
/// has its own origin, so what one store is given never changes another's time.
///
/// # Memory
///
/// The store owns memory in proportion to what it holds: once records have left (expired,
/// released) until it holds under half of the slots it has, it compacts its tables down
/// to what remains.
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
/// let ttl = Duration::from_secs(3600);
/// assert!(store.complete("order-17", &token, Response::new(201, "created"), ttl, now));
///
/// // A retry replays the stored response instead of running again.
/// match store.claim("order-17", "fp", 1, lease, now)? {
///     Claim::Completed(replay) => {
///         assert!(replay.same_request());
///         assert_eq!(replay.response().status, 201);
///     }
///     other => panic!("expected a replay, got {other:?}"),
/// }
/// # Ok::<(), idemkit_core::Error>(())
/// ```
pub struct Store {
    /// Slots by key; the key itself lives in the record, stored once.
    keys: HashTable<Slot>,
    hasher: KeyHasher,
    slots: Slots,
    free: Vec<Slot>,
    deadlines: DeadlineIndex,
    capacity: Budget,
    reclaim_grace: Duration,
    /// `reclaim_grace` in the stamps' unit, as every deadline computation adds it.
    grace: Span,
    /// Set by the first instant the store is given.
    timeline: Option<Timeline>,
    /// The last `now` converted and its stamp: a caller usually hands the same instant
    /// to a claim and the completion or renewal that follows, and comparing two instants
    /// is cheaper than converting one.
    converted: Option<(Instant, Stamp)>,
    random: Box<dyn RandomSource>,
    len: usize,
    /// The slot of the record the last claim wrote ([`NO_SLOT`] if none or compacted
    /// since). The completion (or renewal, or release) that follows a claim is usually
    /// of the same key: comparing the key with that record's finds it without hashing
    /// the key or probing the table.
    recent: Slot,
}

/// Never a slot: a store holds fewer than `Slot::MAX` slots.
const NO_SLOT: Slot = Slot::MAX;

impl Store {
    /// The capacity of [`Store::new`].
    pub const DEFAULT_MAX_SIZE: usize = 10_000;
    /// How long a claim whose lease lapsed is kept so the next claim reports
    /// [`Claim::Reclaimed`], unless set with [`StoreBuilder::reclaim_grace`].
    pub const DEFAULT_RECLAIM_GRACE: Duration = Duration::from_secs(60);

    /// An empty store holding at most [`Store::DEFAULT_MAX_SIZE`] records, with the
    /// [default reclaim grace](Store::DEFAULT_RECLAIM_GRACE), drawing its tokens from
    /// [`OsRandom`](crate::OsRandom). [`Store::builder`] sets it up otherwise.
    pub fn new() -> Store {
        StoreBuilder::new().build_store()
    }

    /// A builder for a store with other settings: its capacity (its own or shared with
    /// other stores), reclaim grace, random source and key hasher.
    pub fn builder() -> StoreBuilder {
        StoreBuilder::new()
    }

    /// An empty store of these parts (see [`StoreBuilder`]).
    fn from_parts(
        capacity: Budget,
        reclaim_grace: Duration,
        hasher: KeyHasher,
        random: Box<dyn RandomSource>,
    ) -> Store {
        Store {
            keys: HashTable::new(),
            hasher,
            slots: Slots::default(),
            free: Vec::new(),
            deadlines: DeadlineIndex::default(),
            capacity,
            reclaim_grace,
            grace: Span::from_duration(reclaim_grace),
            timeline: None,
            converted: None,
            random,
            len: 0,
            recent: NO_SLOT,
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

    /// The hasher this store finds keys by: a [`HashedKey`] made by it (or by a clone of
    /// it) is looked up without hashing the key again.
    pub fn key_hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Claims `key` for the caller, or reports who has it.
    ///
    /// - No record, or only an expired one: the key is claimed with a fresh token,
    ///   [`Claim::New`]. If the store is full it first drops what has expired, and if it
    ///   is still full it returns [`Error::Full`]. A key that is present is never refused.
    /// - A live completed record: [`Claim::Completed`] with the shared stored response, to
    ///   replay, and whether it was stored for this `fingerprint` and version (compared
    ///   here; no [`Record`] is built, so a replay allocates nothing).
    /// - A claim whose lease is live (`now <= lease_until`): [`Claim::InFlight`].
    /// - A claim whose lease lapsed: taken over with a fresh token, [`Claim::Reclaimed`];
    ///   the old token no longer completes, releases or renews anything.
    ///
    /// The lease runs until `now + lease_ttl` (saturating). The fingerprint is stored and
    /// compared byte for byte on replay; the store does not otherwise interpret it.
    pub fn claim(
        &mut self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
        now: Instant,
    ) -> Result<Claim, Error> {
        let key = self.hasher.hash(key);
        self.claim_hashed(key, fingerprint, fingerprint_version, lease_ttl, now)
    }

    /// [`Store::claim`] of a key hashed by [`Store::key_hasher`] (by whoever routed it
    /// here, such as a sharded backend), so it is not hashed again.
    pub fn claim_hashed(
        &mut self,
        key: HashedKey<'_>,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
        now: Instant,
    ) -> Result<Claim, Error> {
        let key = self.own(key);
        if u32::try_from(key.key().len()).is_err() {
            return Err(Error::KeyTooLong {
                len: key.key().len(),
            });
        }
        let now = self.stamp_now(now);
        for _ in 0..PURGE_PER_CLAIM {
            if self.purge_one(now).is_none() {
                break;
            }
        }
        let fresh = |token| {
            StoredRecord::claimed(
                key.key(),
                key.hash,
                fingerprint,
                fingerprint_version,
                token,
                now,
                lease_ttl,
            )
        };
        let result = self.claim_at(key, now, (fingerprint, fingerprint_version), fresh);
        // Whatever the outcome, even an error after something was purged.
        self.end_change();
        result
    }

    /// The lookup and write of a claim, at `now` (purging done), by the request whose
    /// fingerprint and version are `request`; the caller ends the change.
    fn claim_at(
        &mut self,
        key: HashedKey<'_>,
        now: Stamp,
        request: (&str, u32),
        fresh: impl Fn(ClaimToken) -> StoredRecord,
    ) -> Result<Claim, Error> {
        // Not `find`: a claim is rarely of the key the last claim wrote.
        let Some(slot) = self.find_in_table(key) else {
            let token = self.next_token()?;
            self.take_capacity(now)?;
            self.insert(fresh(token.clone()));
            return Ok(Claim::New(token));
        };
        let record = self.record(slot);
        if record.removal_deadline(self.grace) < now {
            let token = self.next_token()?;
            self.replace(slot, fresh(token.clone()));
            Ok(Claim::New(token))
        } else if let Some(completed) = record.to_completed(request.0, request.1, self.timeline()) {
            Ok(Claim::Completed(completed))
        } else if now <= record.deadline() {
            Ok(Claim::InFlight(record.to_record(self.timeline())))
        } else {
            let token = self.next_token()?;
            self.replace(slot, fresh(token.clone()));
            Ok(Claim::Reclaimed(token))
        }
    }

    /// Stores the operation's response for the claim `token` holds.
    ///
    /// Succeeds only on a claimed record with this token, even after its lease lapsed as
    /// long as nobody reclaimed the key (within the reclaim grace). The record becomes
    /// completed and is replayed until `now + expires_after` (saturating; never reset by
    /// reads). Returns false otherwise: the key was reclaimed, released or completed, and
    /// the caller's result is discarded.
    ///
    /// The response is kept as the shared allocation given (an `Arc<Response>` is
    /// stored as is, never copied) and handed to every replay.
    #[must_use = "false means the result was fenced out and not stored"]
    pub fn complete(
        &mut self,
        key: &str,
        token: &ClaimToken,
        response: impl Into<Arc<Response>>,
        expires_after: Duration,
        now: Instant,
    ) -> bool {
        let key = self.hashed(key);
        self.complete_hashed(key, token, response, expires_after, now)
    }

    /// [`Store::complete`] of a key hashed by [`Store::key_hasher`].
    #[must_use = "false means the result was fenced out and not stored"]
    pub fn complete_hashed(
        &mut self,
        key: HashedKey<'_>,
        token: &ClaimToken,
        response: impl Into<Arc<Response>>,
        expires_after: Duration,
        now: Instant,
    ) -> bool {
        let response = response.into();
        let now = self.stamp_now(now);
        let Some(slot) = self.held_by(key, token, now) else {
            return false;
        };
        self.update(slot, |record| record.complete(now, response, expires_after));
        true
    }

    /// Gives the key up: removes the claimed record `token` holds, so the next claim runs
    /// the operation again. Returns false if `token` does not hold the key at `now` (a
    /// lapsed claim still holds it within the reclaim grace, unless reclaimed).
    #[must_use = "false means the token did not hold the key"]
    pub fn release(&mut self, key: &str, token: &ClaimToken, now: Instant) -> bool {
        let key = self.hashed(key);
        self.release_hashed(key, token, now)
    }

    /// [`Store::release`] of a key hashed by [`Store::key_hasher`].
    #[must_use = "false means the token did not hold the key"]
    pub fn release_hashed(&mut self, key: HashedKey<'_>, token: &ClaimToken, now: Instant) -> bool {
        let now = self.stamp_now(now);
        let Some(slot) = self.held_by(key, token, now) else {
            return false;
        };
        self.remove(slot);
        self.end_change();
        true
    }

    /// Extends the lease `token` holds to `now + lease_ttl` (saturating). Returns false if
    /// `token` does not hold a claimed record of `key`; a completed record is never
    /// touched.
    #[must_use = "false means the token no longer holds the key: stop and store nothing"]
    pub fn renew(
        &mut self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
        now: Instant,
    ) -> bool {
        let key = self.hashed(key);
        self.renew_hashed(key, token, lease_ttl, now)
    }

    /// [`Store::renew`] of a key hashed by [`Store::key_hasher`].
    #[must_use = "false means the token no longer holds the key: stop and store nothing"]
    pub fn renew_hashed(
        &mut self,
        key: HashedKey<'_>,
        token: &ClaimToken,
        lease_ttl: Duration,
        now: Instant,
    ) -> bool {
        let now = self.stamp_now(now);
        let Some(slot) = self.held_by(key, token, now) else {
            return false;
        };
        self.update(slot, |record| record.renew(now, lease_ttl));
        true
    }

    /// The record of `key`, unless there is none or it is gone (an expired completed
    /// record, or a lapsed claim past its reclaim grace, even if not purged yet).
    pub fn get(&self, key: &str, now: Instant) -> Option<Record> {
        self.get_hashed(self.hashed(key), now)
    }

    /// [`Store::get`] of a key hashed by [`Store::key_hasher`].
    pub fn get_hashed(&self, key: HashedKey<'_>, now: Instant) -> Option<Record> {
        let (slot, timeline) = self.live(key, now)?;
        Some(self.record(slot).to_record(timeline))
    }

    /// The slot of `key`'s record if it is not gone at `now`, and the store's timeline.
    fn live(&self, key: HashedKey<'_>, now: Instant) -> Option<(Slot, Timeline)> {
        // A store never given an instant holds nothing.
        let timeline = self.timeline?;
        let slot = self.find(self.own(key))?;
        let gone = self.record(slot).removal_deadline(self.grace) < timeline.stamp(now);
        (!gone).then_some((slot, timeline))
    }

    /// What a waiter on `key` needs to know at `now`: nothing held (or gone), the
    /// completed record, a claim whose lease lapsed, or how long the live lease of a
    /// claim has left. A backend that wakes waiters reads this under the same lock as it
    /// registers the waiter, so no completion slips in between.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use idemkit_core::{Store, Watch};
    ///
    /// let mut store = Store::new();
    /// let now = Instant::now();
    /// assert!(matches!(store.watch("k", now), Watch::Absent));
    /// store.claim("k", "fp", 1, Duration::from_secs(30), now)?;
    /// let later = now + Duration::from_secs(10);
    /// assert!(matches!(
    ///     store.watch("k", later),
    ///     Watch::Claimed { lease_left } if lease_left == Duration::from_secs(20)
    /// ));
    /// assert!(matches!(store.watch("k", now + Duration::from_secs(31)), Watch::Lapsed));
    /// # Ok::<(), idemkit_core::Error>(())
    /// ```
    pub fn watch(&self, key: &str, now: Instant) -> Watch {
        self.watch_hashed(self.hashed(key), now)
    }

    /// [`Store::watch`] of a key hashed by [`Store::key_hasher`].
    pub fn watch_hashed(&self, key: HashedKey<'_>, now: Instant) -> Watch {
        let Some((slot, timeline)) = self.live(key, now) else {
            return Watch::Absent;
        };
        let record = self.record(slot);
        if record.is_completed() {
            return Watch::Completed(record.to_record(timeline));
        }
        let now = timeline.stamp(now);
        if record.deadline() < now {
            Watch::Lapsed
        } else {
            Watch::Claimed {
                lease_left: now.until(record.deadline()),
            }
        }
    }

    /// Drops every record that has expired by `now` and returns how many. Costs what it
    /// drops, not what the store holds.
    pub fn purge_expired(&mut self, now: Instant) -> usize {
        let now = self.stamp_now(now);
        let purged = self.purge_all(now);
        self.end_change();
        purged
    }

    /// The earliest instant at which [`Store::purge_expired`] has something to drop, or
    /// `None` if no record will ever expire. A driver sleeps until then, as with
    /// `quinn-proto`'s `poll_timeout`. It changes with every claim, completion, renewal
    /// and release, and with every purge.
    #[must_use]
    pub fn next_expiry(&self) -> Option<Instant> {
        let timeline = self.timeline?;
        let deadline = self.deadlines.next()?;
        Some(timeline.instant(deadline.next()))
    }

    /// Records held, including expired ones not purged yet.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the store holds no record at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The store's timeline; the caller has given it an instant already.
    fn timeline(&self) -> Timeline {
        self.timeline
            .expect("a store that holds a record has been given an instant")
    }

    /// `now` as a stamp on the store's timeline, which starts at the first `now` given.
    fn stamp_now(&mut self, now: Instant) -> Stamp {
        match self.converted {
            Some((instant, stamp)) if instant == now => stamp,
            _ => {
                let timeline = *self.timeline.get_or_insert(Timeline::starting_at(now));
                let stamp = timeline.stamp(now);
                self.converted = Some((now, stamp));
                stamp
            }
        }
    }

    /// The slot of the record the last claim wrote, if it is `key`'s.
    fn recent(&self, key: &str) -> Option<Slot> {
        let record = self.slots.get(self.recent)?;
        record.key_is(key).then_some(self.recent)
    }

    /// `key` and its hash: kept by the record the last claim wrote if that is `key`'s,
    /// computed otherwise.
    fn hashed<'k>(&self, key: &'k str) -> HashedKey<'k> {
        match self.recent(key) {
            Some(slot) => HashedKey::with_hash(key, self.record(slot).hash(), &self.hasher),
            None => self.hasher.hash(key),
        }
    }

    /// `key` hashed by this store's hasher: as given if it was, hashed again if not.
    fn own<'k>(&self, key: HashedKey<'k>) -> HashedKey<'k> {
        if self.hasher.made(&key) {
            key
        } else {
            self.hasher.hash(key.key())
        }
    }

    /// A fresh claim token from the store's source.
    fn next_token(&mut self) -> Result<ClaimToken, Error> {
        let mut bytes = [0; 16];
        self.random.fill(&mut bytes)?;
        Ok(ClaimToken::from_bytes(bytes))
    }

    fn find(&self, key: HashedKey<'_>) -> Option<Slot> {
        self.recent(key.key()).or_else(|| self.find_in_table(key))
    }

    fn find_in_table(&self, key: HashedKey<'_>) -> Option<Slot> {
        let slots = &self.slots;
        self.keys
            .find(key.hash.table(), |&slot| is_key_of(slots, slot, key.key()))
            .copied()
    }

    /// The slot of `key` if `token` holds its claim and the claim is not gone at `now`.
    fn held_by(&self, key: HashedKey<'_>, token: &ClaimToken, now: Stamp) -> Option<Slot> {
        let slot = self.find(self.own(key))?;
        let record = self.record(slot);
        let held = !record.is_completed()
            && record.claim_token() == token
            && now <= record.removal_deadline(self.grace);
        held.then_some(slot)
    }

    fn record(&self, slot: Slot) -> &StoredRecord {
        // Every slot in `keys` is occupied; the table and the slots change together.
        self.slots[slot].as_ref().expect("indexed slot is occupied")
    }

    /// Changes the record in `slot` and re-indexes its deadline.
    fn update(&mut self, slot: Slot, change: impl FnOnce(&mut StoredRecord)) {
        let record = self.slots[slot].as_mut().expect("indexed slot is occupied");
        let deadline = record.removal_deadline(self.grace);
        change(record);
        let new = record.removal_deadline(self.grace);
        let old = Entry { deadline, slot };
        self.deadlines.reschedule(old, new);
        self.end_change();
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
    fn insert(&mut self, record: StoredRecord) {
        let deadline = record.removal_deadline(self.grace);
        let hash = record.hash();
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(record);
                slot
            }
            None => self.slots.push(record),
        };
        let Store { keys, slots, .. } = self;
        // A growing table moves every slot number, by the hash its record keeps.
        keys.insert_unique(hash.table(), slot, |&slot| hash_of(slots, slot).table());
        self.deadlines.push(Entry { deadline, slot });
        self.len += 1;
        self.recent = slot;
    }

    /// Puts a fresh claim where a record of the same key was.
    fn replace(&mut self, slot: Slot, record: StoredRecord) {
        let old = Entry {
            deadline: self.record(slot).removal_deadline(self.grace),
            slot,
        };
        self.deadlines
            .reschedule(old, record.removal_deadline(self.grace));
        self.slots[slot] = Some(record);
        self.recent = slot;
    }

    /// Removes the record in `slot`, if there is one.
    fn remove(&mut self, slot: Slot) {
        let Some(record) = self.slots[slot].take() else {
            return;
        };
        if let Ok(entry) = self
            .keys
            .find_entry(record.hash().table(), |&indexed| indexed == slot)
        {
            entry.remove();
        }
        self.free.push(slot);
        self.len -= 1;
        self.capacity.give_back(1);
    }

    /// Removes the record with the earliest deadline if it is due. `None` when nothing is
    /// due; otherwise whether a record was removed (the entry may have been stale).
    fn purge_one(&mut self, now: Stamp) -> Option<bool> {
        let entry = self.deadlines.pop_before(now)?;
        let current = is_current(&self.slots, self.grace, &entry);
        if current {
            self.remove(entry.slot);
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

    /// What every public operation that changes the store ends with: hands the capacity
    /// freed by the change back to a shared budget, restores the deadline index's
    /// promises (see `expiry`), and compacts the tables once the store holds far less
    /// than they were grown for.
    fn end_change(&mut self) {
        self.capacity.return_credit();
        if self.slots.capacity() > 2 * self.len + COMPACT_SLACK {
            self.compact();
            return;
        }
        let Store {
            deadlines,
            slots,
            grace,
            len,
            ..
        } = self;
        let grace = *grace;
        deadlines.prune(
            *len,
            |entry| is_current(slots, grace, entry),
            || current_entries(slots, grace),
        );
    }

    /// Moves the records held into tables sized for them, so that a store that drained
    /// gives back what its peak needed. Costs what it holds; it runs only once the store
    /// holds under half of the slots it has, and slots are added only as records are,
    /// so every record removed pays for a constant share of it.
    fn compact(&mut self) {
        let mut slots = Slots::with_capacity(self.len);
        for record in self.slots.drain() {
            slots.push(record);
        }
        self.slots = slots;
        self.free = Vec::new();
        // Records moved to other slots.
        self.recent = NO_SLOT;
        let mut keys = HashTable::with_capacity(self.len);
        for (slot, record) in (0..).zip(self.slots.iter()) {
            let record = record.as_ref().expect("compacted slots are all occupied");
            keys.insert_unique(record.hash().table(), slot, |_: &Slot| {
                unreachable!("the table was sized for every record")
            });
        }
        self.keys = keys;
        self.reindex();
    }

    /// Rebuilds the deadline index from the records held.
    fn reindex(&mut self) {
        let entries = current_entries(&self.slots, self.grace);
        self.deadlines.rebuild(entries);
    }
}

/// The index entry of every record held, as a rebuilt index holds them.
fn current_entries(slots: &Slots, grace: Span) -> Vec<Entry> {
    (0..)
        .zip(slots.iter())
        .filter_map(|(slot, record)| {
            let record = record.as_ref()?;
            Some(Entry {
                deadline: record.removal_deadline(grace),
                slot,
            })
        })
        .collect()
}

fn is_key_of(slots: &Slots, slot: Slot, key: &str) -> bool {
    slots[slot]
        .as_ref()
        .is_some_and(|record| record.key_is(key))
}

fn hash_of(slots: &Slots, slot: Slot) -> KeyHash {
    slots[slot]
        .as_ref()
        .map_or(KeyHash::ZERO, StoredRecord::hash)
}

/// Whether a deadline index entry still describes the record in its slot.
fn is_current(slots: &Slots, grace: Span, entry: &Entry) -> bool {
    slots[entry.slot]
        .as_ref()
        .is_some_and(|record| record.removal_deadline(grace) == entry.deadline)
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
        self.capacity.return_credit();
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
