//! [`UnderCheck`]: a store's backend as `check` hands it to the conformance vectors,
//! with what the store can show of its bookkeeping.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_conformance::backend::Inspect;
use idemkit_core::{Backend, Claim, ClaimToken, Error, Record, Response, Timer};

/// What a backend can show of its bookkeeping, for the vectors' leak and size checks;
/// "cannot tell" unless the store says.
pub trait Bookkeeping {
    /// Records held, expired ones not yet purged included.
    fn held_records(&self) -> Option<usize> {
        None
    }

    /// How many keys have waiters' entries right now.
    fn watched_keys(&self) -> Option<usize> {
        None
    }
}

/// A backend under check: its own operations, unchanged, and its bookkeeping.
#[derive(Clone)]
pub struct UnderCheck<B>(pub B);

impl<B: Bookkeeping> Inspect for UnderCheck<B> {
    fn held_records(&self) -> Option<usize> {
        self.0.held_records()
    }

    fn watched_keys(&self) -> Option<usize> {
        self.0.watched_keys()
    }
}

impl<B: Backend> Backend for UnderCheck<B> {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send {
        self.0
            .claim(key, fingerprint, fingerprint_version, lease_ttl)
    }

    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        self.0.complete(key, token, response, expires_after)
    }

    fn release(
        &self,
        key: &str,
        token: &ClaimToken,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        self.0.release(key, token)
    }

    fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        self.0.renew(key, token, lease_ttl)
    }

    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<Option<Record>, Error>> + Send {
        self.0.wait_for_completion(key, timeout)
    }

    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Record>, Error>> + Send {
        self.0.get(key)
    }

    fn now(&self) -> Instant {
        self.0.now()
    }

    fn timer(&self) -> Arc<dyn Timer> {
        self.0.timer()
    }
}
