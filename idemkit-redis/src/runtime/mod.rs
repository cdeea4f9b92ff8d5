//! The async runtime under the backend: the core's one seam, [`idemkit_core::Runtime`]
//! (a timer that can spawn), chosen once at build and used for everything.
//!
//! The `redis` crate drives each connection from a task it spawns on the runtime it finds
//! where the connection is made or remade (a reconnect happens inside a command's poll).
//! Built with one runtime feature, it finds that one. Built with both, it looks for a
//! tokio context and takes smol without one. So the backend polls every future that may
//! touch a connection through [`OnRuntime::drive`], which puts the chosen runtime where
//! the `redis` crate looks, whoever polls: a tokio task, a smol task, or
//! `futures_lite::future::block_on` on a plain thread.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Runtime, Sleep, Timer};

mod driven;
mod handoff;
mod within;

pub(crate) use self::driven::Driven;
pub(crate) use self::handoff::handoff;
pub(crate) use self::within::{Elapsed, Within, within};

/// The async runtime a backend runs on: its connections, its background work and its time
/// limits. What [`RedisBuilder::runtime`](crate::RedisBuilder::runtime) takes; made from
/// `TokioRuntime` (feature `tokio`) or `SmolRuntime` (feature `smol`), both re-exported
/// at the crate root, with `into()`.
///
/// ```
/// # #[cfg(feature = "smol")] {
/// use idemkit_redis::{RedisBackend, RuntimeChoice, SmolRuntime};
///
/// let smol: RuntimeChoice = SmolRuntime.into();
/// let builder = RedisBackend::builder().runtime(smol);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RuntimeChoice(Choice);

#[derive(Clone, Debug)]
enum Choice {
    #[cfg(feature = "tokio")]
    Tokio(idemkit_tokio::TokioRuntime),
    #[cfg(feature = "smol")]
    Smol(idemkit_smol::SmolRuntime),
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl From<idemkit_tokio::TokioRuntime> for RuntimeChoice {
    fn from(runtime: idemkit_tokio::TokioRuntime) -> RuntimeChoice {
        RuntimeChoice(Choice::Tokio(runtime))
    }
}

#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
impl From<idemkit_smol::SmolRuntime> for RuntimeChoice {
    fn from(runtime: idemkit_smol::SmolRuntime) -> RuntimeChoice {
        RuntimeChoice(Choice::Smol(runtime))
    }
}

/// The runtime of one backend, shared by its clones.
#[derive(Clone)]
pub(crate) struct OnRuntime {
    /// Spawns, sleeps and time limits; [`Backend::timer`](idemkit_core::Backend::timer)
    /// hands it out. A runtime the backend owns is owned through it, so it lives while
    /// any clone of it does.
    runtime: Arc<dyn Runtime>,
    /// tokio's handle when the backend runs on tokio, entered around every poll.
    #[cfg(feature = "tokio")]
    tokio: Option<tokio::runtime::Handle>,
}

impl OnRuntime {
    /// The runtime `choice` names, or the default when there is none: tokio (if the
    /// feature is on) of the calling context, or a runtime of its own outside one; smol
    /// with only the `smol` feature. Fails only when a runtime of its own cannot start.
    pub(crate) fn resolve(choice: Option<RuntimeChoice>) -> std::io::Result<OnRuntime> {
        let choice = match choice {
            Some(RuntimeChoice(choice)) => choice,
            #[cfg(feature = "tokio")]
            None => match idemkit_tokio::TokioRuntime::try_current() {
                Some(current) => Choice::Tokio(current),
                None => return Ok(OnRuntime::tokio(Arc::new(Dedicated::start()?))),
            },
            #[cfg(not(feature = "tokio"))]
            None => Choice::Smol(idemkit_smol::SmolRuntime),
        };
        Ok(match choice {
            #[cfg(feature = "tokio")]
            Choice::Tokio(runtime) => OnRuntime::tokio(Arc::new(runtime)),
            #[cfg(feature = "smol")]
            Choice::Smol(runtime) => OnRuntime {
                runtime: Arc::new(runtime),
                #[cfg(feature = "tokio")]
                tokio: None,
            },
        })
    }

