//! [`Shards`]: the in-memory backend's state, a sharded and locked [`Store`] with per-key
//! wake-ups, serving blocking threads and async tasks alike.
//!
//! Keys are spread over shards by hash, each a `parking_lot` mutex around a `Store` and
//! the events its waiters listen on; the capacity is one exact budget across all shards.
//! No lock is held while blocking or while notifying.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use event_listener::Event;
use parking_lot::{Mutex, MutexGuard};

use crate::backend::PollSchedule;
use crate::claim::Claim;
use crate::error::Error;
use crate::memory::wait::WaitStep;
use crate::random::RandomSource;
use crate::record::Record;
use crate::response::Response;
use crate::rt::deadline::{deadline_after, remaining};
use crate::rt::{Clock, Timer};
use crate::store::{HashedKey, KeyHasher, SharedCapacity, Store, Watch};
use crate::token::ClaimToken;

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
            return None;
        }
        let event = self.waiters.remove(key);
        self.shrink_waiters();
        event
    }

    /// Gives back the table of a waiter map that once tracked many keys and now tracks
    /// none (a small one is kept, as the next waiter would allocate it again).
    fn shrink_waiters(&mut self) {
        if self.waiters.is_empty() && self.waiters.capacity() > 64 {
            self.waiters.shrink_to_fit();
        }
    }
}

/// Keeps each shard's lock on its own cache line, so shards do not slow each other down.
#[repr(align(128))]
struct Padded<T>(T);

/// The in-memory backend's state: shards, their shared capacity, the clock and the timer.
pub(crate) struct Shards {
    shards: Box<[Padded<Mutex<Shard>>]>,
    /// The key hasher of every shard's store, also what routes a key to its shard: one
    /// SipHash per operation does both.
    hasher: KeyHasher,
    capacity: SharedCapacity,
    clock: Arc<dyn Clock>,
    timer: Arc<dyn Timer>,
}

fn wake(event: Option<Arc<Event>>) {
    if let Some(event) = event {
        event.notify(usize::MAX);
    }
}

impl Shards {
    pub(crate) fn new(
        max_size: usize,
        reclaim_grace: Duration,
        shards: usize,
        random: Arc<dyn RandomSource>,
        clock: Arc<dyn Clock>,
        timer: Arc<dyn Timer>,
    ) -> Shards {
        let capacity = SharedCapacity::new(max_size);
        let hasher = KeyHasher::new();
        let shards = (0..shards.max(1))
            .map(|_| {
                let store = Store::builder()
                    .shared_capacity(capacity.clone())
                    .reclaim_grace(reclaim_grace)
                    .key_hasher(hasher.clone())
                    .random(random.clone())
                    .build()
                    .expect("a shared capacity and no max_size of its own");
                Padded(Mutex::new(Shard {
                    store,
                    waiters: HashMap::new(),
                }))
            })
            .collect();
        Shards {
            shards,
            hasher,
            capacity,
            clock,
            timer,
        }
    }

    /// The default shard count: enough that threads on distinct keys rarely meet.
    ///
    /// Two threads meeting on a shard cost far more than the shard's memory (an empty
    /// shard is well under a kilobyte; tokens come from each thread's own buffer): at
    /// 8 shards, 2 threads on distinct keys ran only 1.15x the throughput of one, at 64
    /// they ran 1.4x. So: 32 per core, as a power of two, at most 512.
    pub(crate) fn default_count() -> usize {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        (cores * 32).next_power_of_two().min(512)
    }

    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub(crate) fn timer(&self) -> &Arc<dyn Timer> {
        &self.timer
    }

    pub(crate) fn max_size(&self) -> usize {
        self.capacity.max_size()
    }

    /// The shard of `key`, locked, and the key hashed for that shard's store.
    fn shard<'k>(&self, key: &'k str) -> (MutexGuard<'_, Shard>, HashedKey<'k>) {
        let key = self.hasher.hash(key);
        (self.shards[key.shard(self.shards.len())].0.lock(), key)
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
            let (mut shard, key) = self.shard(key);
            let claim =
                shard
                    .store
                    .claim_hashed(key, fingerprint, fingerprint_version, lease_ttl, now);
            let woken = match claim {
                // A claim that replaced a record (a lapsed claim, or one gone after its
                // grace) wakes whoever still watched the old one: they re-read and watch
                // the new claim, instead of learning of it at their next poll.
                Ok(Claim::Reclaimed(_) | Claim::New(_)) => shard.take_waiters(key.key()),
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
        response: Arc<Response>,
        expires_after: Duration,
    ) -> bool {
        let now = self.clock.now();
        let (mut shard, key) = self.shard(key);
        let done = shard
            .store
            .complete_hashed(key, token, response, expires_after, now);
        let woken = if done {
            shard.take_waiters(key.key())
        } else {
            None
        };
        drop(shard);
        wake(woken);
        done
    }

    pub(crate) fn release(&self, key: &str, token: &ClaimToken) -> bool {
        let now = self.clock.now();
        let (mut shard, key) = self.shard(key);
        let released = shard.store.release_hashed(key, token, now);
        let woken = if released {
            shard.take_waiters(key.key())
        } else {
            None
        };
        drop(shard);
        wake(woken);
        released
    }

    pub(crate) fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        let now = self.clock.now();
        let (mut shard, key) = self.shard(key);
        shard.store.renew_hashed(key, token, lease_ttl, now)
    }

    pub(crate) fn get(&self, key: &str) -> Option<Record> {
        let now = self.clock.now();
        let (shard, key) = self.shard(key);
        shard.store.get_hashed(key, now)
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

    /// Starts waiting for `key` to complete, for at most `timeout` from `start` (on the
    /// waiter's own real-time clock: the timer's, or the system's for a blocked thread).
    pub(crate) fn wait<'a>(&'a self, key: &'a str, timeout: Duration, start: Instant) -> Wait<'a> {
        Wait {
            shards: self,
            key,
            deadline: deadline_after(start, timeout),
            polls: PollSchedule::new(),
            watching: None,
        }
    }
}

