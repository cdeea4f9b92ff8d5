//! The conformance suite's targets for the SQLite backend: tokio, smol and blocking code,
//! each vector on a fresh file, with every group: the manual clock (the backend judges
//! leases by a `ManualClock` the vector moves), the exact capacity, dropped async waits
//! and the purger.
//!
//! The backend goes to the suite as it is: the suite counts its records and waiters
//! through its own methods, and each target's `after_vector` removes the vector's file.
#![allow(dead_code)] // each test binary uses its own target

use std::future::Future;
use std::sync::Arc;

use idemkit_conformance::backend::{Async, Blocking};
use idemkit_conformance::runtimes::{SmolRuntime, Threads, TokioRuntime};
use idemkit_conformance::{ExactCapacity, ManualTime, Purging, Settings, Target};
use idemkit_core::{AsyncIdempotency, Idempotency, ManualClock};
use idemkit_sqlite::SqliteBackend;

#[path = "../support/mod.rs"]
mod support;
use support::ScratchFile;

/// A backend on a fresh file with `settings`, on `clock` if given. The file is removed by
/// the target's `after_vector`.
fn backend(settings: Settings, clock: Option<ManualClock>) -> SqliteBackend {
    let path = ScratchFile::new("conformance").into_path();
    let mut builder = SqliteBackend::builder(&path)
        .reclaim_grace(settings.reclaim_grace)
        .max_records(settings.max_size as u64);
    if let Some(clock) = clock {
        builder = builder.clock(clock);
    }
    builder.build().expect("the file opens")
}

/// Records in the file, lapsed and expired ones not yet purged included.
fn held_records(backend: &SqliteBackend) -> usize {
    backend.records().expect("the count reads") as usize
}

/// `backend` for async code, counted by the suite.
fn counted(backend: SqliteBackend) -> Async<SqliteBackend> {
    Async::new(backend)
        .held_records(held_records)
        .watched_keys(SqliteBackend::watched_keys)
}

/// `backend` for blocking code, counted by the suite.
fn blocking(backend: SqliteBackend) -> Blocking<SqliteBackend> {
    Blocking::new(backend)
        .held_records(held_records)
        .watched_keys(SqliteBackend::watched_keys)
}

/// The targets' teardown: the vector's file goes, with its `-wal` and `-shm`.
fn remove_file(backend: &SqliteBackend) {
    ScratchFile::remove_all(backend.path());
}

/// The backend through `Backend`, with `AsyncIdempotency`, on tokio.
#[derive(Debug)]
pub struct SqliteTokio;

impl Target for SqliteTokio {
    type Runtime = TokioRuntime;
    type Backend = Async<SqliteBackend>;
    type Executor = AsyncIdempotency<SqliteBackend>;

    fn build(settings: Settings) -> Async<SqliteBackend> {
        counted(backend(settings, None))
    }

    fn after_vector(backend: &Async<SqliteBackend>, _passed: bool) {
        remove_file(backend.backend());
    }
}

impl ManualTime for SqliteTokio {
    fn build_on(settings: Settings, clock: ManualClock) -> Async<SqliteBackend> {
        counted(backend(settings, Some(clock)))
    }
}

impl ExactCapacity for SqliteTokio {}

impl Purging for SqliteTokio {
    fn run_purger(backend: &Async<SqliteBackend>) -> impl Future<Output = ()> + Send {
        let backend = backend.backend().clone();
        async move { backend.run_purger().await }
    }
}

/// The backend through `Backend`, with `AsyncIdempotency`, on smol.
#[derive(Debug)]
pub struct SqliteSmol;

impl Target for SqliteSmol {
    type Runtime = SmolRuntime;
    type Backend = Async<SqliteBackend>;
    type Executor = AsyncIdempotency<SqliteBackend>;

    fn build(settings: Settings) -> Async<SqliteBackend> {
        counted(backend(settings, None))
    }

    fn after_vector(backend: &Async<SqliteBackend>, _passed: bool) {
        remove_file(backend.backend());
    }
}

impl ManualTime for SqliteSmol {
    fn build_on(settings: Settings, clock: ManualClock) -> Async<SqliteBackend> {
        counted(backend(settings, Some(clock)))
    }
}

impl ExactCapacity for SqliteSmol {}

impl Purging for SqliteSmol {
    fn run_purger(backend: &Async<SqliteBackend>) -> impl Future<Output = ()> + Send {
        let backend = backend.backend().clone();
        async move { backend.run_purger().await }
    }
}

/// The backend through `BlockingBackend`, with the blocking `Idempotency`, on threads.
#[derive(Debug)]
pub struct SqliteBlocking;

impl Target for SqliteBlocking {
    type Runtime = Threads;
    type Backend = Blocking<SqliteBackend>;
    type Executor = Idempotency<Arc<SqliteBackend>>;

    fn build(settings: Settings) -> Blocking<SqliteBackend> {
        blocking(backend(settings, None))
    }

    fn after_vector(backend: &Blocking<SqliteBackend>, _passed: bool) {
        remove_file(backend.backend());
    }
}

impl ManualTime for SqliteBlocking {
    fn build_on(settings: Settings, clock: ManualClock) -> Blocking<SqliteBackend> {
        blocking(backend(settings, Some(clock)))
    }
}

impl ExactCapacity for SqliteBlocking {}
