//! [idemkit](idemkit_core) for smol: run an operation once per idempotency key, and
//! replay its result to every retry.
//!
//! This crate supplies async-io's timer (the one smol runs on); the store, the wake-ups,
//! the wait loop and the executor are `idemkit-core`'s. Everything a user needs is
//! re-exported here.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use idemkit_smol::{Decision, Fingerprint, Idempotency, InMemoryBackend, Key, Response};
//!
//! smol::block_on(async {
//!     let idempotency = Idempotency::new(InMemoryBackend::new());
//!     let key = Key::new(["tenant-7", "client-key-8c1f"]);
//!     let request = Fingerprint::new(["POST", "/charges", "amount=100"]);
//!     let charges = AtomicUsize::new(0);
//!     let charge = || async {
//!         charges.fetch_add(1, Ordering::SeqCst);
//!         Ok::<_, std::io::Error>(Response::new(201, "charged"))
//!     };
//!
//!     let first = idempotency.run(&key, &request, charge).await?;
//!     let retry = idempotency.run(&key, &request, charge).await?;
//!     assert_eq!((first.decision, retry.decision), (Decision::New, Decision::Replayed));
//!     assert_eq!(retry.response.body, b"charged");
//!     assert_eq!(charges.load(Ordering::SeqCst), 1);
//!     Ok::<(), idemkit_smol::RunError<std::io::Error>>(())
//! })?;
//! # Ok::<(), idemkit_smol::RunError<std::io::Error>>(())
//! ```
//!
//! The backend underneath is usable directly too: `claim`, `complete`, `release`,
//! `renew` and `wait_for_completion`, as in [`idemkit_core::Store`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::future::Future;
use std::time::{Duration, Instant};

pub use idemkit_core::{
    Backend, Claim, ClaimToken, Clock, Decision, Error, Event, Fingerprint, Heartbeat, Key,
    ManualClock, OnStorageError, Outcome, Policy, Record, Response, RunError, State, Store,
    SystemClock, Timer,
};

/// The in-memory backend for smol: see [`AsyncInMemoryBackend`](idemkit_core::AsyncInMemoryBackend)
/// for its methods. Leases and TTLs run on `C`, the [`SystemClock`] by default.
pub type InMemoryBackend<C = SystemClock> = idemkit_core::AsyncInMemoryBackend<C, SmolTimer>;

/// Configures an [`InMemoryBackend`]: see [`idemkit_core::Builder`].
pub type Builder<C = SystemClock> = idemkit_core::Builder<C, idemkit_core::Async<SmolTimer>>;

/// The run-once executor for smol: see [`AsyncIdempotency`](idemkit_core::AsyncIdempotency)
/// for its methods. It runs on [`InMemoryBackend`] by default, or on any [`Backend`];
/// `Idempotency::new(backend)` infers the backend type from its argument.
pub type Idempotency<B = InMemoryBackend> = idemkit_core::AsyncIdempotency<B, SmolTimer>;

/// async-io's timer, for waits and the purger.
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolTimer;

impl Timer for SmolTimer {
    type DefaultClock = SystemClock;

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        let timer = async_io::Timer::after(duration);
        async move {
            timer.await;
        }
    }
}
