//! The conformance suite's targets for the SQLite backend: tokio, smol and blocking code,
//! each vector on a fresh file, with every group: the manual clock (the backend judges
//! leases by a `ManualClock` the vector moves), the exact capacity, dropped async waits
//! and the purger.
#![allow(dead_code)] // each test binary uses its own target

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_conformance::backend::{Async, Blocking, Inspect};
use idemkit_conformance::runtimes::{SmolRuntime, Threads, TokioRuntime};
use idemkit_conformance::{ExactCapacity, ManualTime, Purging, Settings, Target};
use idemkit_core::{
    AsyncIdempotency, Backend, Claim, ClaimToken, Error, Idempotency, ManualClock, Record,
    Response, Timer,
};
use idemkit_sqlite::{Builder, SqliteBackend};

#[path = "../support/mod.rs"]
mod support;

use support::ScratchFile;

/// The SQLite backend as the suite drives it, with the file it removes at the end.
#[derive(Clone)]
pub struct Conformant {
    backend: SqliteBackend,
    _file: Arc<ScratchFile>,
}

fn builder(settings: Settings, file: &ScratchFile) -> Builder {
    SqliteBackend::builder(file.path())
        .reclaim_grace(settings.reclaim_grace)
        .max_records(settings.max_size as u64)
}

fn conformant(settings: Settings, clock: Option<ManualClock>) -> Conformant {
    let file = ScratchFile::new("conformance");
    let mut builder = builder(settings, &file);
    if let Some(clock) = clock {
        builder = builder.clock(clock);
    }
    Conformant {
        backend: builder.build().expect("the file opens"),
        _file: Arc::new(file),
    }
}

impl Inspect for Conformant {
    fn held_records(&self) -> Option<usize> {
        Some(self.backend.records().expect("the count reads") as usize)
    }

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

/// The backend through `Backend`, with `AsyncIdempotency`, on tokio.
#[derive(Debug)]
pub struct SqliteTokio;

impl Target for SqliteTokio {
    type Runtime = TokioRuntime;
    type Backend = Async<Conformant>;
    type Executor = AsyncIdempotency<Conformant>;

    fn build(settings: Settings) -> Async<Conformant> {
        Async(conformant(settings, None))
    }
}

impl ManualTime for SqliteTokio {
    fn build_on(settings: Settings, clock: ManualClock) -> Async<Conformant> {
        Async(conformant(settings, Some(clock)))
    }
}

impl ExactCapacity for SqliteTokio {}

impl Purging for SqliteTokio {
    fn run_purger(backend: &Async<Conformant>) -> impl Future<Output = ()> + Send {
        let backend = backend.0.backend.clone();
        async move { backend.run_purger().await }
    }
}

/// The backend through `Backend`, with `AsyncIdempotency`, on smol.
#[derive(Debug)]
pub struct SqliteSmol;

impl Target for SqliteSmol {
    type Runtime = SmolRuntime;
    type Backend = Async<Conformant>;
    type Executor = AsyncIdempotency<Conformant>;

    fn build(settings: Settings) -> Async<Conformant> {
        Async(conformant(settings, None))
    }
}

impl ManualTime for SqliteSmol {
    fn build_on(settings: Settings, clock: ManualClock) -> Async<Conformant> {
        Async(conformant(settings, Some(clock)))
    }
}

impl ExactCapacity for SqliteSmol {}

impl Purging for SqliteSmol {
    fn run_purger(backend: &Async<Conformant>) -> impl Future<Output = ()> + Send {
        let backend = backend.0.backend.clone();
        async move { backend.run_purger().await }
    }
}

/// The backend through `BlockingBackend`, with the blocking `Idempotency`, on threads.
#[derive(Debug)]
pub struct SqliteBlocking;

impl Target for SqliteBlocking {
    type Runtime = Threads;
    type Backend = Blocking<Conformant>;
    type Executor = Idempotency<Arc<Conformant>>;

    fn build(settings: Settings) -> Blocking<Conformant> {
        Blocking::new(conformant(settings, None))
    }
}

impl ManualTime for SqliteBlocking {
    fn build_on(settings: Settings, clock: ManualClock) -> Blocking<Conformant> {
        Blocking::new(conformant(settings, Some(clock)))
    }
}

impl ExactCapacity for SqliteBlocking {}
