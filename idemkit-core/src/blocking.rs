//! [`InMemoryBackend`]: the thread-safe in-memory backend for blocking code.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::builder::Builder;
use crate::claim::Claim;
use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::record::{Record, Response};
use crate::shared::Shared;
use crate::token::ClaimToken;
use crate::wait::{WaitStep, park_blocking};

/// A thread-safe idempotency store in this process's memory.
///
/// Clones share one store. Keys are spread over independently locked shards, the capacity
/// is exact across them, and a thread waiting for an in-flight key is woken the moment it
/// completes or is released. Leases and TTLs run on the clock `C`; waits run on real time.
///
/// It holds records for one process only: it is no help against duplicates that reach
/// different processes.
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{Claim, InMemoryBackend, Response};
///
/// let backend = InMemoryBackend::new();
/// let lease = Duration::from_secs(30);
/// let Claim::New(token) = backend.claim("charge-42", "fp", 1, lease)? else { unreachable!() };
///
/// let waiter = {
///     let backend = backend.clone();
///     std::thread::spawn(move || backend.wait_for_completion("charge-42", Duration::from_secs(10)))
/// };
/// assert!(backend.complete("charge-42", &token, Response::new(200, "ok"), Duration::from_secs(3600)));
/// let record = waiter.join().unwrap().expect("completed");
/// assert_eq!(record.response().unwrap().body, b"ok");
/// # Ok::<(), idemkit_core::Error>(())
/// ```
pub struct InMemoryBackend<C: Clock = SystemClock> {
    shared: Arc<Shared<C>>,
}

impl InMemoryBackend<SystemClock> {
    /// A backend with the defaults: 10,000 records, a 60 s reclaim grace, the system clock.
    pub fn new() -> InMemoryBackend {
        InMemoryBackend::builder().build()
    }

    /// A builder to set the capacity, reclaim grace, clock or shard count.
    pub fn builder() -> Builder<SystemClock> {
        Builder::with_clock(SystemClock)
    }
}

impl Default for InMemoryBackend<SystemClock> {
    fn default() -> InMemoryBackend {
        InMemoryBackend::new()
    }
}

impl<C: Clock> InMemoryBackend<C> {
    pub(crate) fn from_shared(shared: Arc<Shared<C>>) -> InMemoryBackend<C> {
        InMemoryBackend { shared }
    }

    pub(crate) fn shared(&self) -> &Shared<C> {
        &self.shared
    }

    /// Claims `key`: see [`Store::claim`](crate::Store::claim). A claim that takes over a
    /// lapsed lease wakes that key's waiters so they watch the new claim.
    pub fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.shared
            .claim(key, fingerprint, fingerprint_version, lease_ttl)
    }

    /// Stores the response for the claim `token` holds and wakes the key's waiters: see
    /// [`Store::complete`](crate::Store::complete).
    pub fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> bool {
        self.shared.complete(key, token, response, expires_after)
    }

    /// Gives the key up and wakes its waiters (who then see no record): see
    /// [`Store::release`](crate::Store::release).
    pub fn release(&self, key: &str, token: &ClaimToken) -> bool {
        self.shared.release(key, token)
    }

    /// Extends the lease `token` holds: see [`Store::renew`](crate::Store::renew).
    pub fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        self.shared.renew(key, token, lease_ttl)
    }

    /// Blocks until `key` is completed and returns its record, or returns `None`.
    ///
    /// - A completed record is returned at once; no record returns `None` at once.
    /// - A claim whose lease has lapsed (by this backend's clock) returns `None`: its
    ///   owner has probably crashed, and the caller may claim the key itself.
    /// - Otherwise the thread sleeps until the key completes, is released (`None`) or is
    ///   reclaimed (it then watches the new claim), re-reading at 50 ms, doubling to 1 s,
    ///   in case a wake-up is ever missed. After `timeout` of real time it returns `None`.
    pub fn wait_for_completion(&self, key: &str, timeout: Duration) -> Option<Record> {
        let mut wait = self.shared.wait(key, timeout, Instant::now());
        loop {
            match wait.step(Instant::now()) {
                WaitStep::Ready(record) => return record,
                WaitStep::Park { listener, within } => park_blocking(listener, within),
            }
        }
    }

    /// The record of `key`, unless there is none or it is gone (an expired result, or a
    /// lapsed claim past its reclaim grace). A lapsed claim within its grace is returned.
    pub fn get(&self, key: &str) -> Option<Record> {
        self.shared.get(key)
    }

    /// Records held, including expired ones not purged yet.
    pub fn len(&self) -> usize {
        self.shared.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every expired record now and returns how many. Claims also purge as they
    /// go, so calling this only matters for memory held by an idle backend.
    pub fn purge_expired(&self) -> usize {
        self.shared.purge_expired()
    }

    /// When [`InMemoryBackend::purge_expired`] next has work, by this backend's clock.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.shared.next_expiry()
    }

    /// How many keys have waiters watching them right now. Entries go when their record
    /// stops being claimed or their last waiter leaves, so this is bounded by the waits
    /// in progress.
    pub fn watched_keys(&self) -> usize {
        self.shared.watched_keys()
    }

    /// The clock behind leases and TTLs.
    pub fn clock(&self) -> &C {
        self.shared.clock()
    }
}

impl<C: Clock> Clone for InMemoryBackend<C> {
    fn clone(&self) -> InMemoryBackend<C> {
        InMemoryBackend {
            shared: self.shared.clone(),
        }
    }
}

impl<C: Clock> fmt::Debug for InMemoryBackend<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryBackend")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}
