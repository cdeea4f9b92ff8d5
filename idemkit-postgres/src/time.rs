//! The database's clock on this side: its instants (microseconds since the Unix epoch,
//! read with `clock_timestamp()`) mapped onto this machine's monotonic clock.

use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// The longest duration sent to the server, in microseconds: about 200 years. Longer
/// ones (`Duration::MAX` among them) are shortened to it, as PostgreSQL's timestamps end
/// in the year 294276 and an interval must fit beside `now`.
pub(crate) const LONGEST_MICROS: i64 = 200 * 365 * 24 * 3600 * 1_000_000;

/// `duration` in microseconds for the server, rounded up (a lease of 1 ns is 1 µs, not
/// nothing) and capped at [`LONGEST_MICROS`].
pub(crate) fn micros(duration: Duration) -> i64 {
    let whole = duration.as_micros();
    let rounded = if duration.subsec_nanos().is_multiple_of(1_000) {
        whole
    } else {
        whole + 1
    };
    i64::try_from(rounded)
        .unwrap_or(i64::MAX)
        .min(LONGEST_MICROS)
}

/// How far a reply's server time may stand outside its round trip before the mapping is
/// anchored again (the server's clock was stepped, or the clocks drifted apart).
const TOLERANCE: Duration = Duration::from_millis(100);

/// The database's clock mapped onto this machine's monotonic clock through one anchor (a
/// server instant and the local instant taken to be the same moment), kept while replies
/// agree with it, so a stored instant reads as the same [`Instant`] every time.
#[derive(Debug, Default)]
pub(crate) struct ServerClock {
    anchor: Mutex<Option<(i64, Instant)>>,
}

impl ServerClock {
    /// The server's `now` of a statement sent at `sent` and answered at `seen`.
    pub(crate) fn observe(&self, server_micros: i64, sent: Instant, seen: Instant) -> ServerNow {
        let mut anchor = self.anchor.lock();
        let fits = anchor.is_some_and(|(server, local)| {
            let mapped = map(server, local, server_micros);
            mapped + TOLERANCE >= sent && mapped <= seen + TOLERANCE
        });
        if !fits {
            // The midpoint of the round trip: off by at most half of it.
            *anchor = Some((server_micros, sent + (seen - sent) / 2));
        }
        let (server, local) = anchor.expect("set above");
        ServerNow {
            server_micros,
            anchor_server: server,
            anchor_local: local,
        }
    }
}

/// The local instant of server instant `at`, through the anchor (`server`, `local`).
fn map(server: i64, local: Instant, at: i64) -> Instant {
    let delta = at.saturating_sub(server);
    let magnitude = Duration::from_micros(delta.unsigned_abs())
        .min(Duration::from_micros(LONGEST_MICROS as u64 * 2));
    if delta >= 0 {
        local.checked_add(magnitude).unwrap_or(local)
    } else {
        // Before this machine's monotonic clock began: clamped to the earliest we can.
        local
            .checked_sub(magnitude)
            .unwrap_or_else(|| earliest(local))
    }
}

/// The earliest instant before `local` that this platform represents, roughly.
fn earliest(local: Instant) -> Instant {
    let mut back = Duration::from_secs(10 * 365 * 24 * 3600);
    while back > Duration::from_secs(1) {
        if let Some(at) = local.checked_sub(back) {
            return at;
        }
        back /= 4;
    }
    local
}

/// The server's `now` as read by one statement, with the clock's anchor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ServerNow {
    server_micros: i64,
    anchor_server: i64,
    anchor_local: Instant,
}

impl ServerNow {
    /// The server's microseconds.
    pub(crate) fn micros(&self) -> i64 {
        self.server_micros
    }

    /// The local instant of the server's instant `at`.
    pub(crate) fn local(&self, at: i64) -> Instant {
        map(self.anchor_server, self.anchor_local, at)
    }

    /// How long from this `now` until the server's instant `at` (zero if past).
    pub(crate) fn until(&self, at: i64) -> Duration {
        Duration::from_micros(u64::try_from(at.saturating_sub(self.server_micros)).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_up_to_micros_and_cap() {
        assert_eq!(micros(Duration::from_nanos(1)), 1);
        assert_eq!(micros(Duration::from_micros(7)), 7);
        assert_eq!(micros(Duration::from_secs(1)), 1_000_000);
        assert_eq!(micros(Duration::MAX), LONGEST_MICROS);
    }

    #[test]
    fn server_instants_map_through_a_stable_anchor() {
        let clock = ServerClock::default();
        let sent = Instant::now() + Duration::from_secs(10);
        let seen = sent + Duration::from_millis(2);
        let now = clock.observe(5_000_000, sent, seen);
        let middle = sent + Duration::from_millis(1);
        assert_eq!(now.local(6_000_000), middle + Duration::from_secs(1));
        assert_eq!(now.local(4_000_000), middle - Duration::from_secs(1));
        assert_eq!(now.until(7_000_000), Duration::from_secs(2));
        assert_eq!(now.until(1), Duration::ZERO);
        // A later reply that agrees keeps the anchor: the same instant reads the same.
        let later = clock.observe(
            5_500_000,
            sent + Duration::from_millis(499),
            seen + Duration::from_millis(500),
        );
        assert_eq!(later.local(6_000_000), now.local(6_000_000));
        // A stepped server clock re-anchors.
        let stepped = clock.observe(99_000_000, seen, seen + Duration::from_millis(2));
        assert_eq!(stepped.local(99_000_000), seen + Duration::from_millis(1));
        // Far in the past: clamped, never a panic.
        assert!(now.local(i64::MIN) <= seen);
    }
}
