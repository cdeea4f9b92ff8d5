//! [`Blocking`]: `idemkit_core::InMemoryBackend`, driven from OS threads.

use idemkit_core::{Clock, InMemoryBackend, SystemClock};

use crate::runtimes::Threads;
use crate::target::{Settings, Target};

/// The blocking backend, `idemkit_core::InMemoryBackend`.
#[derive(Debug)]
pub struct Blocking;

impl Target for Blocking {
    type Runtime = Threads;
    type DefaultClock = SystemClock;
    type Backend<C: Clock> = InMemoryBackend<C>;

    fn build<C: Clock>(settings: Settings, clock: C) -> InMemoryBackend<C> {
        settings.build::<idemkit_core::Blocking, C>(clock)
    }
}
