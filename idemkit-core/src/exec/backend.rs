//! [`Backend`]: the five store operations an async executor needs, as a trait, so the
//! executor is written once for every backend (in memory today, networked later).

use std::future::Future;
use std::time::{Duration, Instant};

use crate::async_backend::AsyncInMemoryBackend;
use crate::claim::Claim;
use crate::clock::Clock;
use crate::error::Error;
use crate::record::{Record, Response};
use crate::token::ClaimToken;
use crate::wait::Timer;

/// An idempotency store an async executor can run on: claim, complete, release, renew
/// and wait (spec §4.1), each fallible so that a networked backend can report failure.
///
/// The semantics are those of [`Store`](crate::Store) and
/// [`InMemoryBackend::wait_for_completion`](crate::InMemoryBackend::wait_for_completion).
/// Implemented by [`AsyncInMemoryBackend`], so by `idemkit_tokio::InMemoryBackend` and
/// `idemkit_smol::InMemoryBackend`.
pub trait Backend: Send + Sync + 'static {
    /// Claims `key`: see [`Store::claim`](crate::Store::claim).
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send;

    /// Stores the response for the claim `token` holds; `Ok(false)` when the claim is no
    /// longer this token's: see [`Store::complete`](crate::Store::complete).
    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Gives the key up: see [`Store::release`](crate::Store::release).
    fn release(
        &self,
        key: &str,
        token: &ClaimToken,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Extends the lease `token` holds; `Ok(false)` when the claim is gone or another's:
    /// see [`Store::renew`](crate::Store::renew).
    fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Waits up to `timeout` for `key` to complete: the completed record, or `None` at
    /// once for no record or a lapsed lease, on release, or on timeout.
    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<Option<Record>, Error>> + Send;

    /// The instant the backend judges leases by, on the clock that `Record::lease_until`
    /// is read against: the executor uses it to tell a refused duplicate how long the
    /// lease in flight has left (`retry_after`), and its heartbeat to know until when a
    /// lease is surely held. A networked backend returns its best local estimate of the
    /// server's clock (a `retry_after` that is off by the skew is harmless: it is a hint).
    fn now(&self) -> Instant;
}

impl<C: Clock, T: Timer> Backend for AsyncInMemoryBackend<C, T> {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        AsyncInMemoryBackend::claim(self, key, fingerprint, fingerprint_version, lease_ttl).await
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        Ok(AsyncInMemoryBackend::complete(self, key, token, response, expires_after).await)
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        Ok(AsyncInMemoryBackend::release(self, key, token).await)
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        Ok(AsyncInMemoryBackend::renew(self, key, token, lease_ttl).await)
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        Ok(AsyncInMemoryBackend::wait_for_completion(self, key, timeout).await)
    }

    fn now(&self) -> Instant {
        self.clock().now()
    }
}
