//! The file's clock: instants kept in the file as nanoseconds since the Unix epoch, read
//! from this machine's wall clock, and mapped onto the monotonic [`Instant`]s a
//! [`Record`](idemkit_core::Record) carries.
//!
//! Every process that shares a file reads the same wall clock, so they agree on when a
//! lease lapses. A step of the machine's clock (not a slew) lengthens or shortens every
//! lease and result by the step; that is the price of a clock several processes share.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use idemkit_core::Clock;

/// An instant in the file: nanoseconds since the Unix epoch. `i64::MAX` is "never".
pub(crate) type FileTime = i64;

/// The farthest instant: a lease or a result that never ends.
pub(crate) const NEVER: FileTime = i64::MAX;

/// `duration` in nanoseconds, saturated to what a [`FileTime`] holds.
pub(crate) fn nanos(duration: Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

/// `at + duration`, saturating at [`NEVER`].
pub(crate) fn after(at: FileTime, duration: Duration) -> FileTime {
    at.saturating_add(nanos(duration))
}

/// Where the backend's time comes from, and how its file times map onto [`Instant`]s.
///
/// The mapping is fixed when the backend is built (the wall clock and the monotonic
/// clock read together), so the same file time always maps to the same instant: two
/// reads of one record agree exactly.
#[derive(Clone)]
pub(crate) struct FileClock {
    source: Source,
    anchor: Anchor,
}

#[derive(Clone)]
enum Source {
    /// This machine's wall clock, the one every process sharing the file reads.
    System,
    /// A test's clock: file times are the anchor's plus how far it has moved, exactly.
    Manual(Arc<dyn Clock>),
}

/// One moment as an instant and as a file time.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    instant: Instant,
    file: FileTime,
}

/// One reading of the clock, the present as a file time, with the mapping to instants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reading {
    pub(crate) file: FileTime,
    anchor: Anchor,
}

impl FileClock {
    /// The machine's wall clock.
    pub(crate) fn system() -> FileClock {
        FileClock {
            source: Source::System,
            anchor: Anchor {
                instant: Instant::now(),
                file: wall_now(),
            },
        }
    }

    /// A clock that follows `clock`, starting at the wall clock's present.
    pub(crate) fn following(clock: Arc<dyn Clock>) -> FileClock {
        let anchor = Anchor {
            instant: clock.now(),
            file: wall_now(),
        };
        FileClock {
            source: Source::Manual(clock),
            anchor,
        }
    }

    /// The present.
    pub(crate) fn read(&self) -> Reading {
        let file = match &self.source {
            Source::System => wall_now(),
            Source::Manual(clock) => {
                let instant = clock.now();
                let anchor = self.anchor;
                if instant >= anchor.instant {
                    anchor.file.saturating_add(nanos(instant - anchor.instant))
                } else {
                    anchor.file.saturating_sub(nanos(anchor.instant - instant))
                }
            }
        };
        Reading {
            file,
            anchor: self.anchor,
        }
    }

    /// The instant the backend judges leases by.
    pub(crate) fn now(&self) -> Instant {
        match &self.source {
            Source::System => Instant::now(),
            Source::Manual(clock) => clock.now(),
        }
    }
}

impl Reading {
    /// The file time `at` as an instant: as far from the anchor's instant as `at` is from
    /// its file time. A time beyond what an `Instant` holds is clamped to a century from
    /// the anchor.
    pub(crate) fn instant(&self, at: FileTime) -> Instant {
        const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
        let anchor = self.anchor;
        let apart = Duration::from_nanos(at.abs_diff(anchor.file));
        if at >= anchor.file {
            anchor
                .instant
                .checked_add(apart)
                .or_else(|| anchor.instant.checked_add(CENTURY))
                .unwrap_or(anchor.instant)
        } else {
            anchor.instant.checked_sub(apart).unwrap_or(anchor.instant)
        }
    }
}

/// The wall clock in nanoseconds since the Unix epoch (negative before it).
fn wall_now() -> FileTime {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(since) => nanos(since),
        Err(before) => -nanos(before.duration()),
    }
}

#[cfg(test)]
mod tests {
    use idemkit_core::{Clock as _, ManualClock};

    use super::*;

    #[test]
    fn a_manual_clock_maps_file_times_to_its_instants_exactly() {
        let manual = ManualClock::new();
        let clock = FileClock::following(Arc::new(manual.clone()));
        let first = clock.read();
        manual.advance(Duration::from_nanos(1_234_567_891));
        let second = clock.read();
        assert_eq!(second.file - first.file, 1_234_567_891);
        assert_eq!(second.instant(second.file), manual.now());
        assert_eq!(first.instant(second.file), second.instant(second.file));
    }

    #[test]
    fn durations_saturate_at_never() {
        assert_eq!(after(5, Duration::MAX), NEVER);
        assert_eq!(after(NEVER, Duration::from_secs(1)), NEVER);
        assert_eq!(after(5, Duration::from_nanos(7)), 12);
        let reading = FileClock::system().read();
        assert!(reading.instant(NEVER) > reading.instant(reading.file));
    }
}
