//! Releases carried out in the background, and the operations that wait for them.
//!
//! A release is sent by a task of its own (see the async `release`), so that a caller
//! who drops it after one poll, as the executor does for a dropped run, still gives the
//! key up. Until that task is done, later operations of this backend on the same key
//! wait for it (at most the command timeout), so that this process never sees the key
//! as if the release had not been asked for.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use event_listener::Event;
use parking_lot::Mutex;

use idemkit_core::Timer;

use crate::runtime::within;

/// The keys with a release in flight.
#[derive(Debug, Default)]
pub(crate) struct PendingReleases {
    by_key: Mutex<HashMap<Box<str>, usize>>,
    done: Event,
}

/// One release in flight; dropping it (the release done, or its task dropped) ends it.
pub(crate) struct Pending {
    releases: Arc<PendingReleases>,
    key: Box<str>,
}

impl PendingReleases {
    /// Marks a release of `key` in flight until the returned value is dropped.
    pub(crate) fn begin(self: &Arc<Self>, key: &str) -> Pending {
        *self.by_key.lock().entry(key.into()).or_default() += 1;
        Pending {
            releases: self.clone(),
            key: key.into(),
        }
    }

    fn in_flight(&self, key: &str) -> bool {
        let by_key = self.by_key.lock();
        !by_key.is_empty() && by_key.contains_key(key)
    }

    /// Waits until no release of `key` is in flight, at most `limit`.
    pub(crate) async fn settled(&self, key: &str, timer: &dyn Timer, limit: Duration) {
        if !self.in_flight(key) {
            return;
        }
        let _ = within(timer, limit, async {
            loop {
                let listener = self.done.listen();
                if !self.in_flight(key) {
                    return;
                }
                listener.await;
            }
        })
        .await;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut by_key = self.releases.by_key.lock();
        if let Some(count) = by_key.get_mut(&*self.key) {
            *count -= 1;
            if *count == 0 {
                by_key.remove(&*self.key);
            }
        }
        drop(by_key);
        self.releases.done.notify(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_waits_for_its_keys_release_only() {
        let releases = Arc::new(PendingReleases::default());
        let pending = releases.begin("k");
        futures_lite::future::block_on(async {
            // Another key does not wait.
            releases
                .settled("other", &idemkit_core::ThreadTimer, Duration::from_secs(60))
                .await;
            let release = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                drop(pending);
            });
            releases
                .settled("k", &idemkit_core::ThreadTimer, Duration::from_secs(60))
                .await;
            assert!(!releases.in_flight("k"));
            release.join().unwrap();
        });
        // A release that never ends holds an operation up for the limit only.
        let _stuck = releases.begin("stuck");
        futures_lite::future::block_on(releases.settled(
            "stuck",
            &idemkit_core::ThreadTimer,
            Duration::from_millis(10),
        ));
    }
}
