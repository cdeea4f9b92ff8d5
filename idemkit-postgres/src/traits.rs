//! The core's backend traits over [`PostgresBackend`]'s operations: async code (tokio,
//! smol) and blocking code share one backend, one pool and one listener.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Backend, BlockingBackend, Claim, ClaimToken, Error, Record, Response, Timer};

use crate::backend::PostgresBackend;
use crate::handoff::handoff;
use crate::run_transaction;
use crate::runtime::{Timers, timer};

/// Async code: each operation one statement (a wait, as many reads as it takes), bounded
/// by the operation timeout. A dropped future abandons its statement: the server may
/// still carry it out, as with any lost reply.
impl Backend for PostgresBackend {
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
                Timers::Auto,
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
        run_transaction::complete(
            &self.inner,
            key,
            token,
            &response,
            expires_after,
            Timers::Auto,
        )
        .await
    }

    /// Carried out by a task on the backend's runtime, so that a caller who drops this
    /// future (the executor, when a run is dropped) still releases the key instead of
    /// leaving it to lapse.
    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        let (done, outcome) = handoff();
        let (inner, key, token) = (self.inner.clone(), key.to_owned(), token.clone());
        run_transaction::discard(&self.inner, &key, &token);
        let pending = self.inner.releases.begin(&key);
        self.inner.spawner.spawn(async move {
            let released = inner.release(&key, &token, Timers::Auto).await;
            drop(pending);
            done.send(released);
        });
        outcome.await
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        self.inner.renew(key, token, lease_ttl, Timers::Auto).await
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        self.inner
            .wait_for_completion(key, timeout, Timers::Auto)
            .await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        self.inner.get(key, Timers::Auto).await
    }

    /// The local clock: records' instants are the database's mapped onto it, so leases
    /// read against it are off by at most a round trip.
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn timer(&self) -> Arc<dyn Timer> {
        timer()
    }
}

/// Blocking code: each call parks its thread until answered, within the operation
/// timeout per statement, on timers that never depend on an async runtime.
impl BlockingBackend for PostgresBackend {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.inner.spawner.block_on(self.inner.claim(
            key,
            fingerprint,
            fingerprint_version,
            lease_ttl,
            Timers::Independent,
        ))
    }

    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        self.inner.spawner.block_on(run_transaction::complete(
            &self.inner,
            key,
            token,
            &response,
            expires_after,
            Timers::Independent,
        ))
    }

    fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        run_transaction::discard(&self.inner, key, token);
        self.inner
            .spawner
            .block_on(self.inner.release(key, token, Timers::Independent))
    }

    fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> Result<bool, Error> {
        self.inner
            .spawner
            .block_on(self.inner.renew(key, token, lease_ttl, Timers::Independent))
    }

    fn wait_for_completion(&self, key: &str, timeout: Duration) -> Result<Option<Record>, Error> {
        self.inner.spawner.block_on(self.inner.wait_for_completion(
            key,
            timeout,
            Timers::Independent,
        ))
    }

    fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        self.inner
            .spawner
            .block_on(self.inner.get(key, Timers::Independent))
    }

    fn now(&self) -> Instant {
        Instant::now()
    }
}
