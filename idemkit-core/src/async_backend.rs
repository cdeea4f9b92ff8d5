//! [`AsyncInMemoryBackend`]: the in-memory backend for async code, on any runtime whose
//! [`Timer`] is supplied.
//!
//! `idemkit-tokio` and `idemkit-smol` are this type with their timer and default clock
//! filled in. No operation blocks: each locks one shard for the time the store takes
//! (a few hundred nanoseconds, plus whatever has expired and is purged on the way; a
//! claim that finds the store full also purges every other shard in turn), so they run
//! inline instead of on a blocking pool. Only waits park, and they park the task.

use std::fmt;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use crate::blocking::InMemoryBackend;
use crate::builder::{Builder, Flavor};
use crate::claim::Claim;
use crate::clock::Clock;
use crate::error::Error;
use crate::record::{Record, Response};
use crate::token::ClaimToken;
use crate::wait::{PollSchedule, Timer, WaitStep, park_async};

/// The in-memory backend for async code: the blocking backend's store and wake-ups, with
/// waits that park a task instead of a thread.
///
/// Clones share one store. Dropping a [`wait_for_completion`](Self::wait_for_completion)
/// future at any point stops its wait and leaves nothing behind.
pub struct AsyncInMemoryBackend<C: Clock, T: Timer> {
    inner: InMemoryBackend<C>,
    timer: T,
}

/// The [`Flavor`] of [`AsyncInMemoryBackend`] with timer `T`.
#[derive(Debug)]
pub struct Async<T>(PhantomData<fn() -> T>);

impl<T: Timer + Default> Flavor for Async<T> {
    type Backend<C: Clock> = AsyncInMemoryBackend<C, T>;

    fn wrap<C: Clock>(inner: InMemoryBackend<C>) -> AsyncInMemoryBackend<C, T> {
        AsyncInMemoryBackend {
            inner,
            timer: T::default(),
        }
    }
}

impl<T: Timer + Default> AsyncInMemoryBackend<T::DefaultClock, T> {
    /// A backend with the defaults: 10,000 records, a 60 s reclaim grace, the timer's
    /// default clock.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder to set the capacity, reclaim grace, clock or shard count.
    pub fn builder() -> Builder<T::DefaultClock, Async<T>> {
        Builder::with_clock(T::DefaultClock::default())
    }
}

impl<T: Timer + Default> Default for AsyncInMemoryBackend<T::DefaultClock, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Clock, T: Timer> AsyncInMemoryBackend<C, T> {
    /// Claims `key`: see [`Store::claim`](crate::Store::claim).
    pub async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.inner
            .claim(key, fingerprint, fingerprint_version, lease_ttl)
    }

    /// Stores the response for the claim `token` holds and wakes the key's waiters: see
    /// [`Store::complete`](crate::Store::complete).
    pub async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> bool {
        self.inner.complete(key, token, response, expires_after)
    }

    /// Gives the key up and wakes its waiters: see [`Store::release`](crate::Store::release).
    pub async fn release(&self, key: &str, token: &ClaimToken) -> bool {
        self.inner.release(key, token)
    }

    /// Extends the lease `token` holds: see [`Store::renew`](crate::Store::renew).
    pub async fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        self.inner.renew(key, token, lease_ttl)
    }

    /// Waits until `key` is completed and returns its record, or returns `None`: at once
    /// for no record or a lapsed lease, on release, or after `timeout` on the runtime's
    /// timer. The rules are those of
    /// [`InMemoryBackend::wait_for_completion`](crate::InMemoryBackend::wait_for_completion);
    /// only the parking differs.
    pub async fn wait_for_completion(&self, key: &str, timeout: Duration) -> Option<Record> {
        let mut wait = self.inner.shared().wait(key, timeout, self.timer.now());
        loop {
            match wait.step(self.timer.now()) {
                WaitStep::Ready(record) => return record,
                WaitStep::Park { listener, within } => {
                    park_async(listener, within, &self.timer).await
                }
            }
        }
    }

    /// Purges expired records for as long as it runs: it sleeps until the store's next
    /// expiry, purges, and repeats. Spawn it on the runtime to bound an idle process's
    /// memory (spec §4.13); claims purge as they go, so a busy one needs no sweeper.
    ///
    /// It looks again at least once a second, so a record inserted with a shorter TTL
    /// while it sleeps, or a clock that jumps (a [`ManualClock`](crate::ManualClock)), is
    /// purged within a second of expiring. It holds a shard's lock only to purge it.
    pub async fn run_purger(&self) {
        loop {
            self.inner.purge_expired();
            let until_next = match self.inner.next_expiry() {
                Some(next) => next.saturating_duration_since(self.inner.clock().now()),
                None => PollSchedule::CAP,
            };
            self.timer.sleep(until_next.min(PollSchedule::CAP)).await;
        }
    }

    /// The record of `key`, unless there is none or it is gone (an expired result, or a
    /// lapsed claim past its reclaim grace). A lapsed claim within its grace is returned.
    pub fn get(&self, key: &str) -> Option<Record> {
        self.inner.get(key)
    }

    /// Records held, including expired ones not purged yet.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Drops every expired record now and returns how many.
    pub fn purge_expired(&self) -> usize {
        self.inner.purge_expired()
    }

    /// When [`Self::purge_expired`] next has work, by this backend's clock.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.inner.next_expiry()
    }

    /// How many keys have waiters watching them right now (bounded by the waits in
    /// progress; cancelled waits leave no entry).
    pub fn watched_keys(&self) -> usize {
        self.inner.watched_keys()
    }

    /// The clock behind leases and TTLs.
    pub fn clock(&self) -> &C {
        self.inner.clock()
    }

    /// The timer waits run on.
    pub fn timer(&self) -> &T {
        &self.timer
    }

    /// The same store as a blocking backend, for code that runs on threads.
    pub fn blocking(&self) -> &InMemoryBackend<C> {
        &self.inner
    }
}

impl<C: Clock, T: Timer> Clone for AsyncInMemoryBackend<C, T> {
    fn clone(&self) -> Self {
        AsyncInMemoryBackend {
            inner: self.inner.clone(),
            timer: self.timer.clone(),
        }
    }
}

impl<C: Clock, T: Timer> fmt::Debug for AsyncInMemoryBackend<C, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncInMemoryBackend")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}
