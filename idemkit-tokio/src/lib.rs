//! [idemkit](idemkit_core) for tokio: run an operation once per idempotency key, and
//! replay its result to every retry.
//!
//! This crate supplies tokio's timer and clock; the store, the wake-ups, the wait loop
//! and the executor are `idemkit-core`'s. Everything a user needs is re-exported here.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use idemkit_tokio::{Decision, Fingerprint, Idempotency, InMemoryBackend, Key, Response};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), idemkit_tokio::RunError<std::io::Error>> {
//! let idempotency = Idempotency::new(InMemoryBackend::new());
//! let key = Key::new(["tenant-7", "client-key-8c1f"]);
//! let request = Fingerprint::new(["POST", "/charges", "amount=100"]);
//! let charges = AtomicUsize::new(0);
//! let charge = || async {
//!     charges.fetch_add(1, Ordering::SeqCst);
//!     Ok::<_, std::io::Error>(Response::new(201, "charged"))
//! };
//!
//! let first = idempotency.run(&key, &request, charge).await?;
//! let retry = idempotency.run(&key, &request, charge).await?;
//! assert_eq!((first.decision, retry.decision), (Decision::New, Decision::Replayed));
//! assert_eq!(retry.response.body, b"charged");
//! assert_eq!(charges.load(Ordering::SeqCst), 1);
//! # Ok(()) }
//! ```
//!
//! The backend underneath is usable directly too: `claim`, `complete`, `release`,
//! `renew` and `wait_for_completion`, as in [`idemkit_core::Store`].
//!
//! Under `#[tokio::test(start_paused = true)]`, [`TokioClock`] follows tokio's paused
//! time, so `tokio::time::advance` expires leases and results, and waits time out without
//! real sleeping.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::future::Future;
use std::time::{Duration, Instant};

pub use idemkit_core::{
    Backend, Claim, ClaimToken, Clock, Decision, Error, Event, Fingerprint, Heartbeat, Key,
    ManualClock, OnStorageError, Outcome, Policy, Record, Response, RunError, State, Store,
    SystemClock, Timer,
};

/// The in-memory backend for tokio: see [`AsyncInMemoryBackend`](idemkit_core::AsyncInMemoryBackend)
/// for its methods. Leases and TTLs run on `C`, [`TokioClock`] by default.
pub type InMemoryBackend<C = TokioClock> = idemkit_core::AsyncInMemoryBackend<C, TokioTimer>;

/// Configures an [`InMemoryBackend`]: see [`idemkit_core::Builder`].
pub type Builder<C = TokioClock> = idemkit_core::Builder<C, idemkit_core::Async<TokioTimer>>;

/// The run-once executor for tokio: see [`AsyncIdempotency`](idemkit_core::AsyncIdempotency)
/// for its methods. It runs on [`InMemoryBackend`] by default, or on any [`Backend`];
/// `Idempotency::new(backend)` infers the backend type from its argument.
pub type Idempotency<B = InMemoryBackend> = idemkit_core::AsyncIdempotency<B, TokioTimer>;

/// tokio's clock, [`tokio::time::Instant::now`]: real time, or the paused test clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// tokio's timer, for waits and the purger.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioTimer;

impl Timer for TokioTimer {
    type DefaultClock = TokioClock;

    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }
}
