//! [idemkit](idemkit_core) for tokio: run an operation once per idempotency key, and
//! replay its result to every retry.
//!
//! Everything a tokio user needs is here, in one `use` line: all of `idemkit-core`, with
//! [`AsyncIdempotency`] the async executor, and [`TokioTimer`], tokio's clock and sleep.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use idemkit_tokio::{Decision, Fingerprint, AsyncIdempotency, InMemoryBackend, Key, Response};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), idemkit_tokio::RunError<std::io::Error>> {
//! let idempotency = AsyncIdempotency::new(InMemoryBackend::new());
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
//! assert_eq!(retry.response.body, "charged");
//! assert_eq!(charges.load(Ordering::SeqCst), 1);
//! # Ok(()) }
//! ```
//!
//! The backends work on tokio as they are: the in-memory backend's default timer needs
//! no runtime. Build it on [`TokioTimer`] to run leases, TTLs and waits on tokio's clock
//! instead, so that under `#[tokio::test(start_paused = true)]` `tokio::time::advance`
//! lapses leases and expires results, and waits time out without real sleeping:
//!
//! ```
//! use std::time::Duration;
//! use idemkit_tokio::{Backend, Claim, InMemoryBackend, TokioTimer};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let backend = InMemoryBackend::builder().timer(TokioTimer).build();
//! let lease = Duration::from_secs(30);
//! assert!(matches!(backend.claim("k", "fp", 1, lease).await, Ok(Claim::New(_))));
//! tokio::time::advance(Duration::from_secs(31)).await;
//! assert!(matches!(backend.claim("k", "fp", 1, lease).await, Ok(Claim::Reclaimed(_))));
//! # }
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

use std::time::{Duration, Instant};

pub use idemkit_core::*;

/// tokio's clock and sleep: [`tokio::time::Instant::now`] and [`tokio::time::sleep`],
/// which follow tokio's paused test time.
///
/// Its sleeps need a tokio runtime with its timer enabled.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioTimer;

impl Clock for TokioTimer {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// tokio as a whole [`Runtime`]: its clock and sleep (paused test time included), and
/// its executor for background work, through a [`Handle`](tokio::runtime::Handle) to one
/// runtime.
///
/// Because it holds the handle, its sleeps and spawns work from any thread, inside the
/// runtime or not, for as long as that runtime runs; tasks spawned after it shut down
/// are dropped.
///
/// ```
/// use std::time::Duration;
/// use idemkit_tokio::TokioRuntime;
/// use idemkit_core::{Clock, Timer};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let runtime = TokioRuntime::current();
/// let start = runtime.now();
/// runtime.sleep(Duration::from_secs(3600)).await; // paused time: no real hour passes
/// assert!(runtime.now() - start >= Duration::from_secs(3600));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct TokioRuntime {
    handle: tokio::runtime::Handle,
}

impl TokioRuntime {
    /// The runtime the caller runs in.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as [`Handle::current`](tokio::runtime::Handle::current)
    /// does; [`TokioRuntime::try_current`] does not.
    pub fn current() -> TokioRuntime {
        TokioRuntime {
            handle: tokio::runtime::Handle::current(),
        }
    }

    /// The runtime the caller runs in, or `None` outside one.
    pub fn try_current() -> Option<TokioRuntime> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        Some(TokioRuntime { handle })
    }

    /// The handle this runtime spawns and sleeps through.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

impl From<tokio::runtime::Handle> for TokioRuntime {
    fn from(handle: tokio::runtime::Handle) -> TokioRuntime {
        TokioRuntime { handle }
    }
}

impl Clock for TokioRuntime {
    fn now(&self) -> Instant {
        // Entered, so that a paused runtime's clock is read from any thread.
        let _entered = self.handle.enter();
        tokio::time::Instant::now().into_std()
    }
}

impl Timer for TokioRuntime {
    fn sleep(&self, duration: Duration) -> Sleep {
        // A tokio sleep binds to the runtime it is made in: make it inside ours.
        let _entered = self.handle.enter();
        match tokio::time::Instant::now().checked_add(duration) {
            Some(deadline) => Box::pin(tokio::time::sleep_until(deadline)),
            // Too long to represent: never over.
            None => Box::pin(std::future::pending()),
        }
    }
}

impl Runtime for TokioRuntime {
    fn spawn(&self, task: Task) {
        // A runtime that has shut down drops the task.
        drop(self.handle.spawn(task));
    }
}

/// This crate's README, whose example is compiled as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
