//! The core's backend traits over [`RedisBackend`]'s operations: async code (tokio,
//! smol, any executor) and blocking code share one backend and one connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Backend, Claim, ClaimToken, Clock, Error, Record, Response};
use idemkit_core::{Sleep, Timer};

use crate::backend::RedisBackend;
use crate::error::RedisError;
use crate::runtime::{Timers, sleep};

/// Real time: tokio's sleep when polled inside a tokio runtime, async-io's anywhere else.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RuntimeTimer;

impl Clock for RuntimeTimer {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl Timer for RuntimeTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(sleep(Timers::Auto, duration))
    }
}

/// Async code: each operation is one round trip (a wait, as many as it takes), bounded
/// by the command timeout. A dropped future abandons its command: the server may still
/// carry it out, as with any lost reply.
impl Backend for RedisBackend {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.inner
            .claim(
                key,
                fingerprint,
                fingerprint_version,
                lease_ttl,
                Timers::for_caller(),
            )
            .await
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        self.inner
            .complete(key, token, &response, expires_after, Timers::for_caller())
            .await
    }

    /// Carried out by a task on the backend's runtime, so that a caller who drops this
    /// future after polling it once (the executor, when a run is dropped) still releases
    /// the key instead of leaving it to lapse.
    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let (inner, key, token) = (self.inner.clone(), key.to_owned(), token.clone());
        let pending = self.inner.releases.begin(&key);
        self.inner.spawner.spawn(async move {
            let released = inner.release(&key, &token, Timers::Auto).await;
            drop(pending);
            let _ = sender.send(released);
        });
        receiver
            .await
            .unwrap_or_else(|_| Err(Error::storage(RedisError::runtime_gone("release"))))
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        self.inner
            .renew(key, token, lease_ttl, Timers::for_caller())
            .await
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        self.inner
            .wait_for_completion(key, timeout, Timers::for_caller())
            .await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        self.inner.get(key, Timers::for_caller()).await
    }

    /// The local clock: records' instants are the server's mapped onto it (see the
    /// crate docs), so leases read against it are off by at most a round trip.
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn name(&self) -> &'static str {
        "redis"
    }

    fn timer(&self) -> Arc<dyn Timer> {
        Arc::new(RuntimeTimer)
    }
}
