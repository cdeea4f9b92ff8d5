//! Waiting for a claim in flight: the server's wake-up is the fast path, a backed-off
//! re-read the floor (a wake-up can be lost: pub/sub delivers at most once).

use std::time::Duration;

use idemkit_core::{Error, PollSchedule, Record};

use crate::backend::{Found, Inner};

impl Inner {
    /// The completed record of `key` as soon as it lands; `None` at once for no record or
    /// a lapsed lease, as soon as the key is released, or once `timeout` runs out. Never
    /// longer than `timeout`, whatever the server does: a failed read is an error, a slow
    /// one is cut off by the timeout.
    pub(crate) async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        self.settled(key).await;
        let storage_key = self.layout.storage_key(key);
        let watcher = self.wakeups.watch(&storage_key);
        let waiting = async {
            let mut polls = PollSchedule::new();
            loop {
                // Listen, then subscribe, then read: a wake-up published after the read
                // reaches this listener.
                let listener = watcher.listen();
                if !watcher.is_subscribed() {
                    // A failure only costs latency: the poll below is the floor, and the
                    // next step subscribes again.
                    let _ = self
                        .runtime
                        .within(self.command_timeout, watcher.ensure_subscribed())
                        .await;
                }
                // Watched: the completion of a claim no one watches publishes nothing.
                let lease_left = match self.find(key, &storage_key, true).await? {
                    Found::Nothing => return Ok(None),
                    Found::Completed(record) => return Ok(Some(record)),
                    // The owner's lease lapsed: it has probably crashed, and waiting
                    // cannot help; the caller may claim the key itself.
                    Found::Claimed {
                        lease_left: None, ..
                    } => return Ok(None),
                    Found::Claimed {
                        lease_left: Some(left),
                        ..
                    } => left,
                };
                let park = polls.next_park(lease_left);
                futures_lite::future::or(listener, self.runtime.sleep(park)).await;
            }
        };
        self.runtime
            .within(timeout, waiting)
            .await
            .unwrap_or(Ok(None))
    }
}
