//! Where the async side runs its synchronous reads, and the timer its waits run on (its
//! writes have a thread of their own: see `writer`).
//!
//! Inside a tokio runtime (feature `tokio`) each read runs on tokio's blocking pool and
//! waits sleep on tokio's timer; anywhere else (feature `smol`) on the `blocking` crate's
//! pool, smol's, with async-io's timer, which serve any executor. Without the feature for
//! where it runs, a read runs inline and waits sleep on a thread.

use std::time::{Duration, Instant};

use idemkit_core::{Clock, Sleep, Timer};

use crate::error::SqliteError;

/// Runs `work` off the async executor's threads and returns its output. The work is
/// started when this future is first polled and finishes even if the future is dropped
/// (a release polled once, by a dropped run, still lands).
pub(crate) async fn unblock<T, F>(operation: &'static str, work: F) -> Result<T, SqliteError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    #[cfg(feature = "tokio")]
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        return handle
            .spawn_blocking(work)
            .await
            .map_err(|_| SqliteError::new(operation, crate::error::Cause::PoolGone));
    }
    #[cfg(feature = "smol")]
    {
        let (sender, receiver) = async_channel::bounded(1);
        blocking::unblock(move || {
            let _ = sender.try_send(work());
        })
        .detach();
        receiver
            .recv()
            .await
            .map_err(|_| SqliteError::new(operation, crate::error::Cause::PoolGone))
    }
    #[cfg(not(feature = "smol"))]
    {
        let _ = operation;
        Ok(work())
    }
}

/// Real time, on the runtime the future is polled in (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RuntimeTimer;

impl Clock for RuntimeTimer {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl Timer for RuntimeTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(sleep(duration))
    }
}

/// Completes after `duration` of real time.
pub(crate) fn sleep(duration: Duration) -> Sleep {
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_ok() {
        return Box::pin(tokio::time::sleep(duration));
    }
    #[cfg(feature = "smol")]
    {
        let timer = async_io::Timer::after(duration);
        Box::pin(async move {
            timer.await;
        })
    }
    #[cfg(not(feature = "smol"))]
    {
        idemkit_core::ThreadTimer.sleep(duration)
    }
}
