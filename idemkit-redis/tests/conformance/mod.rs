//! The conformance suite's targets for the Redis backend: tokio, smol and blocking code,
//! each vector on a fresh namespace of the test binary's shared server.
//!
//! Only the vectors on real time apply: a Redis backend judges leases by the server's
//! clock, which no test can move, so the manual-clock groups do not run, and it has no
//! fixed capacity or purger (Redis expires keys itself).
//!
//! After each vector, when its last handle on the backend is dropped, every key left in
//! its namespace is checked for a TTL: so after the whole suite, every key left on the
//! server has one.
#![allow(dead_code)] // each test binary uses its own target

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_conformance::backend::{Async, Blocking, Inspect};
use idemkit_conformance::runtimes::{SmolRuntime, Threads, TokioRuntime};
use idemkit_conformance::{Settings, Target};
use idemkit_core::{
    AsyncIdempotency, Backend, BlockingBackend, Claim, ClaimToken, Error, Idempotency, Record,
    Response, Timer,
};
use idemkit_redis::{Builder, RedisBackend};

#[path = "../support/mod.rs"]
mod support;

/// The Redis backend as the suite drives it, plus the TTL check at the end of a vector.
#[derive(Clone)]
pub struct Conformant {
    backend: RedisBackend,
    _check: Arc<TtlCheck>,
}

/// The server URL and namespace of one vector's backend; dropped with its last handle.
struct TtlCheck {
    url: String,
    namespace: String,
}

impl Drop for TtlCheck {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let mut con = redis::Client::open(self.url.as_str())
            .and_then(|client| client.get_connection())
            .expect("the TTL check connects");
        let pattern = format!("{}:*", self.namespace);
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(&pattern)
            .query(&mut con)
            .expect("KEYS");
        for key in keys {
            let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut con).expect("PTTL");
            assert!(ttl > 0 || ttl == -2, "{key} was left without a TTL ({ttl})");
        }
    }
}

/// A backend on the shared server in a fresh namespace, with the vector's reclaim
/// grace. Without Redis installed the whole binary is skipped here (see `skip`).
fn builder(settings: Settings) -> (Builder, Arc<TtlCheck>) {
    let Some(server) = redis_harness::shared() else {
        skip();
    };
    let namespace = support::namespace("conformance");
    let check = Arc::new(TtlCheck {
        url: server.url(),
        namespace: namespace.clone(),
    });
    let builder = RedisBackend::builder()
        .url(&server.url())
        .namespace(namespace)
        .reclaim_grace(settings.reclaim_grace)
        // Generous: the suite runs many vectors at once on a shared, busy machine.
        .command_timeout(Duration::from_secs(10));
    (builder, check)
}

/// No `redis-server`: `redis_harness::available` has said so (or panicked, when Redis is
/// required). A vector cannot run without a backend, and every vector here needs Redis,
/// so the binary ends, successfully, instead of failing each one.
fn skip() -> ! {
    std::process::exit(0)
}

impl Inspect for Conformant {
    // Records held: Redis drops expired keys on its own schedule, so there is no exact
    // count to compare. Waiter entries are this process's own bookkeeping.
    fn watched_keys(&self) -> Option<usize> {
        Some(self.backend.watched_keys())
    }
}

impl Backend for Conformant {
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

    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        Backend::complete(&self.backend, key, token, response, expires_after)
    }

    fn release(
        &self,
        key: &str,
        token: &ClaimToken,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        Backend::release(&self.backend, key, token)
    }

    fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<bool, Error>> + Send {
        Backend::renew(&self.backend, key, token, lease_ttl)
    }

    fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<Option<Record>, Error>> + Send {
        Backend::wait_for_completion(&self.backend, key, timeout)
    }

    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Record>, Error>> + Send {
        Backend::get(&self.backend, key)
    }

    fn now(&self) -> Instant {
        Backend::now(&self.backend)
    }

    fn timer(&self) -> Arc<dyn Timer> {
        Backend::timer(&self.backend)
    }
}

impl BlockingBackend for Conformant {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        BlockingBackend::claim(
            &self.backend,
            key,
            fingerprint,
            fingerprint_version,
            lease_ttl,
        )
    }

    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        BlockingBackend::complete(&self.backend, key, token, response, expires_after)
    }

    fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        BlockingBackend::release(&self.backend, key, token)
    }

    fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> Result<bool, Error> {
        BlockingBackend::renew(&self.backend, key, token, lease_ttl)
    }

    fn wait_for_completion(&self, key: &str, timeout: Duration) -> Result<Option<Record>, Error> {
        BlockingBackend::wait_for_completion(&self.backend, key, timeout)
    }

    fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        BlockingBackend::get(&self.backend, key)
    }

    fn now(&self) -> Instant {
        BlockingBackend::now(&self.backend)
    }
}

/// The backend through `Backend`, with `AsyncIdempotency`, built and driven on tokio.
#[derive(Debug)]
pub struct RedisTokio;

impl Target for RedisTokio {
    type Runtime = TokioRuntime;
    type Backend = Async<Conformant>;
    type Executor = AsyncIdempotency<Conformant>;

    fn build(settings: Settings) -> Async<Conformant> {
        let (builder, check) = builder(settings);
        // Built inside the vector's runtime, so the connections run on it.
        let handle = tokio::runtime::Handle::current();
        let backend = tokio::task::block_in_place(|| handle.block_on(builder.build()))
            .expect("the backend connects");
        Async(Conformant {
            backend,
            _check: check,
        })
    }
}

/// The backend through `Backend`, with `AsyncIdempotency`, driven by smol: with the
/// `smol` feature its connections run on smol's global executor; without it, on a tokio
/// runtime of the backend's own (built outside any tokio runtime).
#[derive(Debug)]
pub struct RedisSmol;

impl Target for RedisSmol {
    type Runtime = SmolRuntime;
    type Backend = Async<Conformant>;
    type Executor = AsyncIdempotency<Conformant>;

    fn build(settings: Settings) -> Async<Conformant> {
        let (builder, check) = builder(settings);
        #[cfg(feature = "smol")]
        let builder = builder.runtime(idemkit_redis::SmolRuntime);
        let backend = builder.build_blocking().expect("the backend connects");
        Async(Conformant {
            backend,
            _check: check,
        })
    }
}

/// The backend through `BlockingBackend`, with the blocking `Idempotency`, on threads.
#[derive(Debug)]
pub struct RedisBlocking;

impl Target for RedisBlocking {
    type Runtime = Threads;
    type Backend = Blocking<Conformant>;
    type Executor = Idempotency<Arc<Conformant>>;

    fn build(settings: Settings) -> Blocking<Conformant> {
        let (builder, check) = builder(settings);
        let backend = builder.build_blocking().expect("the backend connects");
        Blocking::new(Conformant {
            backend,
            _check: check,
        })
    }
}
