//! The core's backend trait over [`PostgresBackend`]'s operations: async code (tokio,
//! smol) and blocking code (through `BlockingBackend`) share one backend, one pool and
//! one listener.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Backend, Claim, ClaimToken, Error, Record, Response, Timer};

use crate::backend::PostgresBackend;
use crate::handoff::handoff;
use crate::run_transaction;
use crate::runtime::{Timers, timer};

/// Each operation is one statement (a wait, as many reads as it takes), bounded by the
/// operation timeout, and polled in the context of the backend's runtime. A dropped
/// future abandons its statement: the server may still carry it out, as with any lost
/// reply. A blocking caller (through `BlockingBackend`) parks its thread until answered,
/// on time limits that never depend on an async runtime's timer, so a call made where it
/// should not be (on a runtime's own thread) still ends.
impl Backend for PostgresBackend {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        let claim = self.inner.claim(
            key,
            fingerprint,
            fingerprint_version,
            lease_ttl,
            Timers::for_caller(),
        );
        self.inner.spawner.in_context(claim).await
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        let complete = run_transaction::complete(
            &self.inner,
            key,
            token,
            &response,
            expires_after,
            Timers::for_caller(),
        );
        self.inner.spawner.in_context(complete).await
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
        let renew = self
            .inner
            .renew(key, token, lease_ttl, Timers::for_caller());
        self.inner.spawner.in_context(renew).await
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        let wait = self
            .inner
            .wait_for_completion(key, timeout, Timers::for_caller());
        self.inner.spawner.in_context(wait).await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        let get = self.inner.get(key, Timers::for_caller());
        self.inner.spawner.in_context(get).await
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
