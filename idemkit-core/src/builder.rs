//! [`Builder`]: one way to configure every in-memory backend, blocking or async.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::blocking::InMemoryBackend;
use crate::clock::{Clock, SystemClock};
use crate::shared::Shared;
use crate::store::Store;

/// Configures an in-memory backend: capacity, reclaim grace, clock, shards.
///
/// `F` says what [`Builder::build`] returns: the blocking [`InMemoryBackend`] by default,
/// or an async adapter's backend (see [`Flavor`]).
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{InMemoryBackend, ManualClock};
///
/// let clock = ManualClock::new();
/// let backend = InMemoryBackend::builder()
///     .max_size(1_000)
///     .reclaim_grace(Duration::from_secs(5))
///     .clock(clock.clone())
///     .build();
/// assert_eq!(backend.len(), 0);
/// ```
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Debug)]
pub struct Builder<C = SystemClock, F = Blocking> {
    max_size: usize,
    reclaim_grace: Duration,
    shards: usize,
    clock: C,
    flavor: PhantomData<fn() -> F>,
}

impl<C: Clock, F: Flavor> Builder<C, F> {
    /// A builder with the defaults: [`Store::DEFAULT_MAX_SIZE`] records,
    /// [`Store::DEFAULT_RECLAIM_GRACE`], a shard count suited to the machine, and `clock`.
    pub fn with_clock(clock: C) -> Builder<C, F> {
        Builder {
            max_size: Store::DEFAULT_MAX_SIZE,
            reclaim_grace: Store::DEFAULT_RECLAIM_GRACE,
            shards: Shared::<C>::default_shards(),
            clock,
            flavor: PhantomData,
        }
    }

    /// The most records held at once, across all shards (exact). A claim of a new key
    /// beyond it fails with [`Error::Full`](crate::Error::Full).
    pub fn max_size(mut self, max_size: usize) -> Self {
        self.max_size = max_size;
        self
    }

    /// How long a claim whose lease lapsed is kept so the next claim reports
    /// [`Claim::Reclaimed`](crate::Claim::Reclaimed); then it is dropped.
    pub fn reclaim_grace(mut self, reclaim_grace: Duration) -> Self {
        self.reclaim_grace = reclaim_grace;
        self
    }

    /// How many independently locked shards to spread keys over (at least one). More
    /// shards let more threads work on distinct keys at once.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = shards.max(1);
        self
    }

    /// The clock that drives leases and TTLs, such as a [`ManualClock`](crate::ManualClock).
    pub fn clock<C2: Clock>(self, clock: C2) -> Builder<C2, F> {
        Builder {
            max_size: self.max_size,
            reclaim_grace: self.reclaim_grace,
            shards: self.shards,
            clock,
            flavor: PhantomData,
        }
    }

    /// The backend.
    pub fn build(self) -> F::Backend<C> {
        let shared = Shared::new(self.max_size, self.reclaim_grace, self.shards, self.clock);
        F::wrap(InMemoryBackend::from_shared(Arc::new(shared)))
    }
}

/// What a [`Builder`] builds: the blocking backend, or an async adapter's wrapper of it.
pub trait Flavor {
    /// The backend type for clock `C`.
    type Backend<C: Clock>;
    /// Wraps the shared blocking backend.
    fn wrap<C: Clock>(backend: InMemoryBackend<C>) -> Self::Backend<C>;
}

/// The [`Flavor`] of the blocking [`InMemoryBackend`].
#[derive(Debug)]
pub struct Blocking;

impl Flavor for Blocking {
    type Backend<C: Clock> = InMemoryBackend<C>;

    fn wrap<C: Clock>(backend: InMemoryBackend<C>) -> InMemoryBackend<C> {
        backend
    }
}
