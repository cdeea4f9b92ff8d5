//! Releases this process has in flight, so that an operation on the same key waits for
//! them: a release runs in a background task (it must finish even when its caller's
//! future is dropped), and a caller that then reads the key must see it released.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use event_listener::Event;
use parking_lot::Mutex;

use crate::runtime::{Timers, within};

#[derive(Debug, Default)]
pub(crate) struct PendingReleases {
    by_key: Mutex<HashMap<String, usize>>,
    settled: Event,
}

/// One release in flight; dropping it marks it done.
pub(crate) struct Pending {
    releases: Arc<PendingReleases>,
    key: String,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut by_key = self.releases.by_key.lock();
        if let Some(count) = by_key.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                by_key.remove(&self.key);
            }
        }
        drop(by_key);
        self.releases.settled.notify(usize::MAX);
    }
}

impl PendingReleases {
    /// Marks a release of `key` in flight until the returned value is dropped.
    pub(crate) fn begin(self: &Arc<Self>, key: &str) -> Pending {
        *self.by_key.lock().entry(key.to_owned()).or_default() += 1;
        Pending {
            releases: self.clone(),
            key: key.to_owned(),
        }
    }

    /// Waits, at most `limit`, until no release of `key` is in flight here.
    pub(crate) async fn settled(&self, key: &str, timers: Timers, limit: Duration) {
        let wait = async {
            loop {
                let listener = self.settled.listen();
                if !self.by_key.lock().contains_key(key) {
                    return;
                }
                listener.await;
            }
        };
        let _ = within(timers, limit, wait).await;
    }
}
