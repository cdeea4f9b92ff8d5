//! Waiting for an in-flight claim: the notification is the latency path, the poll the
//! correctness floor.
//!
//! The loop itself lives in [`Wait::step`](crate::memory::shards::Wait::step); what
//! is left is how a waiter parks, "sleep for at most this long, or be woken": a race
//! between the key's listener and a sleep on the backend's [`Timer`].

use std::time::Duration;

use event_listener::EventListener;

use crate::record::Record;
use crate::rt::Timer;

/// What a waiter does next.
#[derive(Debug)]
pub(crate) enum WaitStep {
    /// The wait is over: the completed record, or `None` (no record, a lapsed lease, or
    /// the timeout).
    Ready(Option<Record>),
    /// Park until `listener` fires or `within` passes, whichever is first, then step again.
    Park {
        listener: EventListener,
        within: Duration,
    },
}

/// Parks a waiter until `listener` fires or `within` passes on `timer`. Under a blocking
/// caller this future is polled by [`BlockingBackend`](crate::BlockingBackend), which parks
/// the thread until one of the two wakes it.
pub(crate) async fn park(listener: EventListener, within: Duration, timer: &dyn Timer) {
    futures_lite::future::or(listener, timer.sleep(within)).await;
}
