//! [`InMemoryBuilder`]: how an [`InMemoryBackend`] is configured.

use std::sync::Arc;
use std::time::Duration;

use crate::memory::InMemoryBackend;
use crate::memory::shards::Shards;
use crate::random::{OsRandom, RandomSource};
use crate::rt::{Clock, SystemClock, ThreadTimer, Timer};
use crate::store::Store;

/// Configures an [`InMemoryBackend`]: capacity, reclaim grace, shards, clock and timer.
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
/// assert_eq!(backend.max_size(), 1_000);
/// ```
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Clone)]
pub struct InMemoryBuilder {
    max_size: usize,
    reclaim_grace: Duration,
    shards: usize,
    random: Arc<dyn RandomSource>,
    clock: Option<Arc<dyn Clock>>,
    /// `None`: the [`ThreadTimer`], whose clock is the system's.
    timer: Option<Arc<dyn Timer>>,
}

impl std::fmt::Debug for InMemoryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryBuilder")
            .field("max_size", &self.max_size)
            .field("reclaim_grace", &self.reclaim_grace)
            .field("shards", &self.shards)
            .field("clock", &self.clock.as_ref().map(|_| ".."))
            .finish_non_exhaustive()
    }
}

impl Default for InMemoryBuilder {
    fn default() -> InMemoryBuilder {
        InMemoryBuilder::new()
    }
}

impl InMemoryBuilder {
    /// A builder with the defaults: [`Store::DEFAULT_MAX_SIZE`] records,
    /// [`Store::DEFAULT_RECLAIM_GRACE`], a shard count suited to the machine, the
    /// [`SystemClock`] and the [`ThreadTimer`].
    pub fn new() -> InMemoryBuilder {
        InMemoryBuilder {
            max_size: Store::DEFAULT_MAX_SIZE,
            reclaim_grace: Store::DEFAULT_RECLAIM_GRACE,
            shards: Shards::default_count(),
            random: Arc::new(OsRandom),
            clock: None,
            timer: None,
        }
    }

    /// The most records held at once, across all shards (exact). A claim of a new key
    /// beyond it fails with [`Error::Full`](crate::Error::Full).
    ///
    /// What it bounds in memory, measured on x86-64 Linux with glibc: a completed record
    /// with a body of up to 22 bytes and no headers takes about 183 bytes resident, or
    /// about 263 under the 64-digit names the executors and the HTTP layer store records
    /// by; a longer body adds about its length, and each stored header about 100 bytes
    /// and its value's length (for a short name). Behind the HTTP layer, a 62-byte reply
    /// with its `Content-Type` (a common value, which the layer does not copy) comes to
    /// about 450 bytes a record: a million records, 450 MB.
    pub fn max_size(mut self, max_size: usize) -> InMemoryBuilder {
        self.max_size = max_size;
        self
    }

    /// How long a claim whose lease lapsed is kept so the next claim reports
    /// [`Claim::Reclaimed`](crate::Claim::Reclaimed); then it is dropped.
    pub fn reclaim_grace(mut self, reclaim_grace: Duration) -> InMemoryBuilder {
        self.reclaim_grace = reclaim_grace;
        self
    }

    /// How many independently locked shards to spread keys over (at least one). More
    /// shards let more threads work on distinct keys at once.
    pub fn shards(mut self, shards: usize) -> InMemoryBuilder {
        self.shards = shards.max(1);
        self
    }

    /// Where every shard draws its claim tokens from (default [`OsRandom`]). A
    /// [`SeededRandom`](crate::SeededRandom) is for tests and replays only.
    pub fn random(mut self, random: impl RandomSource) -> InMemoryBuilder {
        self.random = Arc::new(random);
        self
    }

    /// The clock that drives leases and TTLs, such as a
    /// [`ManualClock`](crate::ManualClock). Without one, the timer's clock does.
    pub fn clock(mut self, clock: impl Clock) -> InMemoryBuilder {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The timer that async waits, their time-outs and the purger sleep on, such as
    /// `idemkit-tokio`'s `TokioTimer`. Unless [`InMemoryBuilder::clock`] is given too, leases and
    /// TTLs follow this timer's clock as well. Blocking waits sleep on it too.
    pub fn timer(mut self, timer: impl Timer) -> InMemoryBuilder {
        self.timer = Some(Arc::new(timer));
        self
    }

    /// The backend.
    pub fn build(self) -> InMemoryBackend {
        let (clock, timer): (Arc<dyn Clock>, Arc<dyn Timer>) = match (self.clock, self.timer) {
            (Some(clock), Some(timer)) => (clock, timer),
            (Some(clock), None) => (clock, Arc::new(ThreadTimer)),
            (None, Some(timer)) => (timer.clone(), timer),
            (None, None) => (Arc::new(SystemClock), Arc::new(ThreadTimer)),
        };
        let shards = Shards::new(
            self.max_size,
            self.reclaim_grace,
            self.shards,
            self.random,
            clock,
            timer,
        );
        InMemoryBackend::from_shards(Arc::new(shards))
    }
}
