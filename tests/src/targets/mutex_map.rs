//! The [`MutexMap`] backend as targets, through both of its traits.

use std::marker::PhantomData;
use std::sync::Arc;

use idemkit_core::{AsyncIdempotency, Idempotency, ManualClock};

use crate::FrozenTimer;
use crate::backend::{Async, Blocking};
use crate::mutex_map::MutexMap;
use crate::runtime::Runtime;
use crate::runtimes::Threads;
use crate::target::{ExactCapacity, ManualTime, Settings, Target};

/// [`MutexMap`] through `BlockingBackend`, with the blocking `Idempotency`, on threads.
#[derive(Debug)]
pub struct MutexMapBlocking;

impl Target for MutexMapBlocking {
    type Runtime = Threads;
    type Backend = Blocking<MutexMap>;
    type Executor = Idempotency<Arc<MutexMap>>;

    fn build(settings: Settings) -> Blocking<MutexMap> {
        Blocking::new(MutexMap::new(settings.max_size, settings.reclaim_grace))
            .held_records(MutexMap::len)
    }

    fn build_frozen(settings: Settings) -> Option<Blocking<MutexMap>> {
        let backend = MutexMap::new(settings.max_size, settings.reclaim_grace);
        Some(Blocking::new(backend.on_timer(FrozenTimer)).held_records(MutexMap::len))
    }
}

impl ManualTime for MutexMapBlocking {
    fn build_on(settings: Settings, clock: ManualClock) -> Blocking<MutexMap> {
        let backend = MutexMap::new(settings.max_size, settings.reclaim_grace);
        Blocking::new(backend.on_clock(clock)).held_records(MutexMap::len)
    }

    fn build_frozen_on(settings: Settings, clock: ManualClock) -> Option<Blocking<MutexMap>> {
        let backend = MutexMap::new(settings.max_size, settings.reclaim_grace).on_clock(clock);
        Some(Blocking::new(backend.on_timer(FrozenTimer)).held_records(MutexMap::len))
    }
}

impl ExactCapacity for MutexMapBlocking {}

/// [`MutexMap`] through `Backend`, with `AsyncIdempotency`, driven by runtime `R`.
#[derive(Debug)]
pub struct MutexMapAsync<R>(PhantomData<fn() -> R>);

impl<R: Runtime> Target for MutexMapAsync<R> {
    type Runtime = R;
    type Backend = Async<MutexMap>;
    type Executor = AsyncIdempotency<MutexMap>;

    fn build(settings: Settings) -> Async<MutexMap> {
        Async::new(MutexMap::new(settings.max_size, settings.reclaim_grace))
            .held_records(MutexMap::len)
    }

    fn build_frozen(settings: Settings) -> Option<Async<MutexMap>> {
        let backend = MutexMap::new(settings.max_size, settings.reclaim_grace);
        Some(Async::new(backend.on_timer(FrozenTimer)).held_records(MutexMap::len))
    }
}

impl<R: Runtime> ManualTime for MutexMapAsync<R> {
    fn build_on(settings: Settings, clock: ManualClock) -> Async<MutexMap> {
        let backend = MutexMap::new(settings.max_size, settings.reclaim_grace).on_clock(clock);
        Async::new(backend).held_records(MutexMap::len)
    }

    fn build_frozen_on(settings: Settings, clock: ManualClock) -> Option<Async<MutexMap>> {
        let backend = MutexMap::new(settings.max_size, settings.reclaim_grace).on_clock(clock);
        Some(Async::new(backend.on_timer(FrozenTimer)).held_records(MutexMap::len))
    }
}

impl<R: Runtime> ExactCapacity for MutexMapAsync<R> {}
