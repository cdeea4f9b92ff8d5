//! The async runtime under the backend: where its listener task runs, where sqlx drives
//! its connections, and time limits that work wherever a future happens to be polled.
//!
//! A backend runs on one runtime, chosen when it is built and never by where it happens
//! to be built: the one [`PostgresBuilder::runtime`](crate::PostgresBuilder::runtime)
//! names, or by default tokio (feature `tokio`: the runtime `build` is called in, or one
//! of the backend's own outside any), else smol. sqlx opens a connection on tokio when it
//! finds a tokio context and on smol's reactor otherwise, so every operation is polled
//! with the backend's tokio handle entered ([`Spawner::in_context`]).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Clock, Sleep, Timer};

#[cfg(not(any(feature = "tokio", feature = "smol")))]
compile_error!("idemkit-postgres needs a runtime: enable its `tokio` or `smol` feature (or both)");

/// The runtime a backend runs on: what
/// [`PostgresBuilder::runtime`](crate::PostgresBuilder::runtime) takes, made with `into()`
/// from `idemkit_tokio::TokioRuntime` (feature `tokio`) or `idemkit_smol::SmolRuntime`
/// (feature `smol`), both re-exported at the crate root.
///
/// ```
/// # #[cfg(feature = "smol")] {
/// use idemkit_postgres::{PostgresBackend, RuntimeChoice, SmolRuntime};
///
/// let smol: RuntimeChoice = SmolRuntime.into();
/// let builder = PostgresBackend::builder().runtime(smol);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RuntimeChoice(Spawner);

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl From<idemkit_tokio::TokioRuntime> for RuntimeChoice {
    fn from(runtime: idemkit_tokio::TokioRuntime) -> RuntimeChoice {
        RuntimeChoice(Spawner::Tokio {
            handle: runtime.handle().clone(),
            _owned: None,
        })
    }
}

#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
impl From<idemkit_smol::SmolRuntime> for RuntimeChoice {
    fn from(_: idemkit_smol::SmolRuntime) -> RuntimeChoice {
        RuntimeChoice(Spawner::Smol)
    }
}

/// The runtime a backend runs on, and so where its background work runs.
#[derive(Clone, Debug)]
pub(crate) enum Spawner {
    /// A tokio runtime, by its handle; with the runtime itself when the backend owns it
    /// (shut down when the last clone of the backend is gone).
    #[cfg(feature = "tokio")]
    Tokio {
        handle: tokio::runtime::Handle,
        /// Held, never read: it keeps the runtime alive.
        _owned: Option<Arc<Owned>>,
    },
    #[cfg(feature = "smol")]
    Smol,
}

/// A tokio runtime of the backend's own: one worker thread, which runs the listener, the
/// connections' I/O and the timers.
#[cfg(feature = "tokio")]
#[derive(Debug)]
pub(crate) struct Owned(Option<tokio::runtime::Runtime>);

#[cfg(feature = "tokio")]
impl Drop for Owned {
    fn drop(&mut self) {
        // Without waiting: the last clone may go inside an async context, or on the
        // worker itself, where a plain drop would panic.
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl Spawner {
    /// The runtime `choice` names or, without one, the default: tokio with the `tokio`
    /// feature (the runtime of the calling context, or a runtime of the backend's own
    /// outside one), smol with only `smol`. Fails only when a runtime of its own cannot
    /// start.
    pub(crate) fn resolve(choice: Option<RuntimeChoice>) -> std::io::Result<Spawner> {
        if let Some(RuntimeChoice(spawner)) = choice {
            return Ok(spawner);
        }
        #[cfg(feature = "tokio")]
        {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                return Ok(Spawner::Tokio {
                    handle,
                    _owned: None,
                });
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("idemkit-postgres")
                .enable_all()
                .build()?;
            let handle = runtime.handle().clone();
            Ok(Spawner::Tokio {
                handle,
                _owned: Some(Arc::new(Owned(Some(runtime)))),
            })
        }
        #[cfg(not(feature = "tokio"))]
        Ok(Spawner::Smol)
    }

    /// Runs `future` in the background.
    pub(crate) fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) {
        match self {
            #[cfg(feature = "tokio")]
            Spawner::Tokio { handle, .. } => drop(handle.spawn(future)),
            #[cfg(feature = "smol")]
            Spawner::Smol => smol::spawn(future).detach(),
        }
    }

    /// `future`, polled in the context of the backend's runtime, so that connections
    /// sqlx opens meanwhile belong to it whoever polls: a task of another runtime, or a
    /// blocking caller on a thread outside any.
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
            Spawner::Tokio { handle, .. } => {
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
