//! The shared layer: a sharded, locked [`Store`] with per-key wake-ups, written once for
//! the blocking backend and every async adapter.
//!
//! Keys are spread over shards by hash, each a `parking_lot` mutex around a `Store` and
//! the events its waiters listen on; the capacity is one exact budget across all shards.
//! No lock is held while blocking or while notifying.

use std::collections::HashMap;
use std::hash::RandomState;
use std::sync::Arc;
use std::time::{Duration, Instant};

use event_listener::Event;
use parking_lot::{Mutex, MutexGuard};

use crate::capacity::Capacity;
use crate::claim::Claim;
use crate::clock::Clock;
use crate::error::Error;
use crate::keyhash::KeyHash;
use crate::record::{Record, Response};
use crate::stamp::Stamp;
use crate::store::Store;
use crate::token::ClaimToken;
use crate::wait::{PollSchedule, WaitStep, deadline_after, remaining};

/// How long past a lease's end a waiter wakes to see it lapsed (`D < now` is strict).
const LAPSE_MARGIN: Duration = Duration::from_millis(1);

/// One shard: a store and the completion events of its keys that have waiters.
struct Shard {
    store: Store,
    /// An entry exists only while some waiter watches a claimed record of its key: it is
    /// removed when that record completes, is released or replaced by a new claim, and by
    /// the last waiter to leave (a waiter leaves at its next poll, at most a second, once
    /// the record it watched has lapsed or been purged). So waiter bookkeeping never
    /// outlives what it watches by more than a poll.
    waiters: HashMap<Box<str>, Arc<Event>>,
}

impl Shard {
    /// Takes the key's event out, so its waiters can be woken once the lock is dropped.
    fn take_waiters(&mut self, key: &str) -> Option<Arc<Event>> {
        if self.waiters.is_empty() {
            None
        } else {
            self.waiters.remove(key)
        }
    }
}

/// Keeps each shard's lock on its own cache line, so shards do not slow each other down.
#[repr(align(128))]
struct Padded<T>(T);

pub(crate) struct Shared<C> {
    shards: Box<[Padded<Mutex<Shard>>]>,
    /// The key hasher of every shard's store, also what routes a key to its shard: one
    /// SipHash per operation does both.
    hasher: RandomState,
    capacity: Arc<Capacity>,
    clock: C,
}

fn wake(event: Option<Arc<Event>>) {
    if let Some(event) = event {
        event.notify(usize::MAX);
    }
}

impl<C: Clock> Shared<C> {
    pub(crate) fn new(
        max_size: usize,
        reclaim_grace: Duration,
        shards: usize,
        clock: C,
    ) -> Shared<C> {
        let capacity = Arc::new(Capacity::new(max_size));
        let hasher = RandomState::new();
        let shards = (0..shards.max(1))
            .map(|_| {
                let store = Store::sharing(capacity.clone(), reclaim_grace, hasher.clone());
                Padded(Mutex::new(Shard {
                    store,
                    waiters: HashMap::new(),
                }))
            })
            .collect();
        Shared {
            shards,
            hasher,
            capacity,
            clock,
        }
    }

    /// The default shard count: enough that threads on distinct keys rarely meet.
    ///
    /// Two threads meeting on a shard cost far more than the shard's memory (an empty
    /// shard is well under a kilobyte; its token buffer appears with its first claim): at
    /// 8 shards, 2 threads on distinct keys ran only 1.15x the throughput of one, at 64
    /// they ran 1.4x (issue 4). So: 32 per core, as a power of two, at most 512.
    pub(crate) fn default_shards() -> usize {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        (cores * 32).next_power_of_two().min(512)
    }

    pub(crate) fn clock(&self) -> &C {
        &self.clock
    }

    /// The shard of `key`, locked, and the key's hash for that shard's store.
    fn shard(&self, key: &str) -> (MutexGuard<'_, Shard>, KeyHash) {
        let (hash, route) = KeyHash::routed(&self.hasher, key);
        // `route * shards / 2^32`: a uniform pick for any shard count, without a division.
        let index = ((u64::from(route) * self.shards.len() as u64) >> 32) as usize;
        (self.shards[index].0.lock(), hash)
    }

