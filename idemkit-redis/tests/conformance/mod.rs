//! The conformance suite's targets for the Redis backend: tokio, smol and blocking code,
//! each vector on a fresh namespace of the test binary's shared server.
//!
//! Only the vectors on real time apply: a Redis backend judges leases by the server's
//! clock, which no test can move, so the manual-clock groups do not run, and it has no
//! fixed capacity or purger (Redis expires keys itself).
//!
//! The backend goes to the suite as it is. After each vector, each target's
//! `after_vector` checks that every key left in the vector's namespace has a TTL: so
//! after the whole suite, every key left on the server has one.
#![allow(dead_code)] // each test binary uses its own target

use std::sync::Arc;
use std::time::Duration;

use idemkit_conformance::backend::{Async, Blocking};
use idemkit_conformance::runtimes::{SmolRuntime, Threads, TokioRuntime};
use idemkit_conformance::{Settings, Target};
use idemkit_core::{AsyncIdempotency, Idempotency};
use idemkit_redis::{RedisBackend, RedisBuilder};

#[path = "../support/mod.rs"]
mod support;

/// The targets' teardown: after a vector that passed, every key left in its namespace
/// has a TTL (a key without one would stay on the server forever).
fn check_ttls(backend: &RedisBackend, passed: bool) {
    let Some(server) = redis_harness::shared().filter(|_| passed) else {
        return;
    };
    let mut con = redis::Client::open(server.url().as_str())
        .and_then(|client| client.get_connection())
        .expect("the TTL check connects");
    let pattern = format!("{}:*", backend.namespace());
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query(&mut con)
        .expect("KEYS");
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut con).expect("PTTL");
        assert!(ttl > 0 || ttl == -2, "{key} was left without a TTL ({ttl})");
    }
}

/// A backend on the shared server in a fresh namespace, with the vector's reclaim
/// grace. Without Redis installed the whole binary is skipped here (see `skip`).
fn builder(settings: Settings) -> RedisBuilder {
    let Some(server) = redis_harness::shared() else {
        skip();
    };
    RedisBackend::builder()
        .url(&server.url())
        .namespace(support::namespace("conformance"))
        .reclaim_grace(settings.reclaim_grace)
        // Generous: the suite runs many vectors at once on a shared, busy machine.
        .command_timeout(Duration::from_secs(10))
}

/// No `redis-server`: `redis_harness::available` has said so (or panicked, when Redis is
/// required). A vector cannot run without a backend, and every vector here needs Redis,
/// so the binary ends, successfully, instead of failing each one.
fn skip() -> ! {
    std::process::exit(0)
}

/// The backend through `Backend`, with `AsyncIdempotency`, built and driven on tokio.
#[derive(Debug)]
pub struct RedisTokio;

impl Target for RedisTokio {
    type Runtime = TokioRuntime;
    type Backend = Async<RedisBackend>;
    type Executor = AsyncIdempotency<RedisBackend>;

    fn build(settings: Settings) -> Async<RedisBackend> {
        let builder = builder(settings);
        // Built inside the vector's runtime, so the connections run on it.
        let handle = tokio::runtime::Handle::current();
        let backend = tokio::task::block_in_place(|| handle.block_on(builder.build()))
            .expect("the backend connects");
        Async::new(backend).watched_keys(RedisBackend::watched_keys)
    }

    fn after_vector(backend: &Async<RedisBackend>, passed: bool) {
        check_ttls(backend.backend(), passed);
    }
}

/// The backend through `Backend`, with `AsyncIdempotency`, driven by smol: with the
/// `smol` feature its connections run on smol's global executor; without it, on a tokio
/// runtime of the backend's own (built outside any tokio runtime).
#[derive(Debug)]
pub struct RedisSmol;

impl Target for RedisSmol {
    type Runtime = SmolRuntime;
    type Backend = Async<RedisBackend>;
    type Executor = AsyncIdempotency<RedisBackend>;

    fn build(settings: Settings) -> Async<RedisBackend> {
        let builder = builder(settings);
        #[cfg(feature = "smol")]
        let builder = builder.runtime(idemkit_redis::SmolRuntime);
        let backend = builder.build_blocking().expect("the backend connects");
        Async::new(backend).watched_keys(RedisBackend::watched_keys)
    }

    fn after_vector(backend: &Async<RedisBackend>, passed: bool) {
        check_ttls(backend.backend(), passed);
    }
}

/// The backend through `BlockingBackend`, with the blocking `Idempotency`, on threads.
#[derive(Debug)]
pub struct RedisBlocking;

impl Target for RedisBlocking {
    type Runtime = Threads;
    type Backend = Blocking<RedisBackend>;
    type Executor = Idempotency<Arc<RedisBackend>>;

    fn build(settings: Settings) -> Blocking<RedisBackend> {
        let builder = builder(settings);
        let backend = builder.build_blocking().expect("the backend connects");
        Blocking::new(backend).watched_keys(RedisBackend::watched_keys)
    }

    fn after_vector(backend: &Blocking<RedisBackend>, passed: bool) {
        check_ttls(backend.backend(), passed);
    }
}
