//! [`Blocking`]: `idemkit_core::InMemoryBackend` and `Idempotency`, driven from OS
//! threads.

use idemkit_core::{Clock, Idempotency, InMemoryBackend, SystemClock};

use crate::runtimes::Threads;
use crate::target::{Settings, Target};

/// The blocking backend, `idemkit_core::InMemoryBackend`, and its executor,
/// `idemkit_core::Idempotency`.
#[derive(Debug)]
pub struct Blocking;

impl Target for Blocking {
    type Runtime = Threads;
    type DefaultClock = SystemClock;
    type Backend<C: Clock> = InMemoryBackend<C>;
    type Executor<C: Clock> = Idempotency<C>;

    fn build<C: Clock>(settings: Settings, clock: C) -> InMemoryBackend<C> {
        settings.build::<idemkit_core::Blocking, C>(clock)
    }
}
