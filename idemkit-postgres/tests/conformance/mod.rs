//! The conformance suite's targets for the PostgreSQL backend: tokio, smol and blocking
//! code, each vector on a table of its own on the machine's server.
//!
//! Only the vectors on real time apply: leases are judged by the database's
//! `clock_timestamp()`, which no test can move, so the manual-clock groups do not run;
//! there is no fixed capacity (a table grows) and no in-process purger to spawn (the
//! purge is a statement; `tests/records.rs` covers it).
#![allow(dead_code)] // each test binary uses its own target

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_conformance::backend::{Async, Blocking, Inspect};
use idemkit_conformance::runtimes::{SmolRuntime, Threads, TokioRuntime};
use idemkit_conformance::{Settings, Target};
use idemkit_core::{
    AsyncIdempotency, Backend, Claim, ClaimToken, Error, Idempotency, Record, Response, Timer,
};
use idemkit_postgres::{Builder, PostgresBackend};

#[path = "../support/mod.rs"]
mod support;

/// The backend as the suite drives it, with the table it drops at the end.
#[derive(Clone)]
pub struct Conformant {
    backend: PostgresBackend,
    _scratch: Arc<support::Scratch>,
}

fn builder(settings: Settings) -> (Builder, Arc<support::Scratch>) {
    let Some(scratch) = support::Scratch::new("conformance") else {
        // No PostgreSQL (and not required): every vector here needs it.
        std::process::exit(0)
    };
    let builder = scratch.builder().reclaim_grace(settings.reclaim_grace);
    (builder, Arc::new(scratch))
}

impl Inspect for Conformant {
    fn watched_keys(&self) -> Option<usize> {
        Some(self.backend.watched_keys())
    }
}

impl Backend for Conformant {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        version: u32,
        lease_ttl: Duration,
    ) -> impl Future<Output = Result<Claim, Error>> + Send {
        Backend::claim(&self.backend, key, fingerprint, version, lease_ttl)
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

/// Through `Backend`, with `AsyncIdempotency`, built and driven on tokio.
#[derive(Debug)]
pub struct PostgresTokio;

impl Target for PostgresTokio {
    type Runtime = TokioRuntime;
    type Backend = Async<Conformant>;
    type Executor = AsyncIdempotency<Conformant>;

    fn build(settings: Settings) -> Async<Conformant> {
        let (builder, scratch) = builder(settings);
        let handle = tokio::runtime::Handle::current();
        let backend = tokio::task::block_in_place(|| handle.block_on(builder.build()))
            .expect("the backend connects");
        Async(Conformant {
            backend,
            _scratch: scratch,
        })
    }
}

/// Through `Backend`, with `AsyncIdempotency`, on smol.
#[derive(Debug)]
pub struct PostgresSmol;

impl Target for PostgresSmol {
    type Runtime = SmolRuntime;
    type Backend = Async<Conformant>;
    type Executor = AsyncIdempotency<Conformant>;

    fn build(settings: Settings) -> Async<Conformant> {
        let (builder, scratch) = builder(settings);
        let backend = builder.build_blocking().expect("the backend connects");
        Async(Conformant {
            backend,
            _scratch: scratch,
        })
    }
}

/// Through `BlockingBackend`, with the blocking `Idempotency`, on threads.
#[derive(Debug)]
pub struct PostgresBlocking;

impl Target for PostgresBlocking {
    type Runtime = Threads;
    type Backend = Blocking<Conformant>;
    type Executor = Idempotency<Arc<Conformant>>;

    fn build(settings: Settings) -> Blocking<Conformant> {
        let (builder, scratch) = builder(settings);
        let backend = builder.build_blocking().expect("the backend connects");
        Blocking::new(Conformant {
            backend,
            _scratch: scratch,
        })
    }
}
