//! The in-memory backend as targets: through its blocking trait on threads, and through
//! its async trait on a runtime with that runtime's timer.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use idemkit_core::{AsyncIdempotency, Idempotency, InMemoryBackend, ManualClock, Timer};

use crate::FrozenTimer;
use crate::backend::{Async, Blocking};
use crate::runtime::Runtime;
use crate::runtimes::Threads;
use crate::target::{ExactCapacity, ManualTime, Purging, Settings, Target};

/// The in-memory backend, counted by the suite.
fn blocking(backend: InMemoryBackend) -> Blocking<InMemoryBackend> {
    Blocking::new(backend)
        .held_records(InMemoryBackend::len)
        .watched_keys(InMemoryBackend::watched_keys)
}

/// The in-memory backend, counted by the suite.
fn counted(backend: InMemoryBackend) -> Async<InMemoryBackend> {
    Async::new(backend)
        .held_records(InMemoryBackend::len)
        .watched_keys(InMemoryBackend::watched_keys)
}

fn builder(settings: Settings) -> idemkit_core::InMemoryBuilder {
    InMemoryBackend::builder()
        .max_size(settings.max_size)
        .reclaim_grace(settings.reclaim_grace)
}

/// `idemkit_core::InMemoryBackend` through `BlockingBackend`, with the blocking
/// `Idempotency`, driven from OS threads.
#[derive(Debug)]
pub struct InMemoryBlocking;

impl Target for InMemoryBlocking {
    type Runtime = Threads;
    type Backend = Blocking<InMemoryBackend>;
    type Executor = Idempotency<Arc<InMemoryBackend>>;

    fn build(settings: Settings) -> Blocking<InMemoryBackend> {
        blocking(builder(settings).build())
    }

    fn build_frozen(settings: Settings) -> Option<Blocking<InMemoryBackend>> {
        Some(blocking(builder(settings).timer(FrozenTimer).build()))
    }
}

impl ManualTime for InMemoryBlocking {
    fn build_on(settings: Settings, clock: ManualClock) -> Blocking<InMemoryBackend> {
        blocking(builder(settings).clock(clock).build())
    }

    fn build_frozen_on(
        settings: Settings,
        clock: ManualClock,
    ) -> Option<Blocking<InMemoryBackend>> {
        Some(blocking(
            builder(settings).clock(clock).timer(FrozenTimer).build(),
        ))
    }
}

impl ExactCapacity for InMemoryBlocking {}

/// `idemkit_core::InMemoryBackend` through `Backend`, with `AsyncIdempotency`, its waits
/// on timer `T`, driven by runtime `R` (the one `T` sleeps on).
#[derive(Debug)]
pub struct InMemoryAsync<T, R>(PhantomData<fn() -> (T, R)>);

impl<T: Timer + Default, R: Runtime> Target for InMemoryAsync<T, R> {
    type Runtime = R;
    type Backend = Async<InMemoryBackend>;
    type Executor = AsyncIdempotency<InMemoryBackend>;

    fn build(settings: Settings) -> Async<InMemoryBackend> {
        counted(builder(settings).timer(T::default()).build())
    }

    fn build_frozen(settings: Settings) -> Option<Async<InMemoryBackend>> {
        Some(counted(builder(settings).timer(FrozenTimer).build()))
    }
}

impl<T: Timer + Default, R: Runtime> ManualTime for InMemoryAsync<T, R> {
    fn build_on(settings: Settings, clock: ManualClock) -> Async<InMemoryBackend> {
        counted(builder(settings).timer(T::default()).clock(clock).build())
    }

    fn build_frozen_on(settings: Settings, clock: ManualClock) -> Option<Async<InMemoryBackend>> {
        Some(counted(
            builder(settings).timer(FrozenTimer).clock(clock).build(),
        ))
    }
}

impl<T: Timer + Default, R: Runtime> ExactCapacity for InMemoryAsync<T, R> {}

impl<T: Timer + Default, R: Runtime> Purging for InMemoryAsync<T, R> {
    fn run_purger(backend: &Async<InMemoryBackend>) -> impl Future<Output = ()> + Send {
        let backend = backend.backend().clone();
        async move { backend.run_purger().await }
    }
}
