//! A one-value channel that needs no runtime: [`handoff`].

use std::sync::Arc;

use event_listener::Event;
use parking_lot::Mutex;

/// One value handed from a background task to whoever waits for it: the receiving half
/// of [`handoff`].
pub(crate) struct Receipt<T> {
    shared: Arc<Handoff<T>>,
}

/// The sending half of [`handoff`]; dropping it unsent tells the receiver nothing comes.
pub(crate) struct Sender<T> {
    shared: Arc<Handoff<T>>,
}

struct Handoff<T> {
    /// `None` while waiting; `Some(None)` once the sender is gone without a value.
    slot: Mutex<Option<Option<T>>>,
    done: Event,
}

/// A one-value channel that needs no runtime (the backend's runtime may be either).
pub(crate) fn handoff<T>() -> (Sender<T>, Receipt<T>) {
    let shared = Arc::new(Handoff {
        slot: Mutex::new(None),
        done: Event::new(),
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receipt { shared },
    )
}

impl<T> Sender<T> {
    /// Hands `value` over.
    pub(crate) fn send(self, value: T) {
        *self.shared.slot.lock() = Some(Some(value));
        // The drop below wakes the receiver.
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.shared.slot.lock().get_or_insert(None);
        self.shared.done.notify(usize::MAX);
    }
}

impl<T> Receipt<T> {
    /// The value, or `None` if the sender was dropped without one.
    pub(crate) async fn recv(self) -> Option<T> {
        loop {
            let listener = self.shared.done.listen();
            if let Some(outcome) = self.shared.slot.lock().take() {
                return outcome;
            }
            listener.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handoff_delivers_or_says_nothing_comes() {
        let (sender, receipt) = handoff();
        std::thread::spawn(move || sender.send(5));
        assert_eq!(futures_lite::future::block_on(receipt.recv()), Some(5));
        let (sender, receipt) = handoff::<u8>();
        std::thread::spawn(move || drop(sender));
        assert_eq!(futures_lite::future::block_on(receipt.recv()), None);
    }
}
