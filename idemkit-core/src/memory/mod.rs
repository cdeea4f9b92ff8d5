//! [`InMemoryBackend`]: the thread-safe in-memory backend, for blocking threads and async
//! tasks alike.
//!
//! [`shards`] holds the state (a sharded, locked [`Store`](crate::Store) with per-key
//! wake-ups), [`wait`] the notify-or-poll wait, [`builder`] the configuration.

mod builder;
pub(crate) mod shards;
pub(crate) mod wait;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::claim::Claim;
use crate::error::Error;
use crate::record::Record;
use crate::response::Response;
use crate::rt::{Clock, Timer};
use crate::token::ClaimToken;

pub use self::builder::InMemoryBuilder;
use self::shards::Shards;
use self::wait::{WaitStep, park};

/// How long the purger sleeps at most between two looks at the store, so a record
/// inserted with a shorter TTL while it sleeps, or a clock that jumps, is seen soon.
const PURGER_MAX_SLEEP: Duration = Duration::from_secs(1);

/// A thread-safe idempotency store in this process's memory.
///
/// One type serves blocking threads and async tasks at once, whatever its clock: leases
/// and TTLs run on the [`Clock`] it was built with (the system clock by default, a
/// [`ManualClock`](crate::ManualClock) in tests), async waits sleep on its [`Timer`]
/// (the [`ThreadTimer`](crate::ThreadTimer) by default, tokio's for paused test time),
/// and blocking waits park the thread on real time. Clones share one store.
///
/// Keys are spread over independently locked shards, the capacity is exact across them,
/// and a waiter on an in-flight key is woken the moment it completes, is released, or is
/// taken over. No operation blocks on anything but a shard's lock, held for the time the
/// store takes (a few hundred nanoseconds, plus whatever expired and is purged on the
/// way), so async code calls them inline; only waits park.
///
/// It holds records for one process only: it is no help against duplicates that reach
/// different processes.
///
/// Its operations are those of [`Backend`], for async code, and of
/// [`BlockingBackend`](crate::BlockingBackend), for threads:
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{BlockingBackend, Claim, InMemoryBackend, Response};
///
/// let backend = InMemoryBackend::new();
/// let lease = Duration::from_secs(30);
/// let Claim::New(token) = backend.claim("charge-42", "fp", 1, lease)? else { unreachable!() };
/// let ttl = Duration::from_secs(3600);
/// assert!(backend.complete("charge-42", &token, Response::new(200, "ok").into(), ttl)?);
/// let record = backend.get("charge-42")?.expect("completed");
/// assert_eq!(record.response().unwrap().body, "ok");
/// # Ok::<(), idemkit_core::Error>(())
/// ```
#[derive(Clone)]
pub struct InMemoryBackend {
    shards: Arc<Shards>,
}

impl InMemoryBackend {
    /// A backend with the defaults: 10,000 records, a 60 s reclaim grace, the system
    /// clock and the [`ThreadTimer`](crate::ThreadTimer).
    pub fn new() -> InMemoryBackend {
        InMemoryBuilder::new().build()
    }

    /// A builder to set the capacity, reclaim grace, shard count, clock or timer.
    pub fn builder() -> InMemoryBuilder {
        InMemoryBuilder::new()
    }

    fn from_shards(shards: Arc<Shards>) -> InMemoryBackend {
        InMemoryBackend { shards }
    }

    /// Records held, including expired ones not purged yet.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most records held at once.
    pub fn max_size(&self) -> usize {
        self.shards.max_size()
    }

    /// Drops every expired record now and returns how many. Claims also purge as they
    /// go, so calling this only matters for memory held by an idle backend.
    pub fn purge_expired(&self) -> usize {
        self.shards.purge_expired()
    }

    /// When [`InMemoryBackend::purge_expired`] next has work, by this backend's clock.
    #[must_use]
    pub fn next_expiry(&self) -> Option<Instant> {
        self.shards.next_expiry()
    }

