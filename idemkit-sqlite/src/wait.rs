//! Waiting for a claim in flight: a completion in this process wakes its waiters at once,
//! one in another process through the file's change counter (see `wakeups`), and a
//! backed-off re-read ([`PollSchedule`]) is the floor under both.

use std::time::{Duration, Instant};

use event_listener::Listener;
use idemkit_core::{Error, PollSchedule, Record};

use crate::backend::Inner;
use crate::ops::Found;

impl Inner {
    /// The blocking wait: never longer than `timeout` of real time, beyond the last read.
    pub(crate) fn wait_blocking(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        let deadline = Instant::now().checked_add(timeout);
        let watch = self.watch(key);
        let mut polls = PollSchedule::new();
        loop {
            // Listen, then read: a wake-up after the read reaches this listener.
            let listener = watch.listen();
            let lease_left = match self.find(key)? {
                Found::Absent | Found::Lapsed => return Ok(None),
                Found::Completed(record) => return Ok(Some(record)),
                Found::Claimed { lease_left } => lease_left,
            };
            let mut park = polls.next_park(lease_left);
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                park = park.min(left);
            }
            let _woken = listener.wait_timeout(park);
        }
    }

    /// The async wait: the same steps, each read on the blocking pool, the parks and the
    /// timeout on the runtime's timer.
    pub(crate) async fn wait_async(
        self: &std::sync::Arc<Self>,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        let watch = self.watch(key);
        let waiting = async {
            let mut polls = PollSchedule::new();
            loop {
                let listener = watch.listen();
                let (inner, owned) = (std::sync::Arc::clone(self), key.to_owned());
                let found = crate::runtime::unblock("read", move || inner.find(&owned)).await??;
                let lease_left = match found {
                    Found::Absent | Found::Lapsed => return Ok(None),
                    Found::Completed(record) => return Ok(Some(record)),
                    Found::Claimed { lease_left } => lease_left,
                };
                let park = polls.next_park(lease_left);
                futures_lite::future::or(listener, crate::runtime::sleep(park)).await;
            }
        };
        futures_lite::future::or(waiting, async {
            crate::runtime::sleep(timeout).await;
            Ok(None)
        })
        .await
    }
}