/// One waiter's progress. Dropping it (a finished wait, or a cancelled future) stops
/// watching: the key's event entry goes when its last waiter does.
pub(crate) struct Wait<'a> {
    shards: &'a Shards,
    key: &'a str,
    deadline: Option<Instant>,
    polls: PollSchedule,
    /// The event this waiter listens on; every clone of it is made and dropped with the
    /// shard locked, so counting clones there is exact.
    watching: Option<Arc<Event>>,
}

impl Wait<'_> {
    /// Re-reads the key's state and says what to do next; `waiter_now` is the current
    /// instant on the clock the wait's timeout counts in.
    ///
    /// The listener is registered under the same lock as the read, so a completion cannot
    /// slip in between: the waiter subscribes before it reads.
    pub(crate) fn step(&mut self, waiter_now: Instant) -> WaitStep {
        let (mut shard, key) = self.shards.shard(self.key);
        let lease_now = self.shards.clock.now();
        let lease_left = match shard.store.watch_hashed(key, lease_now) {
            Watch::Absent => return WaitStep::Ready(None),
            Watch::Completed(record) => return WaitStep::Ready(Some(record)),
            // The owner's lease lapsed: it has probably crashed. Waiting longer cannot
            // help; the caller may claim the key itself.
            Watch::Lapsed => return WaitStep::Ready(None),
            Watch::Claimed { lease_left } => lease_left,
        };
        let left = remaining(self.deadline, waiter_now);
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
        // Replaced under the lock, like every other change to the clones' count.
        self.watching = Some(event);
        drop(shard);
        let within = self.polls.next_park(lease_left).min(left);
        WaitStep::Park { listener, within }
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if self.watching.is_none() {
            return;
        }
        let (mut shard, _) = self.shards.shard(self.key);
        // Drop this waiter's clone under the lock first: then the map's own is the only
        // one left exactly when no other waiter watches, whatever order waiters leave in.
        let Some(event) = self.watching.take() else {
            return;
        };
        let current = shard.waiters.get(self.key);
        let ours = current.is_some_and(|current| Arc::ptr_eq(current, &event));
        drop(event);
        if ours
            && shard
                .waiters
                .get(self.key)
                .is_some_and(|current| Arc::strong_count(current) == 1)
        {
            shard.waiters.remove(self.key);
            shard.shrink_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::{ManualClock, ThreadTimer};

    const LEASE: Duration = Duration::from_secs(30);

    fn shards(max_size: usize, count: usize, clock: &ManualClock) -> Shards {
        let clock = Arc::new(clock.clone());
        Shards::new(
            max_size,
            Duration::ZERO,
            count,
            Arc::new(crate::random::OsRandom),
            clock,
            Arc::new(ThreadTimer),
        )
    }

    fn new_keys(shared: &Shards, keys: impl Iterator<Item = String>) -> Vec<String> {
        keys.filter(|key| matches!(shared.claim(key, "fp", 1, LEASE), Ok(Claim::New(_))))
            .collect()
    }

    #[test]
    fn the_capacity_is_exact_across_shards() {
        let clock = ManualClock::new();
        let shared = shards(5, 8, &clock);
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
            let response = Arc::new(Response::new(200, "ok"));
            assert!(shared.complete(key, &token, response, Duration::ZERO));
        }
        clock.advance(Duration::from_millis(1));
        let more = new_keys(&shared, (0..40).map(|i| format!("later-{i}")));
        assert_eq!(more.len(), 2);
        assert_eq!(shared.len(), 5);
    }

    #[test]
    fn every_operation_on_a_key_reaches_its_shard() {
        let shared = shards(100, 7, &ManualClock::new());
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
                let response = Arc::new(Response::new(200, "ok"));
                assert!(shared.complete(&key, &token, response, LEASE));
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
