//! Compact instants: the store keeps every deadline as 8 bytes instead of 16.
//!
//! A [`Stamp`] is a signed count of nanoseconds from a process-wide origin, the first
//! instant the crate ever converted. `i64` nanoseconds reach about 292 years either side
//! of it, so every instant a program meets is exact; further ones saturate. The origin is
//! not read from a clock: it is whatever `now` the caller handed in first.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

static ORIGIN: OnceLock<Instant> = OnceLock::new();

/// An instant as nanoseconds from the process-wide origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Stamp(i64);

impl Stamp {
    /// A deadline that never passes: what `now + Duration::MAX` saturates to.
    pub(crate) const NEVER: Stamp = Stamp(i64::MAX);
    /// Before every instant; marks "not set" where an `Option` would cost 8 more bytes.
    pub(crate) const UNSET: Stamp = Stamp(i64::MIN);

    pub(crate) fn from_instant(instant: Instant) -> Stamp {
        let origin = *ORIGIN.get_or_init(|| instant);
        match instant.checked_duration_since(origin) {
            Some(ahead) => Stamp(nanos(ahead)),
            None => Stamp(-nanos(origin - instant)),
        }
    }

    /// The instant this stamp stands for. `NEVER` maps to the farthest instant the
    /// platform can represent within the stamp range (about 292 years out).
    pub(crate) fn to_instant(self) -> Instant {
        let origin = *ORIGIN.get_or_init(Instant::now);
        let offset = Duration::from_nanos(self.0.unsigned_abs());
        let exact = if self.0 >= 0 {
            origin.checked_add(offset)
        } else {
            origin.checked_sub(offset)
        };
        exact.unwrap_or_else(|| farthest_from(origin, self.0 >= 0))
    }

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

/// The farthest instant from `origin` the platform accepts, in one direction. Only reached
/// for stamps beyond what `Instant` can hold on this platform.
fn farthest_from(origin: Instant, forward: bool) -> Instant {
    let mut step = Duration::from_nanos(i64::MAX as u64);
    while !step.is_zero() {
        let moved = if forward {
            origin.checked_add(step)
        } else {
            origin.checked_sub(step)
        };
        if let Some(instant) = moved {
            return instant;
        }
        step /= 2;
    }
    origin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_instants_either_side_of_the_origin() {
        let base = Instant::now();
        let origin = Stamp::from_instant(base).to_instant();
        for offset in [0, 1, 999, 1_000_000_007, 86_400_000_000_000] {
            let ahead = origin + Duration::from_nanos(offset);
            assert_eq!(Stamp::from_instant(ahead).to_instant(), ahead);
            if let Some(behind) = origin.checked_sub(Duration::from_nanos(offset)) {
                assert_eq!(Stamp::from_instant(behind).to_instant(), behind);
            }
        }
    }

    #[test]
    fn addition_saturates_at_never() {
        let now = Stamp::from_instant(Instant::now());
        assert_eq!(now.saturating_add(Duration::MAX), Stamp::NEVER);
        assert_eq!(
            Stamp::NEVER.saturating_add(Duration::from_secs(1)),
            Stamp::NEVER
        );
        assert!(
            Stamp::NEVER.to_instant() > Instant::now() + Duration::from_secs(100 * 365 * 86_400)
        );
    }

    #[test]
    fn until_is_zero_for_the_past() {
        let now = Stamp::from_instant(Instant::now());
        let later = now.saturating_add(Duration::from_millis(5));
        assert_eq!(now.until(later), Duration::from_millis(5));
        assert_eq!(later.until(now), Duration::ZERO);
    }
}
