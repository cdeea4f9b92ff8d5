//! [`SystemClock`] and [`ManualClock`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::rt::Clock;

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

    /// Moves the time forward by `by`, for every clone. Saturates at the farthest instant
    /// the platform holds instead of overflowing.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock();
        let mut step = by;
        // Take each step that lands on an instant, halving it otherwise: `by` whole when
        // it fits, else as close to the platform's last instant as can be reached.
        while !step.is_zero() {
            match now.checked_add(step) {
                Some(later) => *now = later,
                None => step /= 2,
            }
            if step == by {
                break;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_by_an_unrepresentable_duration_saturates_instead_of_panicking() {
        let clock = ManualClock::new();
        let start = clock.now();
        clock.advance(Duration::MAX);
        let far = clock.now();
        assert!(far > start + Duration::from_secs(100 * 365 * 86_400));
        clock.advance(Duration::MAX);
        assert!(clock.now() >= far, "time never goes backwards");
        clock.advance(Duration::from_secs(1));
        assert!(clock.now() >= far);
    }
}