    pub(crate) fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        let now = self.clock.now();
        let attempt = || {
            let (mut shard, hash) = self.shard(key);
            let claim = shard.store.claim_hashed(
                key,
                hash,
                fingerprint,
                fingerprint_version,
                lease_ttl,
                now,
            );
            let woken = match claim {
                // A claim that replaced a record (a lapsed claim, or one gone after its
                // grace) wakes whoever still watched the old one: they re-read and watch
                // the new claim, instead of learning of it at their next poll.
                Ok(Claim::Reclaimed(_) | Claim::New(_)) => shard.take_waiters(key),
                _ => None,
            };
            drop(shard);
            wake(woken);
            claim
        };
        match attempt() {
            // The key's own shard already dropped what expired; the capacity is global,
            // so the other shards' expired records may be what fills it.
            Err(Error::Full { .. }) if self.purge_expired_at(now) > 0 => attempt(),
            result => result,
        }
    }

    pub(crate) fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> bool {
        let now = self.clock.now();
        let (mut shard, hash) = self.shard(key);
        let done = shard
            .store
            .complete_hashed(key, hash, token, response, expires_after, now);
        let woken = if done { shard.take_waiters(key) } else { None };
        drop(shard);
        wake(woken);
        done
    }

    pub(crate) fn release(&self, key: &str, token: &ClaimToken) -> bool {
        let (mut shard, hash) = self.shard(key);
        // Release takes no `now`; telling the store the time first lets it judge the
        // reclaim grace by this backend's clock rather than by its last operation.
        shard.store.purge_expired(self.clock.now());
        let released = shard.store.release_hashed(key, hash, token);
        let woken = if released {
            shard.take_waiters(key)
        } else {
            None
        };
        drop(shard);
        wake(woken);
        released
    }

    pub(crate) fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        let now = self.clock.now();
        let (mut shard, hash) = self.shard(key);
        shard.store.renew_hashed(key, hash, token, lease_ttl, now)
    }

    pub(crate) fn get(&self, key: &str) -> Option<Record> {
        let now = self.clock.now();
        let (shard, hash) = self.shard(key);
        shard.store.get_hashed(key, hash, now).cloned()
    }

    /// Records held across all shards, expired ones not yet purged included.
    pub(crate) fn len(&self) -> usize {
        self.capacity.held()
    }

    pub(crate) fn purge_expired(&self) -> usize {
        self.purge_expired_at(self.clock.now())
    }

    fn purge_expired_at(&self, now: Instant) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.0.lock().store.purge_expired(now))
            .sum()
    }

    /// Keys that have a waiter's event entry right now.
    pub(crate) fn watched_keys(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.0.lock().waiters.len())
            .sum()
    }

    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.shards
            .iter()
            .filter_map(|shard| shard.0.lock().store.next_expiry())
            .min()
    }

    /// Starts waiting for `key` to complete, for at most `timeout` from `start` (real time,
    /// on the caller's timer).
    pub(crate) fn wait<'a>(
        &'a self,
        key: &'a str,
        timeout: Duration,
        start: Instant,
    ) -> Wait<'a, C> {
        Wait {
            shared: self,
            key,
            deadline: deadline_after(start, timeout),
            polls: PollSchedule::new(),
            watching: None,
        }
    }
}

/// One waiter's progress. Dropping it (a finished wait, or a cancelled future) stops
/// watching: the key's event entry goes when its last waiter does.
pub(crate) struct Wait<'a, C: Clock> {
    shared: &'a Shared<C>,
    key: &'a str,
    deadline: Option<Instant>,
    polls: PollSchedule,
    watching: Option<Arc<Event>>,
}

