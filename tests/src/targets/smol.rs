//! [`Smol`]: `idemkit_smol::InMemoryBackend` on smol.

use std::future::Future;
use std::time::Duration;

use idemkit_core::Clock;
use idemkit_smol::{InMemoryBackend, SystemClock};

use crate::runtime::Runtime;
use crate::target::{AsyncTarget, Settings, Target};

/// The smol backend, `idemkit_smol::InMemoryBackend`.
#[derive(Debug)]
pub struct Smol;

/// smol: vectors run in `smol::block_on`, spawned tasks on smol's global executor.
#[derive(Debug)]
pub struct SmolRuntime;

impl Runtime for SmolRuntime {
    fn block_on<F: Future>(future: F) -> F::Output {
        smol::block_on(future)
    }

    fn spawn<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        // A smol task re-raises its panic where it is awaited.
        smol::spawn(future)
    }

    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        let timer = smol::Timer::after(duration);
        async move {
            timer.await;
        }
    }
}

impl Target for Smol {
    type Runtime = SmolRuntime;
    type DefaultClock = SystemClock;
    type Backend<C: Clock> = InMemoryBackend<C>;

    fn build<C: Clock>(settings: Settings, clock: C) -> InMemoryBackend<C> {
        InMemoryBackend::builder()
            .max_size(settings.max_size)
            .reclaim_grace(settings.reclaim_grace)
            .clock(clock)
            .build()
    }
}

impl AsyncTarget for Smol {
    fn run_purger<C: Clock>(backend: &InMemoryBackend<C>) -> impl Future<Output = ()> + Send {
        backend.run_purger()
    }
}
