//! [`DynBackend`]: an async backend whose type is chosen at run time.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::claim::Claim;
use crate::error::Error;
use crate::record::Record;
use crate::response::Response;
use crate::rt::Timer;
use crate::token::ClaimToken;

/// A boxed future, as the object-safe form of [`Backend`] returns.
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Backend`] in object-safe form: every future boxed.
trait ObjectBackend: Send + Sync + 'static {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, Error>>;
    fn complete<'a>(
        &'a self,
        key: &'a str,
        token: &'a ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> BoxFuture<'a, Result<bool, Error>>;
    fn release<'a>(
        &'a self,
        key: &'a str,
        token: &'a ClaimToken,
    ) -> BoxFuture<'a, Result<bool, Error>>;
    fn renew<'a>(
        &'a self,
        key: &'a str,
        token: &'a ClaimToken,
        lease_ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, Error>>;
    fn wait_for_completion<'a>(
        &'a self,
        key: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<Record>, Error>>;
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, Error>>;
    fn now(&self) -> Instant;
    fn name(&self) -> &'static str;
    fn timer(&self) -> Arc<dyn Timer>;
}

impl<B: Backend> ObjectBackend for B {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, Error>> {
        Box::pin(Backend::claim(
            self,
            key,
            fingerprint,
            fingerprint_version,
            lease_ttl,
        ))
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        token: &'a ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(Backend::complete(self, key, token, response, expires_after))
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        token: &'a ClaimToken,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(Backend::release(self, key, token))
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        token: &'a ClaimToken,
        lease_ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(Backend::renew(self, key, token, lease_ttl))
    }

    fn wait_for_completion<'a>(
        &'a self,
        key: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<Record>, Error>> {
        Box::pin(Backend::wait_for_completion(self, key, timeout))
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, Error>> {
        Box::pin(Backend::get(self, key))
    }

    fn now(&self) -> Instant {
        Backend::now(self)
    }

    fn name(&self) -> &'static str {
        Backend::name(self)
    }

    fn timer(&self) -> Arc<dyn Timer> {
        Backend::timer(self)
    }
}

/// An async backend picked at run time: any [`Backend`] behind one type.
///
/// A binary that reads its configuration at start-up builds the backend it names, wraps
/// it, and hands the same type to the executor and the HTTP layer either way, with no
/// generic code of its own. Clones share the backend. Each operation costs one boxed
/// future more than the backend's own.
///
/// ```
/// use idemkit_core::{AsyncIdempotency, DynBackend, InMemoryBackend};
///
/// fn backend_from(config: &str) -> DynBackend {
///     match config {
///         "memory" => DynBackend::new(InMemoryBackend::new()),
///         // "redis://..." => DynBackend::new(a networked backend),
///         other => panic!("unknown backend {other}"),
///     }
/// }
///
/// let idempotency: AsyncIdempotency<DynBackend> = AsyncIdempotency::new(backend_from("memory"));
/// # let _ = idempotency;
/// ```
#[derive(Clone)]
pub struct DynBackend(Arc<dyn ObjectBackend>);

impl DynBackend {
    /// Wraps `backend`.
    pub fn new(backend: impl Backend) -> DynBackend {
        DynBackend(Arc::new(backend))
    }
}

impl fmt::Debug for DynBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DynBackend(..)")
    }
}

impl Backend for DynBackend {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.0
            .claim(key, fingerprint, fingerprint_version, lease_ttl)
            .await
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        self.0.complete(key, token, response, expires_after).await
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        self.0.release(key, token).await
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        self.0.renew(key, token, lease_ttl).await
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        self.0.wait_for_completion(key, timeout).await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        self.0.get(key).await
    }

    fn now(&self) -> Instant {
        self.0.now()
    }

    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn timer(&self) -> Arc<dyn Timer> {
        self.0.timer()
    }
}
