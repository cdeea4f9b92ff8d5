//! idemkit on PostgreSQL: one idempotency key runs once across every process that shares
//! the database, the record is as durable as the database, and where the operation's
//! effect is a write to the same database, effect and record commit in one transaction.
//!
//! [`PostgresBackend`] implements the core's [`Backend`](idemkit_core::Backend) (tokio
//! and smol; blocking code through [`BlockingBackend`](idemkit_core::BlockingBackend),
//! which every backend is) with the in-memory backend's meaning, judged by the database. It runs on [sqlx] 0.9: hand it
//! the `PgPool` the application already has, or a URL.
//!
//! ```no_run
//! use std::convert::Infallible;
//! use idemkit_core::{AsyncIdempotency, Fingerprint, Key, Response};
//! use idemkit_postgres::PostgresBackend;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let backend = PostgresBackend::builder()
//!     .url("postgres://app@127.0.0.1:5432/app")
//!     .migrate(true)
//!     .build()
//!     .await?;
//! let idempotency = AsyncIdempotency::new(backend);
//! let key = Key::new(["charge", "client-key-7"]);
//! let outcome = idempotency
//!     .run(&key, &Fingerprint::new(["4242"]), || async {
//!         Ok::<_, Infallible>(Response::new(200, "charged"))
//!     })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! # How it works
//!
//! - **One row per key** in one table (default `idemkit_records`; see [`schema_sql`] and
//!   this crate's `sql/schema.sql`), with a schema version in the table's comment and an
//!   index on the instant after which a purge may delete the row. [`migrate`] creates or
//!   upgrades it; at build the backend checks it and says what to run if it is not there.
//! - **A claim is one statement**: an `INSERT ... ON CONFLICT DO UPDATE` that inserts the
//!   claim, or takes over a lapsed claim or an expired result, or (changing nothing)
//!   returns the row that is there, locked, so two replicas can never both win.
//!   Complete, release and renew are each one statement that acts only for the claim
//!   token that holds the key (fencing). Every statement reads `clock_timestamp()`, the
//!   database's clock at that statement: the clients' clocks never decide a lease.
//! - **Waiters are woken by the database.** Complete, release and a reclaim `NOTIFY` on
//!   the table's channel (named as the table) with the key as payload, **for every key
//!   that has a waiter, and only for those**: a waiter (in any process) first marks the
//!   key's row as waited on (the `waiters` column, committed before its first read), and
//!   the completion, release or reclaim of a marked row notifies in the same statement.
//!   A key nobody waits for is not notified, because a transaction that notifies takes
//!   a server-wide lock through its commit and so serialises every such commit (in the
//!   benchmark, notifying every completion left about a quarter of the throughput; see
//!   BENCHMARKS.md in the repository). A `LISTEN` of your own on the channel hears of
//!   waited-on keys only, unless the backend is built with
//!   [`notify_every_key(true)`](PostgresBuilder::notify_every_key). Each backend holds one
//!   `LISTEN` connection of its own (never one of the pool's, so waiters cannot exhaust
//!   the pool) and demultiplexes to its waiters by key.
//!   A waiter registers before it reads, returns at once when the owner's lease has
//!   lapsed, re-reads on the core's [`PollSchedule`](idemkit_core::PollSchedule) in case
//!   a notification was lost, and never waits past its timeout. A lost listener
//!   reconnects, listens again and makes every waiter re-read.
//! - **An effect and its record in one transaction**: see [`PostgresBackend::begin`].
//! - **Expiry**: expired results and claims abandoned past the reclaim grace are deleted
//!   by [`Operator::purge_batch`](idemkit_core::Operator::purge_batch) in bounded batches,
//!   on demand or in the background ([`PostgresBackend::run_purger`]). Until then every
//!   operation treats them as absent.
//! - **Failures are storage errors.** The database down, a lost connection, a statement
//!   timeout, an exhausted pool, or no answer within the
//!   [operation timeout](PostgresBuilder::operation_timeout) are
//!   [`Error::Storage`](idemkit_core::Error::Storage) carrying a [`PostgresError`]. The
//!   pool reconnects by itself; nothing needs a restart.
//! - **Time on this side.** Each reply carries the database's time; a
//!   [`Record`](idemkit_core::Record)'s instants are the database's mapped onto this
//!   machine's monotonic clock relative to that reply, off by at most a round trip.
//!
//! # What PostgreSQL cannot promise
//!
//! This backend is exactly as durable as the commit it is given.
//!
//! - **`synchronous_commit`.** With `off` (for the session, the role, or the server), a
//!   commit is acknowledged before its WAL is flushed: a server crash in the next few
//!   hundred milliseconds (three times `wal_writer_delay`) loses claims and results that
//!   were reported done, and a retry then runs again. Keep it `on` (the default) for the
//!   idempotency table's writes. `fsync = off` loses more, and can corrupt the cluster.
//! - **Replicas.** Streaming replication is asynchronous unless
//!   `synchronous_standby_names` is set: a failover to a standby that had not received the
//!   last commits loses those claims and results, and their keys run twice. Synchronous
//!   replication (`synchronous_commit = remote_apply` or `on` with synchronous standbys)
//!   closes that window at the price of a round trip per commit. Reading from a replica
//!   is never done here: every statement goes to the primary the pool connects to.
//! - **Failover.** After a failover, connections to the old primary fail
//!   (`Error::Storage`) until the pool's address leads to the new one; a claim whose
//!   acknowledgement was lost may or may not exist, which the executor treats as any
//!   storage error. A lease is judged by the clock of whichever server answers: a clock
//!   that differs between old and new primary lengthens or shortens leases by the
//!   difference.
//! - **The clock.** `clock_timestamp()` is the server's wall clock: a step (not a slew)
//!   moves every lease by the step.
//! - **`NOTIFY` is not durable.** A wake-up lost to a disconnection costs a waiter at
//!   most a second (its re-read), never a wrong answer.
//!
//! # Runtimes
//!
//! Features `tokio` and `smol` (both on by default) are the runtimes compiled in; `tls`
//! adds TLS (rustls). A backend runs on one runtime, chosen when it is built and never by
//! whoever polls it: the one [`PostgresBuilder::runtime`] names, or by default, with the
//! `tokio` feature, the tokio runtime it is built in, or a tokio runtime of its own (one
//! worker thread) when built outside any; with only `smol`, smol. Its connections, its
//! `LISTEN` task and its time limits all run there, so it serves tasks of either runtime
//! and blocking code alike. Blocking calls park their thread: make them from threads, not
//! from async tasks. With both features and smol chosen, poll the backend outside tokio
//! (sqlx opens a connection on tokio wherever it finds a tokio context).
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod backend;
mod builder;
mod error;
mod handoff;
mod operator;
mod releases;
mod responses;
mod row;
mod run_registry;
mod run_transaction;
mod runtime;
mod schema;
mod statements;
mod table;
mod time;
mod traits;
mod transaction;
mod wakeups;