    #[cfg(feature = "tokio")]
    fn tokio<R: TokioBased>(runtime: Arc<R>) -> OnRuntime {
        OnRuntime {
            tokio: Some(runtime.handle().clone()),
            runtime,
        }
    }

    /// The runtime as the core's timer.
    pub(crate) fn timer(&self) -> Arc<dyn Timer> {
        self.runtime.clone()
    }

    /// The runtime as the core's timer, borrowed.
    pub(crate) fn as_timer(&self) -> &dyn Timer {
        &*self.runtime
    }

    /// Runs `future` in the background; nobody waits for it. A runtime that has shut
    /// down drops it.
    pub(crate) fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) {
        self.runtime.spawn(Box::pin(future));
    }

    /// Completes after `duration`, on the runtime's clock.
    pub(crate) fn sleep(&self, duration: Duration) -> Sleep {
        self.runtime.sleep(duration)
    }

    /// `future`'s output if it is ready within `limit`, else [`Elapsed`].
    pub(crate) fn within<F: Future>(&self, limit: Duration, future: F) -> Within<'_, F> {
        within(&*self.runtime, limit, future)
    }

    /// Polls `future`, which may make or remake connections, so that the `redis` crate
    /// finds this runtime (see the module docs), from any caller, and so that a caller
    /// with no runtime at all (`futures_lite::future::block_on` on a plain thread) works.
    ///
    /// On tokio, the runtime's handle is entered around each poll: new connections and
    /// their tasks go to it, and its drivers (run by its own threads) wake the caller.
    /// On smol, the reactor and executor serve any thread; only a tokio context would
    /// mislead the `redis` crate (built with both runtimes), so under one the future runs
    /// as a task of smol's executor instead, and dropping this future cancels it.
    pub(crate) fn drive<F>(&self, future: F) -> Driven<'_, F>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        #[cfg(all(feature = "tokio", feature = "smol"))]
        if self.tokio.is_none() && tokio::runtime::Handle::try_current().is_ok() {
            return Driven::Spawned {
                task: smol::spawn(future),
            };
        }
        self.drive_here(future)
    }

    /// [`OnRuntime::drive`] for a future that must be polled where it is (a borrowed one):
    /// inside tokio's context on tokio, as it is on smol (so not under a tokio context
    /// with smol chosen).
    pub(crate) fn drive_here<F: Future>(&self, future: F) -> Driven<'_, F> {
        Driven::Here {
            #[cfg(feature = "tokio")]
            enter: self.tokio.as_ref(),
            #[cfg(not(feature = "tokio"))]
            enter: None,
            future,
        }
    }
}

/// A core runtime on a tokio runtime, with the handle to enter.
#[cfg(feature = "tokio")]
trait TokioBased: Runtime {
    fn handle(&self) -> &tokio::runtime::Handle;
}

#[cfg(feature = "tokio")]
impl TokioBased for idemkit_tokio::TokioRuntime {
    fn handle(&self) -> &tokio::runtime::Handle {
        idemkit_tokio::TokioRuntime::handle(self)
    }
}

/// A tokio runtime of the backend's own, for a backend built outside any tokio runtime
/// without one given: multi-thread with one worker (which runs the connections' tasks
/// and the I/O and time drivers), shut down when the last clone of the backend (or of
/// its timer, or a task it spawned) is gone.
#[cfg(feature = "tokio")]
struct Dedicated {
    runtime: idemkit_tokio::TokioRuntime,
    owner: Option<tokio::runtime::Runtime>,
}

#[cfg(feature = "tokio")]
impl Dedicated {
    fn start() -> std::io::Result<Dedicated> {
        let owner = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("idemkit-redis")
            .enable_all()
            .build()?;
        Ok(Dedicated {
            runtime: owner.handle().clone().into(),
            owner: Some(owner),
        })
    }
}

