//! [`ConformanceBackend`]: the one API the suite drives, and the two ways a backend
//! provides it: [`Async`], through its async trait, and [`Blocking`], through its
//! blocking trait.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{
    Backend, BlockingBackend, Claim, ClaimToken, Error, InMemoryBackend, Record, Response,
};

use crate::thread_task::on_thread;

/// A backend as the suite sees it: async-shaped, so one vector fits both traits. Clones
/// share one store.
///
/// A storage error in `complete`, `release`, `renew`, `wait_for_completion` or `get` fails
/// the vector (it panics): a conformant backend on a healthy store does not fail.
pub trait ConformanceBackend: Clone + Send + Sync + 'static {
    /// Claims `key`.
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send;

    /// Stores the response for the claim `token` holds.
    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> impl Future<Output = bool> + Send;

    /// Gives the key up.
    fn release(&self, key: &str, token: &ClaimToken) -> impl Future<Output = bool> + Send;

    /// Extends the lease `token` holds.
    fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> impl Future<Output = bool> + Send;

    /// Waits until `key` completes, for at most `timeout`.
    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Option<Record>> + Send;

    /// The record of `key`, unless there is none or it is gone.
    fn get(&self, key: &str) -> impl Future<Output = Option<Record>> + Send;

    /// The instant the backend judges leases by.
    fn now(&self) -> Instant;

    /// Records held, expired ones not yet purged included, if the backend can tell.
    fn held_records(&self) -> Option<usize>;

    /// How many keys have waiters' entries right now, if the backend can tell.
    fn watched_keys(&self) -> Option<usize>;
}

/// What a backend can show of its bookkeeping, for the suite's leak and size checks.
/// Both default to "cannot tell", so a backend implements what it has.
pub trait Inspect {
    /// Records held, expired ones not yet purged included.
    fn held_records(&self) -> Option<usize> {
        None
    }

    /// How many keys have waiters' entries right now.
    fn watched_keys(&self) -> Option<usize> {
        None
    }
}

impl Inspect for InMemoryBackend {
    fn held_records(&self) -> Option<usize> {
        Some(InMemoryBackend::len(self))
    }

    fn watched_keys(&self) -> Option<usize> {
        Some(InMemoryBackend::watched_keys(self))
    }
}

/// A backend driven through its async trait, [`Backend`].
#[derive(Clone, Debug)]
pub struct Async<B>(pub B);

/// A backend driven through its blocking trait, [`BlockingBackend`]: every operation
/// runs inline when polled, except `wait_for_completion`, which parks an OS thread of
/// its own.
#[derive(Debug)]
pub struct Blocking<B>(pub Arc<B>);

impl<B> Clone for Blocking<B> {
    fn clone(&self) -> Blocking<B> {
        Blocking(Arc::clone(&self.0))
    }
}

impl<B> Blocking<B> {
    /// `backend`, to be driven through its blocking trait.
    pub fn new(backend: B) -> Blocking<B> {
        Blocking(Arc::new(backend))
    }
}

#[track_caller]
fn healthy<T>(result: Result<T, Error>, operation: &str) -> T {
    result.unwrap_or_else(|error| panic!("{operation} failed on a healthy store: {error}"))
}

impl<B: Backend + Inspect + Clone> ConformanceBackend for Async<B> {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send {
        Backend::claim(&self.0, key, fingerprint, fingerprint_version, lease_ttl)
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> bool {
        let stored = Backend::complete(&self.0, key, token, Arc::new(response), expires_after);
        healthy(stored.await, "complete")
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> bool {
        healthy(Backend::release(&self.0, key, token).await, "release")
    }

    async fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        healthy(
            Backend::renew(&self.0, key, token, lease_ttl).await,
            "renew",
        )
    }

    async fn wait_for_completion(&self, key: &str, timeout: Duration) -> Option<Record> {
        let waited = Backend::wait_for_completion(&self.0, key, timeout).await;
        healthy(waited, "wait_for_completion")
    }

    async fn get(&self, key: &str) -> Option<Record> {
        healthy(Backend::get(&self.0, key).await, "get")
    }

    fn now(&self) -> Instant {
        Backend::now(&self.0)
    }

    fn held_records(&self) -> Option<usize> {
        Inspect::held_records(&self.0)
    }

    fn watched_keys(&self) -> Option<usize> {
        Inspect::watched_keys(&self.0)
    }
}

impl<B: Backend + Inspect> ConformanceBackend for Blocking<B> {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        BlockingBackend::claim(&*self.0, key, fingerprint, fingerprint_version, lease_ttl)
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> bool {
        let stored =
            BlockingBackend::complete(&*self.0, key, token, Arc::new(response), expires_after);
        healthy(stored, "complete")
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> bool {
        healthy(BlockingBackend::release(&*self.0, key, token), "release")
    }

    async fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        healthy(
            BlockingBackend::renew(&*self.0, key, token, lease_ttl),
            "renew",
        )
    }

    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Option<Record>> + Send {
        let backend = Arc::clone(&self.0);
        let key = key.to_owned();
        on_thread(move || {
            let waited = BlockingBackend::wait_for_completion(&*backend, &key, timeout);
            healthy(waited, "wait_for_completion")
        })
    }

    async fn get(&self, key: &str) -> Option<Record> {
        healthy(BlockingBackend::get(&*self.0, key), "get")
    }

    fn now(&self) -> Instant {
        BlockingBackend::now(&*self.0)
    }

    fn held_records(&self) -> Option<usize> {
        Inspect::held_records(&*self.0)
    }

    fn watched_keys(&self) -> Option<usize> {
        Inspect::watched_keys(&*self.0)
    }
}
