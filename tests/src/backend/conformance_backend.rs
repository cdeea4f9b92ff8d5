//! [`ConformanceBackend`]: the one API the suite drives, and the two ways a backend
//! provides it: [`Async`], through [`Backend`], and [`Blocking`], through
//! [`BlockingBackend`]; and [`Counts`], what the suite can count in it.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Backend, BlockingBackend, Claim, ClaimToken, Error, Record, Response};

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

/// What the suite can count in a backend, for its leak and size checks: each count is a
/// plain function of the backend, or unknown (the checks that need it are skipped).
///
/// A target passes them when it wraps its backend ([`Async::new`] or [`Blocking::new`]
/// and their `held_records` and `watched_keys` setters), so any backend can be counted,
/// a type from another crate included, without a wrapper of its own.
pub struct Counts<B> {
    held_records: Option<fn(&B) -> usize>,
    watched_keys: Option<fn(&B) -> usize>,
}

impl<B> Counts<B> {
    const UNKNOWN: Counts<B> = Counts {
        held_records: None,
        watched_keys: None,
    };

    fn held_records(&self, backend: &B) -> Option<usize> {
        self.held_records.map(|count| count(backend))
    }

    fn watched_keys(&self, backend: &B) -> Option<usize> {
        self.watched_keys.map(|count| count(backend))
    }
}

impl<B> Clone for Counts<B> {
    fn clone(&self) -> Counts<B> {
        *self
    }
}

impl<B> Copy for Counts<B> {}

impl<B> std::fmt::Debug for Counts<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counts")
            .field("held_records", &self.held_records.is_some())
            .field("watched_keys", &self.watched_keys.is_some())
            .finish()
    }
}

/// A backend driven through its async trait, [`Backend`].
///
/// ```
/// use idemkit_conformance::backend::Async;
/// use idemkit_core::InMemoryBackend;
///
/// let backend = Async::new(InMemoryBackend::new())
///     .held_records(InMemoryBackend::len)
///     .watched_keys(InMemoryBackend::watched_keys);
/// assert_eq!(backend.backend().len(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct Async<B> {
    backend: B,
    counts: Counts<B>,
}

impl<B> Async<B> {
    /// `backend`, to be driven through [`Backend`], with nothing to count.
    pub fn new(backend: B) -> Async<B> {
        Async {
            backend,
            counts: Counts::UNKNOWN,
        }
    }

    /// Counts the records `backend` holds (expired ones not yet purged included) with
    /// `count`.
    #[must_use]
    pub fn held_records(mut self, count: fn(&B) -> usize) -> Async<B> {
        self.counts.held_records = Some(count);
        self
    }

    /// Counts the keys with waiters' entries in `backend` with `count`.
    #[must_use]
    pub fn watched_keys(mut self, count: fn(&B) -> usize) -> Async<B> {
        self.counts.watched_keys = Some(count);
        self
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, and how the suite counts in it.
    pub fn into_parts(self) -> (B, Counts<B>) {
        (self.backend, self.counts)
    }

    /// A backend taken apart by [`Async::into_parts`], put back together.
    pub fn from_parts(backend: B, counts: Counts<B>) -> Async<B> {
        Async { backend, counts }
    }
}

/// A backend driven through [`BlockingBackend`], which every [`Backend`] is: every
/// operation runs inline when polled, except `wait_for_completion`, which parks an OS
/// thread of its own.
#[derive(Debug)]
pub struct Blocking<B> {
    backend: Arc<B>,
    counts: Counts<B>,
}

impl<B> Clone for Blocking<B> {
    fn clone(&self) -> Blocking<B> {
        Blocking {
            backend: Arc::clone(&self.backend),
            counts: self.counts,
        }
    }
}

impl<B> Blocking<B> {
    /// `backend`, to be driven through [`BlockingBackend`], with nothing to count.
    pub fn new(backend: B) -> Blocking<B> {
        Blocking::shared(Arc::new(backend), Counts::UNKNOWN)
    }

    /// A backend the blocking executor already shares.
    pub fn shared(backend: Arc<B>, counts: Counts<B>) -> Blocking<B> {
        Blocking { backend, counts }
    }

    /// Counts the records `backend` holds with `count`.
    #[must_use]
    pub fn held_records(mut self, count: fn(&B) -> usize) -> Blocking<B> {
        self.counts.held_records = Some(count);
        self
    }

    /// Counts the keys with waiters' entries in `backend` with `count`.
    #[must_use]
    pub fn watched_keys(mut self, count: fn(&B) -> usize) -> Blocking<B> {
        self.counts.watched_keys = Some(count);
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<B> {
        &self.backend
    }

    /// How the suite counts in the backend.
    pub fn counts(&self) -> Counts<B> {
        self.counts
    }
}

#[track_caller]
fn healthy<T>(result: Result<T, Error>, operation: &str) -> T {
    result.unwrap_or_else(|error| panic!("{operation} failed on a healthy store: {error}"))
}

impl<B: Backend + Clone> ConformanceBackend for Async<B> {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send {
        Backend::claim(
            &self.backend,
            key,
            fingerprint,
            fingerprint_version,
            lease_ttl,
        )
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> bool {
        let stored =
            Backend::complete(&self.backend, key, token, Arc::new(response), expires_after);
        healthy(stored.await, "complete")
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> bool {
        healthy(Backend::release(&self.backend, key, token).await, "release")
    }

    async fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        healthy(
            Backend::renew(&self.backend, key, token, lease_ttl).await,
            "renew",
        )
    }

    async fn wait_for_completion(&self, key: &str, timeout: Duration) -> Option<Record> {
        let waited = Backend::wait_for_completion(&self.backend, key, timeout).await;
        healthy(waited, "wait_for_completion")
    }

    async fn get(&self, key: &str) -> Option<Record> {
        healthy(Backend::get(&self.backend, key).await, "get")
    }

    fn now(&self) -> Instant {
        Backend::now(&self.backend)
    }

    fn held_records(&self) -> Option<usize> {
        self.counts.held_records(&self.backend)
    }

    fn watched_keys(&self) -> Option<usize> {
        self.counts.watched_keys(&self.backend)
    }
}

impl<B: Backend> ConformanceBackend for Blocking<B> {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        BlockingBackend::claim(
            &*self.backend,
            key,
            fingerprint,
            fingerprint_version,
            lease_ttl,
        )
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> bool {
        let stored = BlockingBackend::complete(
            &*self.backend,
            key,
            token,
            Arc::new(response),
            expires_after,
        );
        healthy(stored, "complete")
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> bool {
        healthy(
            BlockingBackend::release(&*self.backend, key, token),
            "release",
        )
    }

    async fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        healthy(
            BlockingBackend::renew(&*self.backend, key, token, lease_ttl),
            "renew",
        )
    }

    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Option<Record>> + Send {
        let backend = Arc::clone(&self.backend);
        let key = key.to_owned();
        on_thread(move || {
            let waited = BlockingBackend::wait_for_completion(&*backend, &key, timeout);
            healthy(waited, "wait_for_completion")
        })
    }

    async fn get(&self, key: &str) -> Option<Record> {
        healthy(BlockingBackend::get(&*self.backend, key), "get")
    }

    fn now(&self) -> Instant {
        BlockingBackend::now(&*self.backend)
    }

    fn held_records(&self) -> Option<usize> {
        self.counts.held_records(&self.backend)
    }

    fn watched_keys(&self) -> Option<usize> {
        self.counts.watched_keys(&self.backend)
    }
}
