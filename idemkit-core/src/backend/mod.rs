//! The backend trait: what an executor needs from a store.
//!
//! A backend implements one trait, [`Backend`], whose six operations are those of
//! [`Store`](crate::Store) plus a wait: claim, complete, release, renew, wait for
//! completion, get. Every one is fallible, so a networked store reports a lost connection
//! as [`Error::Storage`](crate::Error::Storage) and the executor's
//! [`OnStorageError`](crate::OnStorageError) decides. Blocking code gets the same
//! operations from [`BlockingBackend`], which every `Backend` implements by blocking on
//! the operation; [`DynBackend`] is a backend chosen at run time. The conformance suite
//! (the `idemkit-conformance` crate) checks any backend.
//!
//! What a backend promises:
//!
//! - `claim` is atomic: of all concurrent claims of a free key, exactly one gets
//!   [`Claim::New`]. A claim whose lease lapsed (`lease_until < now`, by the backend's
//!   clock) is taken over as [`Claim::Reclaimed`] with a fresh token.
//! - `complete`, `release` and `renew` act only for the token that holds the claim, and
//!   say `Ok(false)` otherwise (fencing). A completed record is final until it expires.
//! - A lapsed claim is kept for the backend's reclaim grace, then dropped; a completed
//!   record is dropped once `completed_at + expires_after` has passed.
//! - `wait_for_completion` returns the completed record as soon as it lands; `None` at
//!   once when there is no record or the owner's lease has lapsed, as soon as the key is
//!   released, or when the timeout runs out. Waiters are woken by the completion, not by
//!   a poll, and a reclaim makes them watch the new claim; a backend whose wake-ups can
//!   be lost re-reads on a [`PollSchedule`] as well, as this crate's backend does.
//! - An operation that does not need to wait (everything but a wait on a key in flight,
//!   for a store in memory) should be ready the first time it is polled: blocking
//!   callers then never park.

mod blocking;
mod dynamic;
mod operator;
mod poll;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::claim::Claim;
use crate::error::Error;
use crate::record::Record;
use crate::response::Response;
use crate::rt::Timer;
use crate::token::ClaimToken;

pub use self::blocking::{BlockingBackend, in_blocking_call};
pub use self::dynamic::DynBackend;
pub use self::operator::{Operator, StoreStats};
pub use self::poll::PollSchedule;