    /// Purges expired records for as long as it runs: it sleeps on the backend's timer
    /// until the store's next expiry, purges, and repeats. Spawn it to bound an idle
    /// process's memory (with the purges, the store's tables shrink back to what it
    /// holds); claims purge as they go, so a busy one needs no sweeper.
    ///
    /// It looks again at least once a second, so a record inserted with a shorter TTL
    /// while it sleeps, or a clock that jumps (a [`ManualClock`](crate::ManualClock)), is
    /// purged within a second of expiring. It holds a shard's lock only to purge it.
    pub async fn run_purger(&self) {
        let timer = self.shards.timer();
        loop {
            self.purge_expired();
            let until_next = match self.next_expiry() {
                Some(next) => next.saturating_duration_since(self.now()),
                None => PURGER_MAX_SLEEP,
            };
            timer.sleep(until_next.min(PURGER_MAX_SLEEP)).await;
        }
    }

    /// How many keys have waiters watching them right now. Entries go when their record
    /// stops being claimed or their last waiter leaves, so this is bounded by the waits
    /// in progress.
    pub fn watched_keys(&self) -> usize {
        self.shards.watched_keys()
    }

    /// The current instant on the clock behind leases and TTLs.
    pub fn now(&self) -> Instant {
        self.shards.clock().now()
    }

    /// The clock behind leases and TTLs.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(self.shards.clock())
    }

    /// The timer async waits and the purger sleep on.
    pub fn timer(&self) -> Arc<dyn Timer> {
        Arc::clone(self.shards.timer())
    }
}

impl Default for InMemoryBackend {
    fn default() -> InMemoryBackend {
        InMemoryBackend::new()
    }
}

impl fmt::Debug for InMemoryBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryBackend")
            .field("len", &self.len())
            .field("max_size", &self.max_size())
            .finish_non_exhaustive()
    }
}

/// Every operation but a wait on a key in flight is ready the first time it is polled:
/// it takes a shard's lock for the time the store needs, so blocking callers (through
/// [`BlockingBackend`](crate::BlockingBackend)) never park for it.
impl Backend for InMemoryBackend {
    /// Claims `key`: see [`Store::claim`](crate::Store::claim). A claim that takes over a
    /// lapsed lease wakes that key's waiters so they watch the new claim.
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.shards
            .claim(key, fingerprint, fingerprint_version, lease_ttl)
    }

    /// Stores the response for the claim `token` holds and wakes the key's waiters: see
    /// [`Store::complete`](crate::Store::complete).
    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        Ok(self.shards.complete(key, token, response, expires_after))
    }

    /// Gives the key up and wakes its waiters (who then see no record): see
    /// [`Store::release`](crate::Store::release).
    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        Ok(self.shards.release(key, token))
    }

    /// Extends the lease `token` holds: see [`Store::renew`](crate::Store::renew).
    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        Ok(self.shards.renew(key, token, lease_ttl))
    }

    /// Waits until `key` is completed and returns its record, or returns `None`.
    ///
    /// - A completed record is returned at once; no record returns `None` at once.
    /// - A claim whose lease has lapsed (by this backend's clock) returns `None`: its
    ///   owner has probably crashed, and the caller may claim the key itself.
    /// - Otherwise the waiter parks until the key completes, is released (`None`) or is
    ///   reclaimed (it then watches the new claim), re-reading at 50 ms, doubling to 1 s,
    ///   in case a wake-up is ever missed, and once the lease in flight ends. After
    ///   `timeout` on the backend's timer it returns `None`.
    ///
    /// Dropping the future at any point stops the wait and leaves nothing behind.
    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        let timer = self.shards.timer();
        let mut wait = self.shards.wait(key, timeout, timer.now());
        loop {
            match wait.step(timer.now()) {
                WaitStep::Ready(record) => return Ok(record),
                WaitStep::Park { listener, within } => park(listener, within, timer.as_ref()).await,
            }
        }
    }

    /// The record of `key`, unless there is none or it is gone (an expired result, or a
    /// lapsed claim past its reclaim grace). A lapsed claim within its grace is returned.
    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        Ok(self.shards.get(key))
    }

    fn now(&self) -> Instant {
        InMemoryBackend::now(self)
    }

    fn name(&self) -> &'static str {
        "memory"
    }

    fn timer(&self) -> Arc<dyn Timer> {
        InMemoryBackend::timer(self)
    }
}
