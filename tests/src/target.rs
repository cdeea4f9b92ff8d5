//! [`Target`]: a backend under test, with its executor, the runtime that drives both,
//! and a way to build it with the settings and clock a vector asks for.

use std::future::Future;
use std::time::Duration;

use idemkit_core::{Builder, Clock, Flavor, Store};

use crate::backend::ConformanceBackend;
use crate::executor::ConformanceExecutor;
use crate::runtime::Runtime;

/// How a vector wants its backend configured (the clock is passed separately, since it
/// changes the backend's type).
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The most records held at once.
    pub max_size: usize,
    /// How long a lapsed claim is kept so the next claim reports `Reclaimed`.
    pub reclaim_grace: Duration,
}

impl Default for Settings {
    /// The backends' own defaults.
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

    /// A backend of flavour `F` (the blocking one, or an async adapter's) with these
    /// settings and `clock`, built through the public builder.
    pub fn build<F: Flavor, C: Clock>(self, clock: C) -> F::Backend<C> {
        Builder::<C, F>::with_clock(clock)
            .max_size(self.max_size)
            .reclaim_grace(self.reclaim_grace)
            .build()
    }
}

/// A backend family the suite runs against, with its executor. Every vector, backend
/// or executor, is generic over it.
pub trait Target: 'static {
    /// What drives this target's vectors.
    type Runtime: Runtime;
    /// The clock a backend built without an explicit clock uses (real time).
    type DefaultClock: Clock + Default;
    /// The backend, with leases and TTLs on clock `C`.
    type Backend<C: Clock>: ConformanceBackend;
    /// The run-once executor over that backend.
    type Executor<C: Clock>: ConformanceExecutor<Backend = Self::Backend<C>>;

    /// A fresh backend (its own store) with `settings` and `clock`, built through the
    /// backend's public builder.
    fn build<C: Clock>(settings: Settings, clock: C) -> Self::Backend<C>;
}

/// A target whose backend is async: its waits are futures that can be dropped mid-wait,
/// and it has a purger to spawn.
pub trait AsyncTarget: Target {
    /// The backend's `run_purger` (never returns).
    fn run_purger<C: Clock>(backend: &Self::Backend<C>) -> impl Future<Output = ()> + Send;
}
