//! A one-shot hand-over of an outcome from a background task to the caller that is
//! waiting for it, on any runtime (or none).

use std::sync::Arc;

use event_listener::Event;
use idemkit_core::Error;
use parking_lot::Mutex;

use crate::error::{Cause, storage};

/// A one-shot hand-over of a release's outcome from the task that made it.
pub(crate) fn handoff() -> (Sender, impl Future<Output = Result<bool, Error>>) {
    let slot = Arc::new(Mutex::new(None::<Result<bool, Error>>));
    let event = Arc::new(Event::new());
    let sender = Sender {
        slot: slot.clone(),
        event: event.clone(),
    };
    let receiver = async move {
        loop {
            let listener = event.listen();
            if let Some(outcome) = slot.lock().take() {
                return outcome;
            }
            if Arc::strong_count(&slot) == 1 {
                return Err(storage(
                    "release",
                    Cause::Invalid("the runtime that ran it has shut down".into()),
                ));
            }
            listener.await;
        }
    };
    (sender, receiver)
}

pub(crate) struct Sender {
    slot: Arc<Mutex<Option<Result<bool, Error>>>>,
    event: Arc<Event>,
}

impl Sender {
    pub(crate) fn send(self, outcome: Result<bool, Error>) {
        *self.slot.lock() = Some(outcome);
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.event.notify(usize::MAX);
    }
}
