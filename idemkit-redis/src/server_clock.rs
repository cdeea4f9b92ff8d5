//! The server's clock as this client sees it.
//!
//! Leases and expiry are judged by the server alone, by `TIME` inside each script, in
//! microseconds. Every script reply carries the server's `now`. The client maps server
//! instants onto its own monotonic clock through one anchor, a pair (server instant,
//! local instant) taken from the first reply, at the midpoint of its round trip. The
//! mapping stays fixed, so the same stored instant always reads as the same
//! [`Instant`], until a reply shows it off by more than [`TOLERANCE`] beyond the
//! round trip (the server's clock was stepped, or the two clocks drifted apart): then
//! the anchor is taken again from that reply.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The longest duration the backend stores: every key it writes must expire, so a
/// longer lease, grace or time to live is shortened to this (about 50 years).
pub(crate) const LONGEST: Duration = Duration::from_secs(50 * 365 * 24 * 60 * 60);

/// How far a reply's server time may stand outside its round trip before the anchor is
/// taken again.
pub(crate) const TOLERANCE: Duration = Duration::from_millis(100);

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

/// A server instant and the local instant taken to be the same moment.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    server: u64,
    local: Instant,
}

impl Anchor {
    fn instant(&self, micros: u64) -> Instant {
        if micros <= self.server {
            // Before this machine's monotonic clock began (before it booted): clamped.
            self.local
                .checked_sub(Duration::from_micros(self.server - micros))
                .unwrap_or(self.local)
        } else {
            let ahead = Duration::from_micros(micros - self.server).min(LONGEST * 2);
            self.local.checked_add(ahead).unwrap_or(self.local)
        }
    }
}

/// The mapping of one backend (shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct ServerClock {
    anchor: Mutex<Option<Anchor>>,
}

impl ServerClock {
    /// The mapping for a reply that carried the server's `now`, sent at `sent` and
    /// received at `seen`.
    pub(crate) fn observe(&self, now: u64, sent: Instant, seen: Instant) -> ServerNow {
        let mut anchor = self.anchor.lock();
        let agrees = |anchor: &Anchor| {
            let mapped = anchor.instant(now);
            mapped + TOLERANCE >= sent && mapped <= seen + TOLERANCE
        };
        let current = match *anchor {
            Some(current) if agrees(&current) => current,
            previous => {
                let fresh = Anchor {
                    server: now,
                    local: sent + (seen - sent) / 2,
                };
                if previous.is_some() {
                    tracing::warn!(
                        target: "idemkit_redis",
                        "the Redis server's clock moved against this machine's by more than \
                         {TOLERANCE:?}; records' instants are mapped afresh",
                    );
                }
                *anchor = Some(fresh);
                fresh
            }
        };
        ServerNow {
            micros: now,
            anchor: current,
        }
    }

    /// The server's time at the local instant `local` by the mapping the last replies
    /// agreed on, for a reply that carried no time; `None` before any reply did.
    pub(crate) fn estimate(&self, local: Instant) -> Option<ServerNow> {
        let anchor = (*self.anchor.lock())?;
        let micros = match local.checked_duration_since(anchor.local) {
            Some(ahead) => anchor.server.saturating_add(ahead.as_micros() as u64),
            None => anchor
                .server
                .saturating_sub((anchor.local - local).as_micros() as u64),
        };
        Some(ServerNow { micros, anchor })
    }
}

/// The server's `now` from one reply, with the mapping to read its instants by.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ServerNow {
    micros: u64,
    anchor: Anchor,
}

impl ServerNow {
    /// The server's `now`, in microseconds of its clock.
    pub(crate) fn micros(&self) -> u64 {
        self.micros
    }

    /// The local instant of the server's instant `micros`.
    pub(crate) fn instant(&self, micros: u64) -> Instant {
        self.anchor.instant(micros)
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
    fn the_first_reply_anchors_the_mapping_at_its_midpoint() {
        let clock = ServerClock::default();
        let sent = Instant::now();
        let seen = sent + Duration::from_millis(2);
        let now = clock.observe(10_000_000, sent, seen);
        let midpoint = sent + Duration::from_millis(1);
        assert_eq!(now.instant(10_000_000), midpoint);
        assert_eq!(
            now.instant(12_500_000),
            midpoint + Duration::from_millis(2_500)
        );
        assert_eq!(now.until(12_000_000), Duration::from_secs(2));
        assert_eq!(now.until(9_000_000), Duration::ZERO);
    }

    #[test]
    fn a_reply_without_a_time_is_read_by_the_last_mapping() {
        let clock = ServerClock::default();
        let start = Instant::now() + Duration::from_secs(10);
        assert!(
            clock.estimate(start).is_none(),
            "no reply has anchored it yet"
        );
        let anchored = clock.observe(50_000_000, start, start);
        let later = clock
            .estimate(start + Duration::from_millis(1_500))
            .unwrap();
        assert_eq!(later.micros(), 51_500_000);
        assert_eq!(later.instant(70_000_000), anchored.instant(70_000_000));
        let earlier = clock.estimate(start - Duration::from_millis(20)).unwrap();
        assert_eq!(earlier.micros(), 49_980_000);
    }

    #[test]
    fn the_mapping_holds_while_replies_agree_and_moves_when_they_do_not() {
        let clock = ServerClock::default();
        let start = Instant::now() + Duration::from_secs(10);
        let first = clock.observe(50_000_000, start, start);
        // A second later on both clocks, with a slower round trip: the same mapping, so
        // a stored instant reads the same.
        let later = start + Duration::from_secs(1);
        let second = clock.observe(51_000_000, later, later + Duration::from_millis(40));
        assert_eq!(first.instant(70_000_000), second.instant(70_000_000));
        // The server's clock jumps five seconds ahead: the mapping follows it.
        let after = later + Duration::from_secs(1);
        let jumped = clock.observe(57_000_000, after, after);
        assert_eq!(jumped.instant(57_000_000), after);
        assert_ne!(jumped.instant(70_000_000), first.instant(70_000_000));
    }
}
