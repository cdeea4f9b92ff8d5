//! [`on_thread`]: run blocking work on its own OS thread and await its result.
//!
//! This is how the blocking backend joins the async-shaped suite: its
//! `wait_for_completion` really parks a thread, and the suite awaits that thread
//! without blocking the one driving the vector.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;

/// What the worker thread hands back, and who to wake when it does.
struct Slot<T> {
    result: Option<thread::Result<T>>,
    waker: Option<Waker>,
}

/// The result of work running on its own thread; resolves when the work returns, and
/// re-raises its panic if it panicked (so a failed assertion inside still fails the test).
///
/// Dropping it detaches the thread, which runs to the end of its work.
#[must_use = "the work's result, and any panic, is lost unless awaited"]
pub struct ThreadTask<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

fn lock<T>(slot: &Mutex<Slot<T>>) -> MutexGuard<'_, Slot<T>> {
    // Nothing panics while holding this lock; recover the data regardless.
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `work` on a new OS thread.
pub fn on_thread<T, F>(work: F) -> ThreadTask<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let slot = Arc::new(Mutex::new(Slot {
        result: None,
        waker: None,
    }));
    let filled = slot.clone();
    thread::Builder::new()
        .name("conformance-thread".into())
        .spawn(move || {
            let result = panic::catch_unwind(AssertUnwindSafe(work));
            let waker = {
                let mut slot = lock(&filled);
                slot.result = Some(result);
                slot.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        })
        .expect("the OS refused to start a thread");
    ThreadTask { slot }
}

impl<T> Future for ThreadTask<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut slot = lock(&self.slot);
        match slot.result.take() {
            Some(Ok(value)) => Poll::Ready(value),
            Some(Err(panic)) => {
                drop(slot);
                panic::resume_unwind(panic)
            }
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
