//! [idemkit](idemkit_core) for tokio: run an operation once per idempotency key, and
//! replay its result to every retry.
//!
//! This crate supplies tokio's timer and clock; the store, the wake-ups and the wait loop
//! are `idemkit-core`'s. Everything a user needs is re-exported here.
//!
//! ```
//! use std::time::Duration;
//! use idemkit_tokio::{Claim, InMemoryBackend, Response};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), idemkit_tokio::Error> {
//! let backend = InMemoryBackend::new();
//! let lease = Duration::from_secs(30);
//! let Claim::New(token) = backend.claim("charge-42", "fp", 1, lease).await? else { unreachable!() };
//! backend.complete("charge-42", &token, Response::new(200, "ok"), Duration::from_secs(3600)).await;
//! let replay = backend.wait_for_completion("charge-42", Duration::from_secs(1)).await;
//! assert_eq!(replay.unwrap().response().unwrap().body, b"ok");
//! # Ok(()) }
//! ```
//!
//! Under `#[tokio::test(start_paused = true)]`, [`TokioClock`] follows tokio's paused
//! time, so `tokio::time::advance` expires leases and results, and waits time out without
//! real sleeping.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::future::Future;
use std::time::{Duration, Instant};

pub use idemkit_core::{
    Claim, ClaimToken, Clock, Error, ManualClock, Record, Response, State, Store, SystemClock,
    Timer,
};

/// The in-memory backend for tokio: see [`AsyncInMemoryBackend`](idemkit_core::AsyncInMemoryBackend)
/// for its methods. Leases and TTLs run on `C`, [`TokioClock`] by default.
pub type InMemoryBackend<C = TokioClock> = idemkit_core::AsyncInMemoryBackend<C, TokioTimer>;

/// Configures an [`InMemoryBackend`]: see [`idemkit_core::Builder`].
pub type Builder<C = TokioClock> = idemkit_core::Builder<C, idemkit_core::Async<TokioTimer>>;

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
