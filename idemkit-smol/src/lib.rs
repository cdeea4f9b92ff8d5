//! [idemkit](idemkit_core) for smol: run an operation once per idempotency key, and
//! replay its result to every retry.
//!
//! This crate supplies async-io's timer (the one smol runs on); the store, the wake-ups
//! and the wait loop are `idemkit-core`'s. Everything a user needs is re-exported here.
//!
//! ```
//! use std::time::Duration;
//! use idemkit_smol::{Claim, InMemoryBackend, Response};
//!
//! smol::block_on(async {
//!     let backend = InMemoryBackend::new();
//!     let lease = Duration::from_secs(30);
//!     let Claim::New(token) = backend.claim("charge-42", "fp", 1, lease).await? else { unreachable!() };
//!     backend.complete("charge-42", &token, Response::new(200, "ok"), Duration::from_secs(3600)).await;
//!     let replay = backend.wait_for_completion("charge-42", Duration::from_secs(1)).await;
//!     assert_eq!(replay.unwrap().response().unwrap().body, b"ok");
//!     Ok::<(), idemkit_smol::Error>(())
//! })?;
//! # Ok::<(), idemkit_smol::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::future::Future;
use std::time::{Duration, Instant};

pub use idemkit_core::{
    Claim, ClaimToken, Clock, Error, ManualClock, Record, Response, State, Store, SystemClock,
    Timer,
};

/// The in-memory backend for smol: see [`AsyncInMemoryBackend`](idemkit_core::AsyncInMemoryBackend)
/// for its methods. Leases and TTLs run on `C`, the [`SystemClock`] by default.
pub type InMemoryBackend<C = SystemClock> = idemkit_core::AsyncInMemoryBackend<C, SmolTimer>;

/// Configures an [`InMemoryBackend`]: see [`idemkit_core::Builder`].
pub type Builder<C = SystemClock> = idemkit_core::Builder<C, idemkit_core::Async<SmolTimer>>;

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