pub use backend::PostgresBackend;
pub use builder::PostgresBuilder;
pub use error::{BuildError, PostgresError};
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
pub use idemkit_smol::SmolRuntime;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use idemkit_tokio::TokioRuntime;
pub use run_transaction::{RunConnection, RunEffect, RunTransaction};
pub use runtime::RuntimeChoice;
#[doc(hidden)]
pub use schema::schema_sql_at;
pub use schema::{Migration, SCHEMA_VERSION, migrate, schema_sql};
pub use table::{DEFAULT_TABLE, InvalidTable};
pub use transaction::{ClaimedTransaction, Committed, Started};

/// sqlx, as this crate uses it: the types of the transaction API
/// ([`sqlx::PgConnection`], [`sqlx::PgPool`]) come from here.
pub use sqlx;

impl PostgresBackend {
    /// A builder, to set the database and everything else: see [`PostgresBuilder`].
    pub fn builder() -> PostgresBuilder {
        PostgresBuilder::new()
    }

    /// A backend on the database at `url` with the defaults (table `idemkit_records`,
    /// which must exist).
    pub async fn connect(url: &str) -> Result<PostgresBackend, BuildError> {
        PostgresBuilder::new().url(url).build().await
    }

    /// A backend on the application's pool with the defaults.
    pub async fn from_pool(pool: sqlx::PgPool) -> Result<PostgresBackend, BuildError> {
        PostgresBuilder::new().pool(pool).build().await
    }
}

/// This crate's README, whose example is compiled as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
