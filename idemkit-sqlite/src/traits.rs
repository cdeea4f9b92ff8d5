//! The core's backend traits over [`SqliteBackend`]'s operations: blocking code calls
//! them inline; async code runs its writes on the backend's writer thread (see `writer`)
//! and its reads on the runtime's blocking pool (see `runtime`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{BlockingBackend, Claim, ClaimToken, Error, Record, Response};

use crate::backend::SqliteBackend;

/// Blocking code: each call runs on the calling thread, waiting at most the busy timeout
/// for another process's write.
impl BlockingBackend for SqliteBackend {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.inner.releases.settled_blocking(key);
        self.inner
            .claim(key, fingerprint, fingerprint_version, lease_ttl)
    }

    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        self.inner.complete(key, token, &response, expires_after)
    }

    fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        self.inner.release(key, token)
    }

    fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> Result<bool, Error> {
        self.inner.renew(key, token, lease_ttl)
    }

    fn wait_for_completion(&self, key: &str, timeout: Duration) -> Result<Option<Record>, Error> {
        self.inner.wait_blocking(key, timeout)
    }

    fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        self.inner.releases.settled_blocking(key);
        self.inner.get(key)
    }

    /// The machine's monotonic clock (or the test clock the backend was built with);
    /// records' instants are the file's wall-clock times mapped onto it.
    fn now(&self) -> Instant {
        self.inner.now()
    }
}

#[cfg(any(feature = "tokio", feature = "smol"))]
mod async_side {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use idemkit_core::{Backend, Claim, ClaimToken, Error, Record, Response, Timer};

    use crate::backend::SqliteBackend;
    use crate::runtime::{RuntimeTimer, unblock};

    /// Async code: each write (claim, complete, release, renew) runs on the backend's
    /// writer thread, each read on the blocking pool of the runtime it is polled in; a
    /// write is carried out even if its future is dropped after the first poll.
    impl Backend for SqliteBackend {
        async fn claim(
            &self,
            key: &str,
            fingerprint: &str,
            fingerprint_version: u32,
            lease_ttl: Duration,
        ) -> Result<Claim, Error> {
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
            self.inner.releases.settled(key).await;
            self.inner.wait_async(key, timeout).await
        }

        async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
            self.inner.releases.settled(key).await;
            let inner = Arc::clone(&self.inner);
            let key = key.to_owned();
            unblock("read", move || inner.get(&key)).await?
        }

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
}
