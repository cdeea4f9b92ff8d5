//! Make an operation safe to retry: run it once per idempotency key, store its result,
//! and replay that result to every retry.
//!
//! A key names the operation. An atomic [`claim`](Store::claim) gives one executor the
//! right to run it, under a lease; [`complete`](Store::complete) stores the result, and
//! every later claim of the key gets [`Claim::Completed`] with the stored [`Response`] to
//! replay. The parts that naive "seen this key?" code gets wrong are handled here:
//!
//! - **Racing duplicates**: claims are atomic; exactly one gets [`Claim::New`].
//! - **Crashed workers**: a lease that lapses is reclaimed with a new [`ClaimToken`],
//!   and the dead worker's late write, carrying the old token, is refused (fencing).
//! - **Duplicates that arrive mid-run** wait for the result and replay it, woken the
//!   moment it lands rather than by blind polling.
//! - **Hostile key cardinality**: the store holds at most `max_size` records and
//!   refuses new keys beyond that, never evicting a claim in progress; expired records
//!   are dropped at a cost proportional to what expired, never by scanning the store.
//!
//! # Layers
//!
//! Data flows one way, from an executor to a backend to the store, and comes back as
//! plain values ([`Claim`], [`Record`]); the store never calls out.
//!
//! - **The store** ([`Store`]) is the state machine, sans-IO: every call that depends on
//!   time takes `now`, and nothing inside reads a clock, locks, spawns or sleeps.
//! - **The backends**: [`Backend`] is the one trait a backend implements, what an
//!   executor needs from a store; every `Backend` is also a [`BlockingBackend`] for
//!   blocking code, and [`DynBackend`] is one chosen at run time. The
//!   [`InMemoryBackend`] is a sharded store with per-key wake-ups for
//!   waiters, one type for threads and tasks, whatever its clock. It is built from the
//!   store's public parts only ([`KeyHasher`] to route a key once, [`SharedCapacity`] for
//!   one exact limit, [`Store::watch_hashed`] for waiters), so a backend of your own can
//!   be built the same way.
//! - **Inputs**: a store reads no clock and no OS randomness of its own. It is given `now`,
//!   and it draws claim tokens from its [`RandomSource`]: [`OsRandom`] by default, a
//!   [`SeededRandom`] to replay a test run token for token.
//! - **The runtime seam**: a [`Clock`] to judge leases by and a [`Timer`] to sleep on.
//!   [`ThreadTimer`] works everywhere; `idemkit-tokio` and `idemkit-smol` supply their
//!   runtimes' own; [`ManualClock`] moves time in tests.
//! - **The executors**: [`Idempotency`] (blocking) and [`AsyncIdempotency`] take a
//!   [`Key`], a [`Fingerprint`] and the operation, and claim, run, store, wait, replay
//!   and refuse by the rules of [`Policy`], through one run loop.
//!
//! The in-memory backend is one process's memory: effectively-once per process. A
//! networked backend (Redis) makes it hold across every replica of a service.
//!
//! # Features
//!
//! - `http`: conversions between [`Response`] and `http::Response<Bytes>`.
//!
//! # Dependencies
//!
//! Beyond `parking_lot`, `getrandom`, `event-listener`, `futures-lite` and `thiserror`:
//! `hashbrown`, whose table lets the store keep each key once, inside its record (std's
//! map cannot look a key up by a key stored elsewhere); `sha2` for [`Key`] and
//! [`Fingerprint`]; `bytes`, the body type the Rust HTTP stack hands around, so bodies
//! are shared rather than copied; and `http`, only with the `http` feature.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod backend;
mod body;
mod claim;
mod error;
mod exec;
mod hex;
#[cfg(feature = "http")]
mod http;
mod key;
mod memory;
mod random;
mod record;
mod response;
mod rt;
mod store;
mod token;

pub use backend::{
    Backend, BlockingBackend, DynBackend, Operator, PollSchedule, StoreStats, in_blocking_call,
};
pub use body::Body;
pub use bytes::Bytes;
pub use claim::{Claim, Completed};
pub use error::{ConfigError, Error, StorageSource};
pub use exec::{
    AsyncIdempotency, Decision, Event, Heartbeat, Idempotency, Lease, OnStorageError, Outcome,
    Policy, PolicyBuilder, RunError, Unstored,
};
#[cfg(feature = "http")]
pub use http::InvalidHttpResponse;
pub use key::{Fingerprint, Key};
pub use memory::{InMemoryBackend, InMemoryBuilder};
pub use random::{OsRandom, RandomSource, SeededRandom};
pub use record::{Record, State};
pub use response::Response;
pub use rt::{Clock, ManualClock, Runtime, Sleep, SystemClock, Task, ThreadTimer, Timer};
pub use store::{HashedKey, KeyHasher, SharedCapacity, Store, StoreBuilder, Watch};
pub use token::{ClaimToken, ParseTokenError, RandomSourceError};

/// This crate's README, whose example is compiled as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
