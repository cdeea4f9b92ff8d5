//! [`Tokio`]: `idemkit_tokio::InMemoryBackend` on a multi-thread tokio runtime.

use std::future::Future;
use std::panic;
use std::time::Duration;

use idemkit_core::Clock;
use idemkit_tokio::{InMemoryBackend, TokioClock};

use crate::runtime::Runtime;
use crate::target::{AsyncTarget, Settings, Target};

/// The tokio backend, `idemkit_tokio::InMemoryBackend`.
#[derive(Debug)]
pub struct Tokio;

/// A fresh multi-thread tokio runtime per vector, with its timer enabled.
#[derive(Debug)]
pub struct TokioRuntime;

impl Runtime for TokioRuntime {
    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_multi_thread()
            .enable_time()
            .build()
            .expect("a tokio runtime")
            .block_on(future)
    }

    fn spawn<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = tokio::spawn(future);
        async move {
            match handle.await {
                Ok(output) => output,
                Err(error) if error.is_panic() => panic::resume_unwind(error.into_panic()),
                Err(error) => panic!("a spawned task did not finish: {error}"),
            }
        }
    }

    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        tokio::time::sleep(duration)
    }
}

impl Target for Tokio {
    type Runtime = TokioRuntime;
    type DefaultClock = TokioClock;
    type Backend<C: Clock> = InMemoryBackend<C>;

    fn build<C: Clock>(settings: Settings, clock: C) -> InMemoryBackend<C> {
        InMemoryBackend::builder()
            .max_size(settings.max_size)
            .reclaim_grace(settings.reclaim_grace)
            .clock(clock)
            .build()
    }
}

impl AsyncTarget for Tokio {
    fn run_purger<C: Clock>(backend: &InMemoryBackend<C>) -> impl Future<Output = ()> + Send {
        backend.run_purger()
    }
}
