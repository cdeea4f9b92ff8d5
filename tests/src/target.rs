//! [`Target`]: a backend under test, driven through one of its traits, with its
//! executor and the runtime that drives both; and the capabilities a target declares.

use std::future::Future;
use std::time::Duration;

use idemkit_core::{ManualClock, Store};

use crate::backend::ConformanceBackend;
use crate::executor::ConformanceExecutor;
use crate::runtime::Runtime;

/// How a vector wants its backend configured.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The most records held at once (used by [`ExactCapacity`] targets).
    pub max_size: usize,
    /// How long a lapsed claim is kept so the next claim reports `Reclaimed`.
    pub reclaim_grace: Duration,
}

impl Default for Settings {
    /// The in-memory backend's defaults.
    fn default() -> Settings {
        Settings {
            max_size: Store::DEFAULT_MAX_SIZE,
            reclaim_grace: Store::DEFAULT_RECLAIM_GRACE,
        }
    }
}

impl Settings {
    /// These settings with capacity `max_size`.
    #[must_use]
    pub fn max_size(self, max_size: usize) -> Settings {
        Settings { max_size, ..self }
    }

    /// These settings with reclaim grace `reclaim_grace`.
    #[must_use]
    pub fn reclaim_grace(self, reclaim_grace: Duration) -> Settings {
        Settings {
            reclaim_grace,
            ..self
        }
    }
}

/// A backend the suite runs against, through one of its traits, with its executor.
/// Every vector is generic over it; what more it can do, it declares by implementing
/// [`ManualTime`], [`ExactCapacity`] or [`Purging`].
pub trait Target: 'static {
    /// What drives this target's vectors: OS threads for a backend driven through its
    /// blocking trait, an async runtime for one driven through its async trait.
    type Runtime: Runtime;
    /// The backend, as the suite drives it.
    type Backend: ConformanceBackend;
    /// The run-once executor over that backend.
    type Executor: ConformanceExecutor<Backend = Self::Backend>;

    /// A fresh backend (a store of its own) with `settings`, on real time.
    fn build(settings: Settings) -> Self::Backend;

    /// A fresh backend with `settings` whose own timers never fire (as on a
    /// [`FrozenTimer`](crate::FrozenTimer)): no re-read on a schedule, no wait time-out;
    /// leases and TTLs still on real time. The vectors that check a wake-up run on it, so
    /// that only a notification can end their waits. `None` (the default) when the
    /// backend's timers cannot be replaced: those vectors then let their waiters settle
    /// until their next re-read is far off, a weaker check.
    fn build_frozen(settings: Settings) -> Option<Self::Backend> {
        let _ = settings;
        None
    }

    /// The per-vector teardown hook: called once for every backend the vector built,
    /// after the vector returned (`passed`) or failed, on the thread that ran it. The
    /// vector's other handles on the backend may still be alive (a background task
    /// finishing), so a teardown checks what the vector left and releases what the
    /// target set up for it (a scratch file, a table, a namespace); a panic here fails a
    /// vector that passed. By default it does nothing.
    fn after_vector(backend: &Self::Backend, passed: bool) {
        let _ = (backend, passed);
    }
}

/// A target whose backend can run on a [`ManualClock`]: leases and TTLs lapse when a
/// vector moves the clock, not when real time passes.
pub trait ManualTime: Target {
    /// A fresh backend with `settings` whose leases and TTLs run on `clock`.
    fn build_on(settings: Settings, clock: ManualClock) -> Self::Backend;

    /// [`ManualTime::build_on`], with timers that never fire, as
    /// [`Target::build_frozen`]; `None` (the default) when they cannot be replaced.
    fn build_frozen_on(settings: Settings, clock: ManualClock) -> Option<Self::Backend> {
        let _ = (settings, clock);
        None
    }
}

/// A target whose backend holds at most [`Settings::max_size`] records, exactly, and
/// refuses new keys beyond that with `Error::Full`.
pub trait ExactCapacity: Target {}

/// A target whose backend has a purger to spawn (the in-memory backend's `run_purger`).
pub trait Purging: Target {
    /// The backend's purger (never returns).
    fn run_purger(backend: &Self::Backend) -> impl Future<Output = ()> + Send;
}
