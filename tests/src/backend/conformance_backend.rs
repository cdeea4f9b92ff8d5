//! [`ConformanceBackend`]: the one API the suite drives, implemented by every backend.

use std::future::Future;
use std::time::Duration;

use idemkit_core::{
    AsyncInMemoryBackend, Claim, ClaimToken, Clock, Error, InMemoryBackend, Record, Response, Timer,
};

use crate::thread_task::on_thread;

/// A backend as the suite sees it: the backend API, async-shaped so one vector fits every
/// backend. Clones share one store.
///
/// The blocking backend's operations run inline when polled, except
/// [`wait_for_completion`](ConformanceBackend::wait_for_completion), which parks a real
/// thread of its own; an async backend's are its own futures, unchanged.
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

    /// Waits until `key` completes, for at most `timeout` of real time.
    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Option<Record>> + Send;

    /// The record of `key`, unless there is none or it has expired.
    fn get(&self, key: &str) -> Option<Record>;

    /// Records held, expired ones not yet purged included.
    fn len(&self) -> usize;

    /// Whether no record is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many keys have waiters' event entries right now (for leak checks).
    fn watched_keys(&self) -> usize;
}

impl<C: Clock> ConformanceBackend for InMemoryBackend<C> {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        InMemoryBackend::claim(self, key, fingerprint, fingerprint_version, lease_ttl)
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> bool {
        InMemoryBackend::complete(self, key, token, response, expires_after)
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> bool {
        InMemoryBackend::release(self, key, token)
    }

    async fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        InMemoryBackend::renew(self, key, token, lease_ttl)
    }

    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Option<Record>> + Send {
        let backend = self.clone();
        let key = key.to_owned();
        on_thread(move || InMemoryBackend::wait_for_completion(&backend, &key, timeout))
    }

    fn get(&self, key: &str) -> Option<Record> {
        InMemoryBackend::get(self, key)
    }

    fn len(&self) -> usize {
        InMemoryBackend::len(self)
    }

    fn watched_keys(&self) -> usize {
        InMemoryBackend::watched_keys(self)
    }
}

impl<C: Clock, T: Timer> ConformanceBackend for AsyncInMemoryBackend<C, T> {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send {
        AsyncInMemoryBackend::claim(self, key, fingerprint, fingerprint_version, lease_ttl)
    }

    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Response,
        expires_after: Duration,
    ) -> impl Future<Output = bool> + Send {
        AsyncInMemoryBackend::complete(self, key, token, response, expires_after)
    }

    fn release(&self, key: &str, token: &ClaimToken) -> impl Future<Output = bool> + Send {
        AsyncInMemoryBackend::release(self, key, token)
    }

    fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> impl Future<Output = bool> + Send {
        AsyncInMemoryBackend::renew(self, key, token, lease_ttl)
    }

    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Option<Record>> + Send {
        AsyncInMemoryBackend::wait_for_completion(self, key, timeout)
    }

    fn get(&self, key: &str) -> Option<Record> {
        AsyncInMemoryBackend::get(self, key)
    }

    fn len(&self) -> usize {
        AsyncInMemoryBackend::len(self)
    }

    fn watched_keys(&self) -> usize {
        AsyncInMemoryBackend::watched_keys(self)
    }
}
