//! Releases on their way: an async release runs on the writer thread and lands even if
//! its future is dropped after the first poll (as the executor does when a run is
//! dropped). Until it lands, this process's next operation on that key waits for it, so
//! the key is seen released, in order, as the in-memory backend would show it.

use std::collections::HashMap;
use std::sync::Arc;

use event_listener::{Event, Listener};
use parking_lot::Mutex;

#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<Box<str>, usize>>,
    landed: Event,
}

/// The releases of one backend that have started and not landed.
#[derive(Default)]
pub(crate) struct Releases {
    shared: Arc<Shared>,
}

impl Releases {
    #[cfg_attr(not(any(feature = "tokio", feature = "smol")), allow(dead_code))]
    /// Marks a release of `key` as started; it has landed when the guard is dropped.
    pub(crate) fn begin(&self, key: &str) -> Pending {
        *self.shared.pending.lock().entry(key.into()).or_default() += 1;
        Pending {
            shared: Arc::clone(&self.shared),
            key: key.into(),
        }
    }

    fn is_pending(&self, key: &str) -> bool {
        self.shared.pending.lock().contains_key(key)
    }

    #[cfg_attr(not(any(feature = "tokio", feature = "smol")), allow(dead_code))]
    /// Returns once no release of `key` is on its way (at once, almost always).
    pub(crate) async fn settled(&self, key: &str) {
        while self.is_pending(key) {
            let listener = self.shared.landed.listen();
            if !self.is_pending(key) {
                break;
            }
            listener.await;
        }
    }

    /// [`Releases::settled`] for blocking code.
    pub(crate) fn settled_blocking(&self, key: &str) {
        while self.is_pending(key) {
            let listener = self.shared.landed.listen();
            if !self.is_pending(key) {
                break;
            }
            listener.wait();
        }
    }
}

/// A release on its way.
pub(crate) struct Pending {
    shared: Arc<Shared>,
    key: Box<str>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut pending = self.shared.pending.lock();
        if let Some(count) = pending.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                pending.remove(&self.key);
            }
        }
        drop(pending);
        self.shared.landed.notify(usize::MAX);
    }
}
