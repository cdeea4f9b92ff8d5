//! The async runtime under the backend: where its background work runs, and a timer that
//! works wherever a future happens to be polled.
//!
//! The `redis` crate drives each connection from a task on the runtime it was created
//! in: tokio when created inside a tokio runtime, otherwise smol's global executor
//! (which runs on its own thread, so it also serves blocking code). The backend follows
//! the same rule for the little it spawns itself.

use std::future::Future;
use std::time::Duration;

/// Where the backend spawns its own background work (unsubscribing a channel nobody
/// waits on any more).
#[derive(Clone, Debug)]
pub(crate) enum Spawner {
    Tokio(tokio::runtime::Handle),
    Smol,
}

impl Spawner {
    /// The runtime of the calling context: tokio inside a tokio runtime, smol otherwise.
    pub(crate) fn current() -> Spawner {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => Spawner::Tokio(handle),
            Err(_) => Spawner::Smol,
        }
    }

    /// Runs `future` in the background; nobody waits for it.
    pub(crate) fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) {
        match self {
            // A runtime that has shut down drops the task: there is nothing left to do then.
            Spawner::Tokio(handle) => drop(handle.spawn(future)),
            Spawner::Smol => smol::spawn(future).detach(),
        }
    }
}

/// Which timer a time limit runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timers {
    /// tokio's when polled inside a tokio runtime (cheap, and what tokio code expects),
    /// async-io's otherwise.
    Auto,
    /// Always async-io's, whose timers fire from their own thread: for blocking calls,
    /// which must time out even if their thread is one a runtime needed.
    Independent,
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

/// `future`'s output if it is ready within `limit`, else [`Elapsed`] (and `future` is
/// dropped).
pub(crate) async fn within<F: Future>(
    timers: Timers,
    limit: Duration,
    future: F,
) -> Result<F::Output, Elapsed> {
    if timers == Timers::Auto && tokio::runtime::Handle::try_current().is_ok() {
        return tokio::time::timeout(limit, future)
            .await
            .map_err(|_| Elapsed);
    }
    futures_lite::future::or(async { Ok(future.await) }, async {
        async_io::Timer::after(limit).await;
        Err(Elapsed)
    })
    .await
}

/// Completes after `duration`.
pub(crate) async fn sleep(timers: Timers, duration: Duration) {
    if timers == Timers::Auto && tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep(duration).await;
    } else {
        async_io::Timer::after(duration).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn both_limits(timers: Timers) {
        let quick = within(timers, Duration::from_secs(60), async { 7 }).await;
        assert_eq!(quick, Ok(7));
        let stuck = within(
            timers,
            Duration::from_millis(10),
            std::future::pending::<()>(),
        )
        .await;
        assert_eq!(stuck, Err(Elapsed));
        sleep(timers, Duration::from_millis(1)).await;
    }

    #[test]
    fn limits_work_without_a_runtime() {
        futures_lite::future::block_on(both_limits(Timers::Auto));
        futures_lite::future::block_on(both_limits(Timers::Independent));
    }

    #[tokio::test]
    async fn limits_work_on_tokio() {
        both_limits(Timers::Auto).await;
        both_limits(Timers::Independent).await;
    }

    #[test]
    fn spawned_work_runs_on_either_runtime() {
        let (sender, receiver) = std::sync::mpsc::channel();
        let smol_sender = sender.clone();
        Spawner::current().spawn(async move { smol_sender.send("smol").unwrap() });
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let spawner = runtime.block_on(async { Spawner::current() });
        assert!(matches!(spawner, Spawner::Tokio(_)));
        spawner.spawn(async move { sender.send("tokio").unwrap() });
        let mut seen: Vec<&str> = (0..2)
            .map(|_| receiver.recv_timeout(Duration::from_secs(30)).unwrap())
            .collect();
        seen.sort();
        assert_eq!(seen, ["smol", "tokio"]);
    }
}
