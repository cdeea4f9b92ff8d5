//! Compact instants: the store keeps every deadline as 8 bytes instead of 16.
//!
//! A [`Stamp`] is a signed count of nanoseconds on one store's [`Timeline`], whose origin
//! is the first instant that store was given. `i64` nanoseconds reach about 292 years
//! either side of it, so every instant a program meets is exact; further ones are clamped
//! to the nearest representable stamp. Each store has a timeline of its own, so what one
//! store is given never changes how another reads time.

use std::time::{Duration, Instant};

/// An instant as nanoseconds from its store's origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Stamp(i64);

impl Stamp {
    /// A deadline that never passes: what `now + Duration::MAX` saturates to.
    pub(crate) const NEVER: Stamp = Stamp(i64::MAX);
    /// Before every instant; marks "not set" where an `Option` would cost 8 more bytes.
    pub(crate) const UNSET: Stamp = Stamp(i64::MIN);

    /// `self + duration`, saturating at [`Stamp::NEVER`]: it never panics.
    pub(crate) fn saturating_add(self, duration: Duration) -> Stamp {
        self.saturating_add_span(Span::from_duration(duration))
    }

    /// `self + span`, saturating at [`Stamp::NEVER`].
    pub(crate) fn saturating_add_span(self, span: Span) -> Stamp {
        Stamp(self.0.saturating_add(span.0))
    }

    /// The smallest stamp after this one.
    pub(crate) fn next(self) -> Stamp {
        Stamp(self.0.saturating_add(1))
    }

    /// A stamp from its raw nanoseconds, for tests of the structures that hold stamps.
    #[cfg(test)]
    pub(crate) const fn from_nanos(nanos: i64) -> Stamp {
        Stamp(nanos)
    }

    /// The raw nanoseconds, for tests.
    #[cfg(test)]
    pub(crate) const fn nanos(self) -> i64 {
        self.0
    }

    /// How long from `self` until `later`, zero if `later` is not after `self`.
    pub(crate) fn until(self, later: Stamp) -> Duration {
        Duration::from_nanos(u64::try_from(later.0.saturating_sub(self.0)).unwrap_or(0))
    }
}

/// How one store converts between instants and stamps: nanoseconds from `origin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timeline {
    origin: Instant,
}

impl Timeline {
    pub(crate) fn starting_at(origin: Instant) -> Timeline {
        Timeline { origin }
    }

    /// The stamp of `instant`, clamped to the stamps' range (about 292 years either side
    /// of the origin; `NEVER` and `UNSET` at the ends).
    pub(crate) fn stamp(self, instant: Instant) -> Stamp {
        match instant.checked_duration_since(self.origin) {
            Some(ahead) => Stamp(nanos(ahead)),
            None => Stamp(
                nanos(self.origin - instant)
                    .checked_neg()
                    .unwrap_or(i64::MIN),
            ),
        }
    }

    /// The instant `stamp` stands for. Stamps beyond what `Instant` holds on this platform
    /// map to the farthest instant it does hold in that direction.
    pub(crate) fn instant(self, stamp: Stamp) -> Instant {
        let offset = Duration::from_nanos(stamp.0.unsigned_abs());
        let forward = stamp.0 >= 0;
        let exact = if forward {
            self.origin.checked_add(offset)
        } else {
            self.origin.checked_sub(offset)
        };
        exact.unwrap_or_else(|| farthest_from(self.origin, forward))
    }
}

/// A duration in the stamps' unit, saturated to their range: for a duration added over
/// and over (the reclaim grace), converted once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span(i64);

impl Span {
    pub(crate) fn from_duration(duration: Duration) -> Span {
        Span(nanos(duration))
    }
}

fn nanos(duration: Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

/// The farthest instant from `origin`, in one direction, that the platform holds and
/// that lies within the stamps' range of it.
pub(crate) fn farthest_from(origin: Instant, forward: bool) -> Instant {
    let limit = Duration::from_nanos(i64::MAX as u64);
    let (mut reached, mut moved) = (origin, Duration::ZERO);
    let mut step = limit;
    // Take each step that stays in range and lands on an instant, halving the step
    // otherwise: a binary search for the edge.
    while !step.is_zero() {
        let next = if forward {
            reached.checked_add(step)
        } else {
            reached.checked_sub(step)
        };
        match next {
            Some(instant) if moved + step <= limit => {
                reached = instant;
                moved += step;
            }
            _ => step /= 2,
        }
    }
    reached
}

#[cfg(test)]
mod tests {
    use super::*;

    const YEAR: Duration = Duration::from_secs(365 * 86_400);

    #[test]
    fn round_trips_instants_either_side_of_the_origin() {
        let origin = Instant::now();
        let timeline = Timeline::starting_at(origin);
        for offset in [0, 1, 999, 1_000_000_007, 86_400_000_000_000] {
            let ahead = origin + Duration::from_nanos(offset);
            assert_eq!(timeline.instant(timeline.stamp(ahead)), ahead);
            if let Some(behind) = origin.checked_sub(Duration::from_nanos(offset)) {
                assert_eq!(timeline.instant(timeline.stamp(behind)), behind);
            }
        }
    }

    #[test]
    fn instants_beyond_the_range_clamp_to_its_ends() {
        let origin = Instant::now();
        let timeline = Timeline::starting_at(origin);
        let far = origin + 300 * YEAR;
        assert_eq!(timeline.stamp(far), Stamp::NEVER);
        assert!(timeline.stamp(origin + 291 * YEAR) < Stamp::NEVER);
        if let Some(long_ago) = origin.checked_sub(300 * YEAR) {
            assert_eq!(timeline.stamp(long_ago), Stamp::UNSET.next());
        }
    }

    #[test]
    fn addition_saturates_at_never() {
        let timeline = Timeline::starting_at(Instant::now());
        let now = timeline.stamp(Instant::now());
        assert_eq!(now.saturating_add(Duration::MAX), Stamp::NEVER);
        assert_eq!(
            Stamp::NEVER.saturating_add(Duration::from_secs(1)),
            Stamp::NEVER
        );
        assert!(timeline.instant(Stamp::NEVER) > Instant::now() + 100 * YEAR);
    }

    #[test]
    fn until_is_zero_for_the_past() {
        let now = Stamp::from_nanos(1_000);
        let later = now.saturating_add(Duration::from_millis(5));
        assert_eq!(now.until(later), Duration::from_millis(5));
        assert_eq!(later.until(now), Duration::ZERO);
    }
}
