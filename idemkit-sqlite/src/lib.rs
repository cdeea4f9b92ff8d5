//! idemkit on one embedded SQLite file: durable idempotency records for a service on one
//! machine, shared by every process of it that opens the file, on tokio, smol or plain
//! threads. Nothing to install or start: SQLite is compiled in.
//!
//! [`SqliteBackend`] implements the core's async [`Backend`](idemkit_core::Backend) and
//! [`BlockingBackend`](idemkit_core::BlockingBackend) with the in-memory backend's
//! meaning, but its records survive a restart, a deploy and a crash, and a claim is
//! atomic across the processes that share the file.
//!
//! ```
//! use std::convert::Infallible;
//! use idemkit_core::{Decision, Fingerprint, Idempotency, Key, Response};
//! use idemkit_sqlite::SqliteBackend;
//!
//! # let dir = std::env::temp_dir().join(format!("idemkit-doc-lib-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # let path = dir.join("idempotency.db");
//! let backend = SqliteBackend::open(&path)?;
//! let idempotency = Idempotency::new(backend.clone());
//! let key = Key::new(["charge", "client-key-7"]);
//! let fingerprint = Fingerprint::new(["4242", "4999"]);
//! let first = idempotency.run(&key, &fingerprint, |_lease| Ok::<_, Infallible>(Response::new(200, "charged")))?;
//! assert_eq!(first.decision, Decision::New);
//!
//! // A restart: the same file, a new backend. The retry replays.
//! drop((idempotency, backend));
//! let idempotency = Idempotency::new(SqliteBackend::open(&path)?);
//! let retry = idempotency.run(&key, &fingerprint, |_lease| Ok::<_, Infallible>(Response::new(200, "charged twice")))?;
//! assert_eq!(retry.decision, Decision::Replayed);
//! assert_eq!(&retry.response.body[..], b"charged");
//! # drop(idempotency);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # How it works
//!
//! - **One row per key** in one table (default `idemkit_records`, see [`TableName`]),
//!   with the claim token, the fingerprint, the instants, and once completed the status,
//!   the headers and the body (a blob of its own, stored as is).
//! - **Atomic and fenced across processes.** The file is in WAL mode. A claim is one
//!   `BEGIN IMMEDIATE` transaction: it takes the file's write lock before it reads the
//!   row, so two processes can never both read a free key and then both try to write it
//!   (and never deadlock upgrading a read to a write). Complete, release and renew are
//!   one `UPDATE`/`DELETE` each (SQLite runs a lone write statement the same way, the
//!   lock taken before it reads), whose `WHERE` names the claim token: they act only for
//!   the token that holds the key. A
//!   writer of another process waits for the lock up to the [busy
//!   timeout](SqliteBuilder::busy_timeout), then fails with a storage error; within one process
//!   writes queue on a mutex, never on SQLite's sleeping busy handler.
//! - **The file's clock is the machine's.** Instants are stored as nanoseconds since the
//!   Unix epoch, read from this machine's wall clock, which every process sharing the
//!   file reads too. A step of the wall clock (not a slew) lengthens or shortens every
//!   lease and result by the step. The instants of a [`Record`](idemkit_core::Record) are
//!   the stored ones mapped onto the monotonic clock at the moment of the read.
//! - **Durable.** See [`Synchronous`]: the default, `synchronous=FULL`, flushes every
//!   commit before it is acknowledged, so nothing acknowledged is lost to a crash of the
//!   process, the system or the power; `NORMAL` survives a crash of the process only.
//!   Either way a `kill -9` in the middle of a write never corrupts the file: the
//!   uncommitted transaction is simply not there.
//! - **Waits.** A completion, release or reclaim in this process wakes that key's waiters
//!   at once, as in the in-memory backend. One in another process is seen through `PRAGMA
//!   data_version`, the file's change counter, which one thread per backend reads every
//!   5 ms while someone in the process waits (and never otherwise), waking the waiters to
//!   re-read their key. A lapsed lease returns at once; a waiter also re-reads on the
//!   core's [`PollSchedule`](idemkit_core::PollSchedule); no wait outlives its timeout.
//! - **Bounded.** Every sixteenth claim of a process deletes up to 32 gone records on its
//!   way (expired results, claims lapsed past the reclaim grace): two per claim, on
//!   average, so the file keeps pace with expiry without a purger;
//!   [`SqliteBackend::run_purger`] and the [`Operator`](idemkit_core::Operator) purge
//!   delete them in bounded batches too, and a new
//!   file is created with `auto_vacuum=INCREMENTAL`, so each purge batch hands the freed
//!   pages back (`PRAGMA incremental_vacuum`): a file that runs for months stays the size
//!   of its live records. Its write-ahead log is cut back to 4 MiB once a checkpoint
//!   empties it (`journal_size_limit`), so a burst leaves no peak on disk either. [`SqliteBuilder::max_records`] caps the rows: a new key beyond it is
//!   refused with `Error::Full`, never by evicting anything.
//! - **Files it does not understand are left alone.** A file that is not a database, a
//!   read-only file (by the file system, or by permissions that give nobody write
//!   access), a table of another layout or schema version, or another program's
//!   database (tables, none of them idemkit's: [`SqliteBackend::migrate`] adds the table
//!   to one on purpose) is an [`OpenError`] at open, and nothing is written to it; a
//!   full disk, a lock held past the busy timeout or a damaged row is an
//!   [`Error::Storage`](idemkit_core::Error::Storage) carrying a [`SqliteError`], and the
//!   write is rolled back. A single row that is not a
//!   record (damaged, or written by hand) is treated as absent, reported, and
//!   overwritten by the next claim ([`CorruptRecord`]).
//! - **Schema.** The table is created when missing ([`SqliteBuilder::require_table`] refuses
//!   instead), or by [`SqliteBackend::migrate`] / `idemkit migrate sqlite://PATH`, which
//!   report what they did ([`Migration`]).
//!
//! # Why rusqlite
//!
//! The client library was chosen by measurement: claim+complete pairs through rusqlite
//! and through sqlx's SQLite driver, the same statements and pragmas, one pair at a time
//! (`bench/sqlite-client-choice` in the repository). Where the disk's flush does not
//! decide (`synchronous=NORMAL`), rusqlite ran about 3x as many pairs per second (sqlx
//! hands every statement to a worker thread over a channel); with `synchronous=FULL`
//! both wait on the same flush per commit and were indistinguishable within the disk's
//! noise. rusqlite is also synchronous like the core's blocking trait, so blocking code
//! calls SQLite directly and only the async side pays for a hop to another thread. The
//! figures are in the repository's `BENCHMARKS.md`.
//!
//! # Features
//!
//! The async side's writes run on one thread of the backend's own, which takes them from
//! a queue in turn (a write may wait for the disk or another process's lock, which must
//! not happen on an executor's thread). Reads and timers follow the runtime:
//!
//! - `tokio` (the default): polled inside a tokio runtime, reads run on tokio's blocking
//!   pool and waits sleep on tokio's timer.
//! - `smol`: polled anywhere else, on the `blocking` crate's pool (smol's) and async-io's
//!   timer, which serve any executor.
//!
//! Where the feature for the polling context is off (or with neither), reads run inline
//! and waits sleep on the core's `ThreadTimer`. Blocking code (through
//! [`BlockingBackend`](idemkit_core::BlockingBackend), which every backend is) always
//! runs each operation inline on its own thread.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod backend;
mod builder;
mod clock;
mod codec;
mod connection;
mod corrupt;
mod error;
mod operator;
mod ops;
mod releases;
mod responses;
mod runtime;
mod schema;
mod table;
mod traits;
mod wait;
mod wakeups;
mod writer;

pub use backend::SqliteBackend;
pub use builder::SqliteBuilder;
pub use connection::Synchronous;
pub use corrupt::CorruptRecord;
pub use error::{OpenError, SqliteError};
pub use schema::{Migration, SCHEMA_VERSION};
pub use table::TableName;

impl SqliteBackend {
    /// A builder for the file at `path`: see [`SqliteBuilder`].
    pub fn builder(path: impl AsRef<std::path::Path>) -> SqliteBuilder {
        SqliteBuilder::new(path)
    }
}

/// This crate's README, whose example is compiled as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
