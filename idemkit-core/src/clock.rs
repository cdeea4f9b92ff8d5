//! Clocks: where a backend reads the time that drives leases and TTLs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::stamp::Stamp;

/// The time source behind a backend's leases and TTLs.
///
/// Swap in a [`ManualClock`] to expire leases and results in tests without sleeping.
/// Waits and timeouts do not use it: they run on real time (the runtime's timer), so a
/// wait always ends.
pub trait Clock: Send + Sync + 'static {
    /// The current instant. Must never go backwards.
    fn now(&self) -> Instant;
}

/// The system's monotonic clock, [`Instant::now`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to, for deterministic tests.
///
/// Clones share one time, so a test keeps a clone and advances the backend's clock:
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let shared = clock.clone();
/// let start = clock.now();
/// shared.advance(Duration::from_secs(90));
/// assert_eq!(clock.now() - start, Duration::from_secs(90));
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<Mutex<Instant>>,
}

impl ManualClock {
    /// A clock standing at the current instant.
    pub fn new() -> ManualClock {
        ManualClock::starting_at(Instant::now())
    }

    /// A clock standing at `start`.
    pub fn starting_at(start: Instant) -> ManualClock {
        ManualClock {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Moves the time forward by `by`, for every clone. Saturates instead of overflowing.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock();
        *now = now
            .checked_add(by)
            .unwrap_or_else(|| Stamp::from_instant(*now).saturating_add(by).to_instant());
    }
}

impl Default for ManualClock {
    fn default() -> ManualClock {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.now.lock()
    }
}
