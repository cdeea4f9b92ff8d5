//! The core's backend traits over [`RedisBackend`]'s operations: async code (tokio,
//! smol, any executor) and blocking code share one backend and one connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::Timer;
use idemkit_core::{Backend, Claim, ClaimToken, Error, Record, Response};

use crate::backend::RedisBackend;
use crate::error::RedisError;
use crate::runtime::handoff;

/// Async code: each operation is one round trip (a wait, as many as it takes), bounded
/// by the command timeout on the backend's runtime. Each is driven so that it reaches
/// the backend's runtime from any caller (a task of any runtime, or
/// `futures_lite::future::block_on` on a plain thread; see the crate docs' "Runtimes").
/// A dropped future abandons its command: the server may still carry it out, as with any
/// lost reply.
impl Backend for RedisBackend {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        let (inner, key, fingerprint) =
            (self.inner.clone(), key.to_owned(), fingerprint.to_owned());
        self.inner
            .runtime
            .drive(async move {
                inner
                    .claim(&key, &fingerprint, fingerprint_version, lease_ttl)
                    .await
            })
            .await
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        let (inner, key, token) = (self.inner.clone(), key.to_owned(), token.clone());
        self.inner
            .runtime
            .drive(async move { inner.complete(&key, &token, &response, expires_after).await })
            .await
    }

    /// Carried out by a task on the backend's runtime, so that a caller who drops this
    /// future after polling it once (the executor, when a run is dropped) still releases
    /// the key instead of leaving it to lapse.
    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        let (sender, receipt) = handoff();
        let (inner, key, token) = (self.inner.clone(), key.to_owned(), token.clone());
        let pending = self.inner.releases.begin(&key);
        self.inner.runtime.spawn(async move {
            let released = inner.release(&key, &token).await;
            drop(pending);
            sender.send(released);
        });
        receipt
            .recv()
            .await
            .unwrap_or_else(|| Err(Error::storage(RedisError::runtime_gone("release"))))
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        let (inner, key, token) = (self.inner.clone(), key.to_owned(), token.clone());
        self.inner
            .runtime
            .drive(async move { inner.renew(&key, &token, lease_ttl).await })
            .await
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        let (inner, key) = (self.inner.clone(), key.to_owned());
        self.inner
            .runtime
            .drive(async move { inner.wait_for_completion(&key, timeout).await })
            .await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        let (inner, key) = (self.inner.clone(), key.to_owned());
        self.inner
            .runtime
            .drive(async move { inner.get(&key).await })
            .await
    }

    /// The local clock: records' instants are the server's mapped onto it (see the
    /// crate docs), so leases read against it are off by at most a round trip.
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn name(&self) -> &'static str {
        "redis"
    }

    /// The backend's runtime (see the crate docs' "Runtimes"): the executor's heartbeat
    /// and waits sleep on the clock the backend's own time limits use.
    fn timer(&self) -> Arc<dyn Timer> {
        self.inner.runtime.timer()
    }
}
