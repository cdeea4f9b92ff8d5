//! [`FrozenTimer`]: a timer whose sleeps never end, so that only a notification can end a
//! wait.

use std::time::{Duration, Instant};

use idemkit_core::{Clock, Sleep, Timer};

/// A timer whose sleeps never end, on real time ([`Instant::now`]).
///
/// A backend built on it never re-reads on its own schedule and never times a wait out:
/// a waiter returns only when a completion, a release or a reclaim wakes it, or when its
/// read finds the answer. The wake vectors run on it where a target can build one
/// ([`Target::build_frozen`](crate::Target::build_frozen)), so that a passing vector
/// proves the notification, not a lucky re-read; their own time limit is the runtime's,
/// so a missing notification fails the vector instead of hanging it.
///
/// ```
/// use std::time::Duration;
/// use idemkit_conformance::FrozenTimer;
/// use idemkit_core::{ThreadTimer, Timer};
///
/// let frozen = async {
///     FrozenTimer.sleep(Duration::ZERO).await;
///     "slept"
/// };
/// let later = async {
///     ThreadTimer.sleep(Duration::from_millis(200)).await;
///     "still frozen"
/// };
/// let first = futures_lite::future::block_on(futures_lite::future::or(frozen, later));
/// assert_eq!(first, "still frozen", "not even a zero sleep ends");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct FrozenTimer;

impl Clock for FrozenTimer {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl Timer for FrozenTimer {
    fn sleep(&self, _duration: Duration) -> Sleep {
        Box::pin(std::future::pending())
    }
}