#[cfg(feature = "tokio")]
impl Drop for Dedicated {
    fn drop(&mut self) {
        // Without waiting: the last clone may go in an async context, or on the worker
        // itself (a background release finishing), where a plain drop would panic.
        if let Some(owner) = self.owner.take() {
            owner.shutdown_background();
        }
    }
}

#[cfg(feature = "tokio")]
impl TokioBased for Dedicated {
    fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime.handle()
    }
}

#[cfg(feature = "tokio")]
impl idemkit_core::Clock for Dedicated {
    fn now(&self) -> std::time::Instant {
        self.runtime.now()
    }
}

#[cfg(feature = "tokio")]
impl Timer for Dedicated {
    fn sleep(&self, duration: Duration) -> Sleep {
        self.runtime.sleep(duration)
    }
}

#[cfg(feature = "tokio")]
impl Runtime for Dedicated {
    fn spawn(&self, task: idemkit_core::Task) {
        self.runtime.spawn(task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn both_limits(runtime: &OnRuntime) {
        let quick = runtime.within(Duration::from_secs(60), async { 7 }).await;
        assert_eq!(quick, Ok(7));
        let stuck = runtime
            .within(Duration::from_millis(10), std::future::pending::<()>())
            .await;
        assert_eq!(stuck, Err(Elapsed));
        runtime.sleep(Duration::from_millis(1)).await;
        let driven = runtime.drive(async { 8 }).await;
        assert_eq!(driven, 8);
    }

    /// Spawns on `runtime` and waits for the task to have run.
    fn spawned_work_runs(runtime: &OnRuntime) {
        let (sender, receiver) = std::sync::mpsc::channel();
        runtime.spawn(async move { sender.send("ran").unwrap() });
        assert_eq!(receiver.recv_timeout(Duration::from_secs(30)), Ok("ran"));
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn the_default_outside_tokio_is_a_runtime_of_its_own_that_serves_plain_threads() {
        let runtime = OnRuntime::resolve(None).unwrap();
        let handle = runtime.tokio.clone().expect("tokio is the default");
        futures_lite::future::block_on(both_limits(&runtime));
        spawned_work_runs(&runtime);
        // Polled from a plain thread, the future runs inside the runtime's context.
        let inside = futures_lite::future::block_on(
            runtime.drive(async { tokio::runtime::Handle::try_current().map(|h| h.id()) }),
        );
        assert_eq!(inside.ok(), Some(handle.id()));
        // The last clone shuts the runtime down without waiting, even inside an async
        // context.
        let other = tokio::runtime::Runtime::new().unwrap();
        other.block_on(async move { drop(runtime) });
    }

    #[cfg(feature = "tokio")]
    #[tokio::test]
    async fn the_default_inside_tokio_is_that_runtime() {
        let runtime = OnRuntime::resolve(None).unwrap();
        assert_eq!(
            runtime.tokio.as_ref().map(|handle| handle.id()),
            Some(tokio::runtime::Handle::current().id())
        );
        both_limits(&runtime).await;
    }

    #[cfg(feature = "smol")]
    #[test]
    fn smol_serves_plain_threads() {
        let runtime = OnRuntime::resolve(Some(idemkit_smol::SmolRuntime.into())).unwrap();
        futures_lite::future::block_on(both_limits(&runtime));
        spawned_work_runs(&runtime);
    }

    #[cfg(all(feature = "tokio", feature = "smol"))]
    #[tokio::test]
    async fn smol_chosen_inside_tokio_runs_out_of_tokios_sight() {
        let runtime = OnRuntime::resolve(Some(idemkit_smol::SmolRuntime.into())).unwrap();
        let seen = runtime
            .drive(async { tokio::runtime::Handle::try_current().is_ok() })
            .await;
        assert!(!seen, "the redis crate would find tokio there");
    }
}
