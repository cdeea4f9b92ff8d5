//! The conformance suite's targets for the PostgreSQL backend: tokio, smol and blocking
//! code, each vector on a table of its own on the machine's server.
//!
//! Only the vectors on real time apply: leases are judged by the database's
//! `clock_timestamp()`, which no test can move, so the manual-clock groups do not run;
//! there is no fixed capacity (a table grows) and no in-process purger to spawn (the
//! purge is a statement; `tests/records.rs` covers it).
//!
//! The backend goes to the suite as it is: the suite counts its waiters through its own
//! method, and each target's `after_vector` drops the vector's table.
#![allow(dead_code)] // each test binary uses its own target

use std::sync::Arc;

use idemkit_conformance::backend::{Async, Blocking};
use idemkit_conformance::runtimes::{SmolRuntime, Threads, TokioRuntime};
use idemkit_conformance::{Settings, Target};
use idemkit_core::{AsyncIdempotency, Idempotency};
use idemkit_postgres::{PostgresBackend, PostgresBuilder};

#[path = "../support/mod.rs"]
mod support;

/// A builder for a backend on a table of its own, which the target's `after_vector`
/// drops.
fn builder(settings: Settings) -> PostgresBuilder {
    let Some(scratch) = support::Scratch::new("conformance") else {
        // No PostgreSQL (and not required): every vector here needs it.
        std::process::exit(0)
    };
    let builder = scratch.builder().reclaim_grace(settings.reclaim_grace);
    // The table outlives the scratch name: the teardown drops it.
    scratch.forget();
    builder
}

/// The targets' teardown: the vector's table goes.
fn drop_table(backend: &PostgresBackend) {
    if let Some(url) = pg_harness::machine() {
        support::psql(&url, &format!("DROP TABLE IF EXISTS {}", backend.table()));
    }
}

#[derive(Debug)]
pub struct PostgresTokio;

impl Target for PostgresTokio {
    type Runtime = TokioRuntime;
    type Backend = Async<PostgresBackend>;
    type Executor = AsyncIdempotency<PostgresBackend>;

    fn build(settings: Settings) -> Async<PostgresBackend> {
        let builder = builder(settings);
        let handle = tokio::runtime::Handle::current();
        let backend = tokio::task::block_in_place(|| handle.block_on(builder.build()))
            .expect("the backend connects");
        Async::new(backend).watched_keys(PostgresBackend::watched_keys)
    }

    fn after_vector(backend: &Async<PostgresBackend>, _passed: bool) {
        drop_table(backend.backend());
    }
}

/// Through `Backend`, with `AsyncIdempotency`, on smol.
#[derive(Debug)]
pub struct PostgresSmol;

impl Target for PostgresSmol {
    type Runtime = SmolRuntime;
    type Backend = Async<PostgresBackend>;
    type Executor = AsyncIdempotency<PostgresBackend>;

    fn build(settings: Settings) -> Async<PostgresBackend> {
        let builder = builder(settings);
        // On smol itself: by default, a backend built outside tokio runs on a tokio
        // runtime of its own.
        #[cfg(feature = "smol")]
        let builder = builder.runtime(idemkit_postgres::SmolRuntime);
        let backend = builder.build_blocking().expect("the backend connects");
        Async::new(backend).watched_keys(PostgresBackend::watched_keys)
    }

    fn after_vector(backend: &Async<PostgresBackend>, _passed: bool) {
        drop_table(backend.backend());
    }
}

/// Through `BlockingBackend`, with the blocking `Idempotency`, on threads.
#[derive(Debug)]
pub struct PostgresBlocking;

impl Target for PostgresBlocking {
    type Runtime = Threads;
    type Backend = Blocking<PostgresBackend>;
    type Executor = Idempotency<Arc<PostgresBackend>>;

    fn build(settings: Settings) -> Blocking<PostgresBackend> {
        let builder = builder(settings);
        let backend = builder.build_blocking().expect("the backend connects");
        Blocking::new(backend).watched_keys(PostgresBackend::watched_keys)
    }

    fn after_vector(backend: &Blocking<PostgresBackend>, _passed: bool) {
        drop_table(backend.backend());
    }
}
