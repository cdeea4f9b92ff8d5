//! [idemkit](idemkit_core) for smol: run an operation once per idempotency key, and
//! replay its result to every retry.
//!
//! Everything a smol user needs is here, in one `use` line: all of `idemkit-core`, with
//! [`AsyncIdempotency`] the async executor, and [`SmolTimer`], which sleeps on async-io's
//! reactor (the one smol runs on).
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use idemkit_smol::{Decision, Fingerprint, AsyncIdempotency, InMemoryBackend, Key, Response, SmolTimer};
//!
//! smol::block_on(async {
//!     let backend = InMemoryBackend::builder().timer(SmolTimer).build();
//!     let idempotency = AsyncIdempotency::new(backend);
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
//!     assert_eq!(retry.response.body, "charged");
//!     assert_eq!(charges.load(Ordering::SeqCst), 1);
//!     Ok::<(), idemkit_smol::RunError<std::io::Error>>(())
//! })?;
//! # Ok::<(), idemkit_smol::RunError<std::io::Error>>(())
//! ```
//!
//! The backends work on smol as they are (the in-memory backend's default timer needs no
//! runtime); [`SmolTimer`] puts their sleeps on smol's own reactor instead of a helper
//! thread.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

use std::time::{Duration, Instant};

pub use idemkit_core::*;

/// async-io's timer, on real time ([`Instant::now`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolTimer;

impl Clock for SmolTimer {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl Timer for SmolTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        // `Timer::after` of a duration too long to represent never fires.
        let timer = async_io::Timer::after(duration);
        Box::pin(async move {
            timer.await;
        })
    }
}

/// smol as a whole [`Runtime`]: real time ([`Instant::now`]), async-io's timer, and
/// smol's global executor for background work. Nothing to hold: the reactor and the
/// executor are the process's own, and serve any thread.
///
/// ```
/// use std::time::{Duration, Instant};
/// use idemkit_smol::SmolRuntime;
/// use idemkit_core::{Runtime, Timer};
///
/// let (done, finished) = std::sync::mpsc::channel();
/// SmolRuntime.spawn(Box::pin(async move {
///     SmolRuntime.sleep(Duration::from_millis(5)).await;
///     done.send(()).unwrap();
/// }));
/// assert!(finished.recv_timeout(Duration::from_secs(30)).is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolRuntime;

impl Clock for SmolRuntime {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl Timer for SmolRuntime {
    fn sleep(&self, duration: Duration) -> Sleep {
        SmolTimer.sleep(duration)
    }
}

impl Runtime for SmolRuntime {
    fn spawn(&self, task: Task) {
        smol::spawn(task).detach();
    }
}

/// This crate's README, whose example is compiled as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
