//! [`AsyncInMemory`]: `idemkit_core::AsyncInMemoryBackend` and `AsyncIdempotency` with
//! an adapter's timer, on that adapter's runtime. The tokio and smol targets are this one with their own timer
//! and runtime, since the adapters differ in nothing else.

use std::future::Future;
use std::marker::PhantomData;

use idemkit_core::{Async, AsyncIdempotency, AsyncInMemoryBackend, Clock, Timer};

use crate::runtime::Runtime;
use crate::target::{AsyncTarget, Settings, Target};

/// The async in-memory backend and executor with timer `T`, driven by runtime `R` (which
/// must be the one `T` sleeps on).
#[derive(Debug)]
pub struct AsyncInMemory<T, R>(PhantomData<fn() -> (T, R)>);

impl<T: Timer + Default, R: Runtime> Target for AsyncInMemory<T, R> {
    type Runtime = R;
    type DefaultClock = T::DefaultClock;
    type Backend<C: Clock> = AsyncInMemoryBackend<C, T>;
    type Executor<C: Clock> = AsyncIdempotency<AsyncInMemoryBackend<C, T>, T>;

    fn build<C: Clock>(settings: Settings, clock: C) -> AsyncInMemoryBackend<C, T> {
        settings.build::<Async<T>, C>(clock)
    }
}

impl<T: Timer + Default, R: Runtime> AsyncTarget for AsyncInMemory<T, R> {
    fn run_purger<C: Clock>(
        backend: &AsyncInMemoryBackend<C, T>,
    ) -> impl Future<Output = ()> + Send {
        backend.run_purger()
    }
}
