//! The server's clock as this client sees it.
//!
//! Leases and expiry are judged by the server alone, by `TIME` inside each script, in
//! microseconds. Every script reply carries the server's `now`; the client maps the
//! server's instants to its own [`Instant`]s relative to the moment that reply arrived,
//! so a record's `lease_until` read here is off from the server's by at most one round
//! trip, whatever the two machines' wall clocks say.

use std::time::{Duration, Instant};

/// The longest duration the backend stores: every key it writes must expire, so a
/// longer lease, grace or time to live is shortened to this (about 50 years).
pub(crate) const LONGEST: Duration = Duration::from_secs(50 * 365 * 24 * 60 * 60);

/// `duration` in whole microseconds, rounded up (a lease is never shortened by the
/// conversion), at most [`LONGEST`].
pub(crate) fn micros(duration: Duration) -> u64 {
    let duration = duration.min(LONGEST);
    let whole = duration.as_micros() as u64;
    if duration.subsec_nanos().is_multiple_of(1_000) {
        whole
    } else {
        whole + 1
    }
}

/// The server's `now` from one reply, and the local instant the reply arrived.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ServerNow {
    micros: u64,
    seen: Instant,
}

impl ServerNow {
    pub(crate) fn new(micros: u64, seen: Instant) -> ServerNow {
        ServerNow { micros, seen }
    }

    /// The server's `now`, in microseconds of its clock.
    pub(crate) fn micros(&self) -> u64 {
        self.micros
    }

    /// The local instant of the server's instant `micros`. An instant too far in the past
    /// for this machine's monotonic clock (before it booted) is clamped to the reply's.
    pub(crate) fn instant(&self, micros: u64) -> Instant {
        if micros <= self.micros {
            self.seen
                .checked_sub(Duration::from_micros(self.micros - micros))
                .unwrap_or(self.seen)
        } else {
            let ahead = Duration::from_micros(micros - self.micros).min(LONGEST * 2);
            self.seen.checked_add(ahead).unwrap_or(self.seen)
        }
    }

    /// How long from the server's `now` until its instant `micros` (zero if past).
    pub(crate) fn until(&self, micros: u64) -> Duration {
        Duration::from_micros(micros.saturating_sub(self.micros))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_up_to_microseconds_and_are_capped() {
        assert_eq!(micros(Duration::ZERO), 0);
        assert_eq!(micros(Duration::from_nanos(1)), 1);
        assert_eq!(micros(Duration::from_nanos(1_000)), 1);
        assert_eq!(micros(Duration::from_nanos(1_001)), 2);
        assert_eq!(micros(Duration::from_secs(30)), 30_000_000);
        assert_eq!(micros(Duration::MAX), micros(LONGEST));
        // Two of the longest after a server clock of this century stay exact in Lua.
        assert!(1_800_000_000_000_000 + 2 * micros(LONGEST) < 1 << 53);
    }

    #[test]
    fn server_instants_map_around_the_reply() {
        let seen = Instant::now();
        let now = ServerNow::new(10_000_000, seen);
        assert_eq!(now.instant(10_000_000), seen);
        assert_eq!(now.instant(12_500_000), seen + Duration::from_millis(2_500));
        assert_eq!(now.instant(9_000_000), seen - Duration::from_secs(1));
        assert_eq!(now.until(12_000_000), Duration::from_secs(2));
        assert_eq!(now.until(9_000_000), Duration::ZERO);
    }
}
