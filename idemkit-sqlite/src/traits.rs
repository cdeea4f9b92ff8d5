//! The core's backend trait over [`SqliteBackend`]'s operations. Blocking code (through
//! `BlockingBackend`, which every backend is) runs them inline on its own thread; async
//! code runs its writes on the backend's writer thread (see `writer`) and its reads on
//! the runtime's blocking pool (see `runtime`), so that file I/O never stalls an executor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Backend, Claim, ClaimToken, Error, Record, Response, Timer, in_blocking_call};

use crate::backend::SqliteBackend;
use crate::runtime::{RuntimeTimer, unblock};

/// Async code: each write (claim, complete, release, renew) runs on the backend's writer
/// thread, each read on the blocking pool of the runtime it is polled in; a write is
/// carried out even if its future is dropped after the first poll. A blocking caller
/// ([`in_blocking_call`]) runs each operation inline on its own thread, waiting at most
/// the busy timeout for another process's write.
impl Backend for SqliteBackend {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        if in_blocking_call() {
            self.inner.releases.settled_blocking(key);
            return self
                .inner
                .claim(key, fingerprint, fingerprint_version, lease_ttl);
        }
        self.inner.releases.settled(key).await;
        let inner = Arc::clone(&self.inner);
        let (key, fingerprint) = (key.to_owned(), fingerprint.to_owned());
        self.inner
            .writes
            .run("claim", move || {
                inner.claim(&key, &fingerprint, fingerprint_version, lease_ttl)
            })
            .await?
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        if in_blocking_call() {
            return self.inner.complete(key, token, &response, expires_after);
        }
        let inner = Arc::clone(&self.inner);
        let (key, token) = (key.to_owned(), token.clone());
        self.inner
            .writes
            .run("complete", move || {
                inner.complete(&key, &token, &response, expires_after)
            })
            .await?
    }

    /// Started at the first poll and carried out even if this future is dropped then
    /// (the executor polls a dropped run's release once); until it lands, this
    /// process's next operation on the key waits for it.
    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        if in_blocking_call() {
            return self.inner.release(key, token);
        }
        let inner = Arc::clone(&self.inner);
        let pending = self.inner.releases.begin(key);
        let (key, token) = (key.to_owned(), token.clone());
        self.inner
            .writes
            .run("release", move || {
                let released = inner.release(&key, &token);
                drop(pending);
                released
            })
            .await?
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        if in_blocking_call() {
            return self.inner.renew(key, token, lease_ttl);
        }
        let inner = Arc::clone(&self.inner);
        let (key, token) = (key.to_owned(), token.clone());
        self.inner
            .writes
            .run("renew", move || inner.renew(&key, &token, lease_ttl))
            .await?
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        if in_blocking_call() {
            return self.inner.wait_blocking(key, timeout);
        }
        self.inner.releases.settled(key).await;
        self.inner.wait_async(key, timeout).await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        if in_blocking_call() {
            self.inner.releases.settled_blocking(key);
            return self.inner.get(key);
        }
        self.inner.releases.settled(key).await;
        let inner = Arc::clone(&self.inner);
        let key = key.to_owned();
        unblock("read", move || inner.get(&key)).await?
    }

    /// The machine's monotonic clock (or the test clock the backend was built with);
    /// records' instants are the file's wall-clock times mapped onto it.
    fn now(&self) -> Instant {
        self.inner.now()
    }

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn timer(&self) -> Arc<dyn Timer> {
        Arc::new(RuntimeTimer)
    }
}
