//! The async runtime under the backend: where its listener task runs, and time limits
//! that work wherever a future happens to be polled.
//!
//! sqlx drives a connection on tokio when it is opened inside a tokio runtime and on
//! async-io (smol) otherwise; the backend follows the same rule for its own task.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Clock, Sleep, Timer};

use crate::error::BuildError;

#[cfg(not(any(feature = "tokio", feature = "smol")))]
compile_error!("idemkit-postgres needs a runtime: enable its `tokio` or `smol` feature (or both)");

/// Where the backend was built, and so where its background work runs.
#[derive(Clone, Debug)]
pub(crate) enum Spawner {
    #[cfg(feature = "tokio")]
    Tokio(tokio::runtime::Handle),
    #[cfg(feature = "smol")]
    Smol,
}

impl Spawner {
    /// The runtime of the calling context: tokio inside a tokio runtime, smol otherwise;
    /// an error when the feature that context needs is off.
    pub(crate) fn current() -> Result<Spawner, BuildError> {
        #[cfg(feature = "tokio")]
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            return Ok(Spawner::Tokio(handle));
        }
        #[cfg(feature = "smol")]
        return Ok(Spawner::Smol);
        #[cfg(not(feature = "smol"))]
        Err(BuildError::NoRuntime)
    }

    /// Runs `future` in the background.
    pub(crate) fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) {
        match self {
            #[cfg(feature = "tokio")]
            Spawner::Tokio(handle) => drop(handle.spawn(future)),
            #[cfg(feature = "smol")]
            Spawner::Smol => smol::spawn(future).detach(),
        }
    }

    /// `future`, polled in the context of the runtime the backend was built in, so that
    /// connections sqlx opens meanwhile belong to it even when a thread outside any
    /// runtime polls it (a blocking caller).
    pub(crate) fn in_context<F: Future>(&self, future: F) -> InContext<F> {
        InContext {
            spawner: self.clone(),
            future: Box::pin(future),
        }
    }
}

/// A future polled inside its backend's runtime: see [`Spawner::in_context`].
pub(crate) struct InContext<F> {
    spawner: Spawner,
    future: std::pin::Pin<Box<F>>,
}

impl<F: Future> Future for InContext<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        match &self.spawner {
            #[cfg(feature = "tokio")]
            Spawner::Tokio(handle) => {
                let _context = handle.enter();
                self.future.as_mut().poll(cx)
            }
            #[cfg(feature = "smol")]
            Spawner::Smol => self.future.as_mut().poll(cx),
        }
    }
}

/// Which timer a time limit runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timers {
    /// tokio's when polled inside a tokio runtime, async-io's otherwise.
    Auto,
    /// Always one whose timers fire from their own thread (async-io's with the `smol`
    /// feature, the core's `ThreadTimer` without): for blocking calls.
    Independent,
}

#[cfg(feature = "tokio")]
fn on_tokio(timers: Timers) -> bool {
    timers == Timers::Auto && tokio::runtime::Handle::try_current().is_ok()
}

impl Timers {
    /// The timers for the calling context: [`Timers::Independent`] for a thread blocked in
    /// a `BlockingBackend` call (it may be outside any runtime, or on one of its
    /// threads), [`Timers::Auto`] for async code.
    pub(crate) fn for_caller() -> Timers {
        if idemkit_core::in_blocking_call() {
            Timers::Independent
        } else {
            Timers::Auto
        }
    }
}

/// A time limit ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// `future`'s output if ready within `limit`, else [`Elapsed`] (and `future` dropped).
pub(crate) async fn within<F: Future>(
    timers: Timers,
    limit: Duration,
    future: F,
) -> Result<F::Output, Elapsed> {
    #[cfg(feature = "tokio")]
    if on_tokio(timers) {
        return tokio::time::timeout(limit, future)
            .await
            .map_err(|_| Elapsed);
    }
    futures_lite::future::or(async { Ok(future.await) }, async {
        sleep(timers, limit).await;
        Err(Elapsed)
    })
    .await
}

/// Completes after `duration`.
pub(crate) async fn sleep(timers: Timers, duration: Duration) {
    #[cfg(feature = "tokio")]
    if on_tokio(timers) {
        tokio::time::sleep(duration).await;
        return;
    }
    let _ = timers;
    #[cfg(feature = "smol")]
    {
        // `Timer::after` panics on an instant it cannot represent: a far one never fires.
        match Instant::now().checked_add(duration) {
            Some(at) => {
                async_io::Timer::at(at).await;
            }
            None => std::future::pending::<()>().await,
        }
    }
    // Without smol, async-io is not compiled in: the core's timer, woken by a helper
    // thread, works under any executor or none (and never fires for a far instant).
    #[cfg(not(feature = "smol"))]
    idemkit_core::ThreadTimer.sleep(duration).await;
}

/// Real time, on whichever runtime polls the sleep.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RuntimeTimer;

impl Clock for RuntimeTimer {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl Timer for RuntimeTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(sleep(Timers::Auto, duration))
    }
}

/// The timer every backend hands out.
pub(crate) fn timer() -> Arc<dyn Timer> {
    Arc::new(RuntimeTimer)
}