/// An idempotency store: the one trait a backend implements. [`AsyncIdempotency`](crate::AsyncIdempotency)
/// runs on it, and [`Idempotency`](crate::Idempotency) through [`BlockingBackend`], which
/// every `Backend` is.
///
/// A backend of your own only has to answer each operation; the executor does the rest.
/// Here, one that counts the claims it passes to the in-memory backend:
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::{Duration, Instant};
/// use idemkit_core::{
///     AsyncIdempotency, Backend, Claim, ClaimToken, Error, Fingerprint, InMemoryBackend,
///     Key, Record, Response, Timer,
/// };
///
/// #[derive(Clone, Default)]
/// struct Counting {
///     inner: InMemoryBackend,
///     claims: Arc<AtomicUsize>,
/// }
///
/// impl Backend for Counting {
///     async fn claim(&self, key: &str, fingerprint: &str, version: u32, lease_ttl: Duration)
///         -> Result<Claim, Error>
///     {
///         self.claims.fetch_add(1, Ordering::Relaxed);
///         self.inner.claim(key, fingerprint, version, lease_ttl).await
///     }
///     async fn complete(&self, key: &str, token: &ClaimToken, response: Arc<Response>, ttl: Duration)
///         -> Result<bool, Error>
///     {
///         self.inner.complete(key, token, response, ttl).await
///     }
///     async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
///         self.inner.release(key, token).await
///     }
///     async fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> Result<bool, Error> {
///         self.inner.renew(key, token, lease_ttl).await
///     }
///     async fn wait_for_completion(&self, key: &str, timeout: Duration) -> Result<Option<Record>, Error> {
///         self.inner.wait_for_completion(key, timeout).await
///     }
///     async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
///         self.inner.get(key).await
///     }
///     fn now(&self) -> Instant {
///         self.inner.now()
///     }
///     fn timer(&self) -> Arc<dyn Timer> {
///         self.inner.timer()
///     }
/// }
///
/// let backend = Counting::default();
/// let idempotency = AsyncIdempotency::new(backend.clone());
/// let (key, request) = (Key::new(["k"]), Fingerprint::new(["r"]));
/// futures_lite::future::block_on(async {
///     for _ in 0..3 {
///         idempotency.run(&key, &request, || async { Ok::<_, Error>(Response::new(200, "ok")) }).await.unwrap();
///     }
/// });
/// assert_eq!(backend.claims.load(Ordering::Relaxed), 3, "one claim per run; two were replays");
///
/// // Blocking code runs the same backend: every `Backend` is a `BlockingBackend`.
/// let blocking = idemkit_core::Idempotency::new(backend.clone());
/// let outcome = blocking.run(&key, &request, |_lease| Ok::<_, Error>(Response::new(200, "ok"))).unwrap();
/// assert_eq!(outcome.decision, idemkit_core::Decision::Replayed);
/// ```
pub trait Backend: Send + Sync + 'static {
    /// Claims `key` for a request with this fingerprint, under a lease of `lease_ttl`:
    /// see [`Store::claim`](crate::Store::claim).
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send;

    /// Stores `response` for the claim `token` holds, replayed for `expires_after`, and
    /// wakes the key's waiters. `Ok(false)` when the token no longer holds the key: see
    /// [`Store::complete`](crate::Store::complete).
    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Gives the key up and wakes its waiters; `Ok(false)` when the token does not hold
    /// it: see [`Store::release`](crate::Store::release).
    fn release(
        &self,
        key: &str,
        token: &ClaimToken,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Extends the lease `token` holds to `lease_ttl` from now; `Ok(false)` when the claim
    /// is gone or another's: see [`Store::renew`](crate::Store::renew).
    fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Waits up to `timeout` (on [`Backend::timer`]) for `key` to complete: the completed
    /// record; or `None` at once for no record or a lapsed lease, as soon as the key is
    /// released, or once the timeout runs out.
    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<Option<Record>, Error>> + Send;

    /// The record of `key`, unless there is none or it is gone (an expired result, or a
    /// lapsed claim past the reclaim grace).
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Record>, Error>> + Send;

    /// The instant the backend judges leases by, on the clock [`Record::lease_until`] is
    /// read against. The executor reads it before each claim, to know until when a lease
    /// is surely held, and to tell a refused duplicate how long the lease in flight has
    /// left. A networked backend returns its best local estimate of its server's clock.
    fn now(&self) -> Instant;

    /// What the backend is, in a word (`"memory"`, `"redis"`), for logs and events. By
    /// default the backend's type name.
    fn name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }

    /// The timer the backend's waits run on. The async executor paces its heartbeats and
    /// measures its waits with it, so that both follow the same (possibly paused) time.
    fn timer(&self) -> Arc<dyn Timer>;
}

impl<B: Backend> Backend for Arc<B> {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send {
        (**self).claim(key, fingerprint, fingerprint_version, lease_ttl)
    }

    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        (**self).complete(key, token, response, expires_after)
    }

    fn release(
        &self,
        key: &str,
        token: &ClaimToken,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        (**self).release(key, token)
    }

    fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        (**self).renew(key, token, lease_ttl)
    }

    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<Option<Record>, Error>> + Send {
        (**self).wait_for_completion(key, timeout)
    }

    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Record>, Error>> + Send {
        (**self).get(key)
    }

    fn now(&self) -> Instant {
        (**self).now()
    }

    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn timer(&self) -> Arc<dyn Timer> {
        (**self).timer()
    }
}
