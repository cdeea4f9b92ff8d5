//! The shared layer: a sharded, locked [`Store`] with per-key wake-ups, written once for
//! the blocking backend and every async adapter.
//!
//! Keys are spread over shards by hash, each a `parking_lot` mutex around a `Store` and
//! the events its waiters listen on; the capacity is one exact budget across all shards.
//! No lock is held while blocking or while notifying.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::{Duration, Instant};

use event_listener::Event;
use parking_lot::{Mutex, MutexGuard};

use crate::capacity::Capacity;
use crate::claim::Claim;
use crate::clock::Clock;
use crate::error::Error;
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
    /// removed when that record completes, is released or reclaimed, and by the last
    /// waiter to leave. So waiter bookkeeping never outlives what it watches.
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
    router: RandomState,
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
        let shards = (0..shards.max(1))
            .map(|_| {
                let store = Store::sharing(capacity.clone(), reclaim_grace);
                Padded(Mutex::new(Shard {
                    store,
                    waiters: HashMap::new(),
                }))
            })
            .collect();
        Shared {
            shards,
            router: RandomState::new(),
            capacity,
            clock,
        }
    }

    /// The default shard count: enough that threads on distinct keys rarely meet.
    pub(crate) fn default_shards() -> usize {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        (cores * 4).next_power_of_two().min(64)
    }

    pub(crate) fn clock(&self) -> &C {
        &self.clock
    }

    fn shard(&self, key: &str) -> MutexGuard<'_, Shard> {
        let index = self.router.hash_one(key) as usize % self.shards.len();
        self.shards[index].0.lock()
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
            let mut shard = self.shard(key);
            let claim = shard
                .store
                .claim(key, fingerprint, fingerprint_version, lease_ttl, now);
            let woken = match claim {
                // The old claim's waiters re-read and start watching the new one.
                Ok(Claim::Reclaimed(_)) => shard.take_waiters(key),
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
        let mut shard = self.shard(key);
        let done = shard
            .store
            .complete(key, token, response, expires_after, now);
        let woken = if done { shard.take_waiters(key) } else { None };
        drop(shard);
        wake(woken);
        done
    }

    pub(crate) fn release(&self, key: &str, token: &ClaimToken) -> bool {
        let mut shard = self.shard(key);
        // Release takes no `now`; telling the store the time first lets it judge the
        // reclaim grace by this backend's clock rather than by its last operation.
        shard.store.purge_expired(self.clock.now());
        let released = shard.store.release(key, token);
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
        self.shard(key).store.renew(key, token, lease_ttl, now)
    }

    pub(crate) fn get(&self, key: &str) -> Option<Record> {
        let now = self.clock.now();
        self.shard(key).store.get(key, now).cloned()
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
        let mut shard = self.shared.shard(self.key);
        let clock_now = self.shared.clock.now();
        let lease_left = match shard.store.get(self.key, clock_now) {
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
        let mut shard = self.shared.shard(self.key);
        let last = shard
            .waiters
            .get(self.key)
            .is_some_and(|current| Arc::ptr_eq(current, &event) && Arc::strong_count(&event) == 2);
        if last {
            shard.waiters.remove(self.key);
        }
    }
}
