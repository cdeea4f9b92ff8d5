//! [`PollSchedule`]: how long a waiter for a claim in flight parks between re-reads.

use std::time::Duration;

/// How long a waiter for a claim in flight parks before it reads the record again, when
/// no wake-up comes first.
///
/// A backend's wake-up on completion is the fast path of `wait_for_completion`; a re-read
/// on this schedule is the floor under it (a wake-up can be lost, or never sent, as when
/// the owner crashes). Parks start at [`FIRST`](PollSchedule::FIRST) and double up to
/// [`CAP`](PollSchedule::CAP), and never end later than
/// [`LAPSE_MARGIN`](PollSchedule::LAPSE_MARGIN) past the end of the lease being waited
/// on, so a waiter sees a lapsed lease (`lease_until < now`) promptly. The in-memory
/// backend, the Redis backend and the conformance suite's own example backend all wait
/// on it.
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::PollSchedule;
///
/// let mut polls = PollSchedule::new();
/// let lease_left = Duration::from_secs(30);
/// assert_eq!(polls.next_park(lease_left), Duration::from_millis(50));
/// assert_eq!(polls.next_park(lease_left), Duration::from_millis(100));
/// // A lease that ends in 10 ms: the next re-read comes just after it.
/// assert_eq!(polls.next_park(Duration::from_millis(10)), Duration::from_millis(11));
/// ```
#[derive(Clone, Debug)]
pub struct PollSchedule {
    next: Duration,
}

impl PollSchedule {
    /// The first park.
    pub const FIRST: Duration = Duration::from_millis(50);
    /// The longest park: the schedule doubles up to it.
    pub const CAP: Duration = Duration::from_secs(1);
    /// How long past a lease's end a waiter re-reads, to see it lapsed (a lease lapses
    /// only once `now` is strictly past its end).
    pub const LAPSE_MARGIN: Duration = Duration::from_millis(1);

    /// A schedule at its start.
    pub fn new() -> PollSchedule {
        PollSchedule {
            next: PollSchedule::FIRST,
        }
    }

    /// How long to park before the next re-read of a claim whose lease ends `lease_left`
    /// from now: the schedule's next interval (each call doubles the one after, to the
    /// cap), or just past the lease's end if that comes first. A caller with a timeout
    /// parks no longer than what is left of it.
    pub fn next_park(&mut self, lease_left: Duration) -> Duration {
        let interval = self.next;
        self.next = (interval * 2).min(PollSchedule::CAP);
        interval.min(lease_left.saturating_add(PollSchedule::LAPSE_MARGIN))
    }
}

impl Default for PollSchedule {
    fn default() -> PollSchedule {
        PollSchedule::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG_LEASE: Duration = Duration::from_secs(3600);

    #[test]
    fn parks_back_off_from_50ms_to_a_1s_cap() {
        let mut polls = PollSchedule::new();
        let seen: Vec<u64> = (0..8)
            .map(|_| polls.next_park(LONG_LEASE).as_millis() as u64)
            .collect();
        assert_eq!(seen, [50, 100, 200, 400, 800, 1000, 1000, 1000]);
    }

    #[test]
    fn a_park_ends_just_past_the_lease_and_the_schedule_still_advances() {
        let mut polls = PollSchedule::new();
        assert_eq!(
            polls.next_park(Duration::from_millis(20)),
            Duration::from_millis(21)
        );
        assert_eq!(polls.next_park(Duration::ZERO), Duration::from_millis(1));
        assert_eq!(polls.next_park(LONG_LEASE), Duration::from_millis(200));
        assert_eq!(polls.next_park(Duration::MAX), Duration::from_millis(400));
    }
}
