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
//! - [`Store`] is the state machine, sans-IO: every call that depends on time takes
//!   `now`, and nothing inside reads a clock, locks, spawns or sleeps.
//! - [`InMemoryBackend`] shares a sharded store between threads, with per-key wake-ups
//!   for waiters and a [`Clock`] ([`ManualClock`] in tests).
//! - [`AsyncInMemoryBackend`] is the same for async code, given a runtime's [`Timer`];
//!   `idemkit-tokio` and `idemkit-smol` supply theirs.
//! - [`Idempotency`] and [`AsyncIdempotency`] are the executors on top: give them a
//!   [`Key`], a [`Fingerprint`] and the operation, and they claim, run, store, wait,
//!   replay and refuse by the rules of [`Policy`].
//!
//! Everything is one process's memory: this is effectively-once per process, not
//! exactly-once across a fleet.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod async_backend;
mod blocking;
mod builder;
mod capacity;
mod claim;
mod clock;
mod error;
mod exec;
mod expiry;
mod key;
mod keyhash;
mod record;
mod shared;
mod slots;
mod stamp;
mod store;
mod token;
mod wait;

pub use async_backend::{Async, AsyncInMemoryBackend};
pub use blocking::InMemoryBackend;
pub use builder::{Blocking, Builder, Flavor};
pub use claim::Claim;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::Error;
pub use exec::{
    AsyncIdempotency, Backend, Decision, Event, Heartbeat, Idempotency, Lease, OnStorageError,
    Outcome, Policy, RunError,
};
pub use key::{Fingerprint, Key};
pub use record::{Record, Response, State};
pub use store::Store;
pub use token::{ClaimToken, ParseTokenError, RandomSourceError};
pub use wait::Timer;
