//! The runtime seam: where the library reads the time and how it sleeps.
//!
//! Two object-safe traits are all a runtime supplies. A [`Clock`] says what time it is;
//! the in-memory backend judges leases and expiry by one. A [`Timer`] is a clock that
//! can also sleep; waits, their time-outs and the async executor's heartbeat run on one.
//! No type in this crate is generic over either: each holds an `Arc<dyn Clock>` or an
//! `Arc<dyn Timer>`, so a backend has one type whether it runs on the system clock, a
//! [`ManualClock`] in a test, or tokio's paused time.
//!
//! - [`SystemClock`] reads [`Instant::now`].
//! - [`ManualClock`] moves only when a test says so.
//! - [`ThreadTimer`], the default timer, runs on real time; one helper thread per
//!   process wakes its sleeps, so it works under any executor, or none.
//! - `idemkit-tokio`'s `TokioTimer` follows tokio's clock (paused time included), and
//!   `idemkit-smol`'s `SmolTimer` sleeps on async-io's reactor.

mod clock;
pub(crate) mod deadline;
mod thread_timer;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

pub use self::clock::{ManualClock, SystemClock};
pub use self::thread_timer::ThreadTimer;

/// A time source.
///
/// Implement it to drive leases and TTLs from a clock of your own. It must never go
/// backwards.
///
/// ```
/// use std::time::Instant;
/// use idemkit_core::{Clock, SystemClock};
///
/// let before = Instant::now();
/// assert!(SystemClock.now() >= before);
/// ```
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// A sleep in progress: what [`Timer::sleep`] returns.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A clock that one can sleep on: its [`now`](Clock::now) is the time its sleeps count
/// in, so a paused test clock (tokio's) times sleeps out without real waiting.
///
/// An adapter for another runtime implements it with that runtime's sleep:
///
/// ```
/// use std::time::{Duration, Instant};
/// use idemkit_core::{Clock, Sleep, Timer};
///
/// /// A timer that never sleeps: every sleep is over at once.
/// struct Impatient;
///
/// impl Clock for Impatient {
///     fn now(&self) -> Instant {
///         Instant::now()
///     }
/// }
///
/// impl Timer for Impatient {
///     fn sleep(&self, _duration: Duration) -> Sleep {
///         Box::pin(std::future::ready(()))
///     }
/// }
///
/// futures_lite::future::block_on(Impatient.sleep(Duration::from_secs(3600)));
/// ```
pub trait Timer: Clock {
    /// Completes once `duration` has passed on this timer's clock. A duration too long
    /// to represent never completes.
    fn sleep(&self, duration: Duration) -> Sleep;
}

/// Background work handed to a [`Runtime`]: nobody waits for its end.
pub type Task = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A timer that can also run work in the background: the whole of what a backend needs
/// from an async runtime (quinn's `Runtime` has the same shape).
///
/// Backends spawn the little they must finish even when the caller stops waiting (the
/// release of a claim whose run was dropped, an unsubscribe nobody awaits). A runtime
/// that has shut down may drop a task; that must be safe for the backend.
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use idemkit_core::{Runtime, ThreadTimer};
///
/// let (done, finished) = mpsc::channel();
/// ThreadTimer.spawn(Box::pin(async move { done.send("ran").unwrap() }));
/// assert_eq!(finished.recv_timeout(Duration::from_secs(30)), Ok("ran"));
/// ```
pub trait Runtime: Timer {
    /// Runs `task` to its end in the background.
    fn spawn(&self, task: Task);
}

impl<R: Runtime + ?Sized> Runtime for std::sync::Arc<R> {
    fn spawn(&self, task: Task) {
        (**self).spawn(task)
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> Instant {
        (**self).now()
    }
}

impl<T: Timer + ?Sized> Timer for std::sync::Arc<T> {
    fn sleep(&self, duration: Duration) -> Sleep {
        (**self).sleep(duration)
    }
}
