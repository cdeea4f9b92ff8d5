//! Deadlines of waits: when one that starts now ends, and how long it has left. Kept
//! apart from every clock, so that the executors' run loop and the in-memory backend's
//! waits compute them alike, on whatever instants their clocks give.

use std::time::{Duration, Instant};

/// The deadline of a wait that starts at `start` and lasts `timeout`; `None` when the
/// timeout is too long to represent (it never ends first).
pub(crate) fn deadline_after(start: Instant, timeout: Duration) -> Option<Instant> {
    start.checked_add(timeout)
}

/// How long is left until `deadline` (forever for `None`).
pub(crate) fn remaining(deadline: Option<Instant>, now: Instant) -> Duration {
    deadline.map_or(Duration::MAX, |deadline| {
        deadline.saturating_duration_since(now)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unrepresentable_timeout_never_ends() {
        let now = Instant::now();
        assert_eq!(deadline_after(now, Duration::MAX), None);
        assert_eq!(remaining(None, now), Duration::MAX);
        let soon = deadline_after(now, Duration::from_millis(5));
        assert_eq!(remaining(soon, now), Duration::from_millis(5));
        assert_eq!(
            remaining(soon, now + Duration::from_secs(1)),
            Duration::ZERO
        );
    }
}