impl<C: Clock> Wait<'_, C> {
    /// Re-reads the key's state at real time `now` and says what to do next.
    ///
    /// The listener is registered under the same lock as the read, so a completion cannot
    /// slip in between (subscribe before read, spec §4.3).
    pub(crate) fn step(&mut self, now: Instant) -> WaitStep {
        let (mut shard, hash) = self.shared.shard(self.key);
        let clock_now = self.shared.clock.now();
        let lease_left = match shard.store.get_hashed(self.key, hash, clock_now) {
            None => return WaitStep::Ready(None),
            Some(record) if record.is_completed() => return WaitStep::Ready(Some(record.clone())),
            Some(record) => {
                let clock_now = Stamp::from_instant(clock_now);
                if record.deadline() < clock_now {
                    // The owner's lease lapsed: it has probably crashed. Waiting longer
                    // cannot help; the caller may claim the key itself.
                    return WaitStep::Ready(None);
                }
                clock_now.until(record.deadline())
            }
        };
        let left = remaining(self.deadline, now);
        if left.is_zero() {
            return WaitStep::Ready(None);
        }
        let event = match shard.waiters.get(self.key) {
            Some(event) => event.clone(),
            None => {
                let event = Arc::new(Event::new());
                shard.waiters.insert(self.key.into(), event.clone());
                event
            }
        };
        let listener = event.listen();
        self.watching = Some(event);
        drop(shard);
        let within = self
            .polls
            .advance()
            .min(left)
            .min(lease_left.saturating_add(LAPSE_MARGIN));
        WaitStep::Park { listener, within }
    }
}

impl<C: Clock> Drop for Wait<'_, C> {
    fn drop(&mut self) {
        let Some(event) = self.watching.take() else {
            return;
        };
        let (mut shard, _) = self.shared.shard(self.key);
        let last = shard
            .waiters
            .get(self.key)
            .is_some_and(|current| Arc::ptr_eq(current, &event) && Arc::strong_count(&event) == 2);
        if last {
            shard.waiters.remove(self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    const LEASE: Duration = Duration::from_secs(30);

    fn new_keys(shared: &Shared<ManualClock>, keys: impl Iterator<Item = String>) -> Vec<String> {
        keys.filter(|key| matches!(shared.claim(key, "fp", 1, LEASE), Ok(Claim::New(_))))
            .collect()
    }

    #[test]
    fn the_capacity_is_exact_across_shards() {
        let clock = ManualClock::new();
        let shared = Shared::new(5, Duration::ZERO, 8, clock.clone());
        let claimed = new_keys(&shared, (0..40).map(|i| format!("key-{i}")));
        assert_eq!(
            claimed.len(),
            5,
            "exactly max_size claims, whatever their shards"
        );
        assert_eq!(shared.len(), 5);
        assert!(matches!(
            shared.claim("one-more", "fp", 1, LEASE),
            Err(Error::Full { max_size: 5 })
        ));

        // Two records expire; claims of new keys in any shard can use their room, even
        // before anything purged them (a full claim purges every shard).
        for key in &claimed[..2] {
            let Some(record) = shared.get(key) else {
                panic!("{key} is held")
            };
            let token = record.claim_token().clone();
            assert!(shared.complete(key, &token, Response::new(200, "ok"), Duration::ZERO));
        }
        clock.advance(Duration::from_millis(1));
        let more = new_keys(&shared, (0..40).map(|i| format!("later-{i}")));
        assert_eq!(more.len(), 2);
        assert_eq!(shared.len(), 5);
    }

    #[test]
    fn every_operation_on_a_key_reaches_its_shard() {
        let shared = Shared::new(100, Duration::ZERO, 7, ManualClock::new());
        for i in 0..50 {
            let key = format!("key-{i}");
            let Ok(Claim::New(token)) = shared.claim(&key, "fp", 1, LEASE) else {
                panic!("{key} was not new");
            };
            assert!(shared.renew(&key, &token, LEASE));
            assert!(shared.get(&key).is_some());
            if i % 2 == 0 {
                assert!(shared.release(&key, &token));
                assert!(shared.get(&key).is_none());
            } else {
                assert!(shared.complete(&key, &token, Response::new(200, "ok"), LEASE));
            }
        }
        assert_eq!(shared.len(), 25);
        let per_shard: Vec<usize> = shared
            .shards
            .iter()
            .map(|shard| shard.0.lock().store.len())
            .collect();
        assert_eq!(per_shard.iter().sum::<usize>(), 25);
        assert!(
            per_shard.iter().filter(|&&held| held > 0).count() > 1,
            "{per_shard:?}"
        );
    }
}
