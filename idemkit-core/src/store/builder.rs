//! [`StoreBuilder`]: how a [`Store`] is set up.

use std::fmt;
use std::time::Duration;

use crate::error::ConfigError;
use crate::random::{OsRandom, RandomSource};
use crate::store::capacity::Budget;
use crate::store::{KeyHasher, SharedCapacity, Store};

/// Sets up a [`Store`]: its capacity, reclaim grace, random source and key hasher.
/// Start from [`Store::builder`].
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{SeededRandom, Store};
///
/// let store = Store::builder()
///     .max_size(1_000)
///     .reclaim_grace(Duration::from_secs(5))
///     // Tests only: the same seed hands out the same tokens.
///     .random(SeededRandom::new(7))
///     .build()?;
/// assert_eq!(store.max_size(), 1_000);
/// # Ok::<(), idemkit_core::ConfigError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct StoreBuilder {
    max_size: Option<usize>,
    shared_capacity: Option<SharedCapacity>,
    reclaim_grace: Duration,
    random: Box<dyn RandomSource>,
    key_hasher: Option<KeyHasher>,
}

impl StoreBuilder {
    /// The defaults: [`Store::DEFAULT_MAX_SIZE`] records of its own,
    /// [`Store::DEFAULT_RECLAIM_GRACE`], [`OsRandom`] and a fresh [`KeyHasher`].
    pub fn new() -> StoreBuilder {
        StoreBuilder {
            max_size: None,
            shared_capacity: None,
            reclaim_grace: Store::DEFAULT_RECLAIM_GRACE,
            random: Box::new(OsRandom),
            key_hasher: None,
        }
    }

    /// The most records the store holds. A claim of a new key beyond it fails with
    /// [`Error::Full`](crate::Error::Full); a claim in progress is never evicted.
    pub fn max_size(mut self, max_size: usize) -> StoreBuilder {
        self.max_size = Some(max_size);
        self
    }

    /// Counts the store's records against `capacity`, a limit shared with the other
    /// stores given it (the shards of one backend), instead of a limit of its own. It
    /// cannot be combined with [`StoreBuilder::max_size`]: the limit is the capacity's.
    pub fn shared_capacity(mut self, capacity: SharedCapacity) -> StoreBuilder {
        self.shared_capacity = Some(capacity);
        self
    }

    /// How long a claim whose lease lapsed is kept before it is dropped. Until then the
    /// next claim of its key reports [`Claim::Reclaimed`](crate::Claim::Reclaimed) and a
    /// late `complete` with its token can still land; afterwards the key is simply free.
    pub fn reclaim_grace(mut self, reclaim_grace: Duration) -> StoreBuilder {
        self.reclaim_grace = reclaim_grace;
        self
    }

    /// Where the store draws its claim tokens from (default [`OsRandom`]). A
    /// [`SeededRandom`](crate::SeededRandom) makes them repeat from run to run: for tests
    /// and replays only, as anyone who sees one token could then forge the others.
    pub fn random(mut self, random: impl RandomSource) -> StoreBuilder {
        self.random = Box::new(random);
        self
    }

    /// The hasher the store finds keys by (default: one of its own). Stores given clones
    /// of one hasher accept each other's [`HashedKey`](crate::HashedKey)s without hashing
    /// again, which is what lets a sharded backend hash each key once.
    pub fn key_hasher(mut self, key_hasher: KeyHasher) -> StoreBuilder {
        self.key_hasher = Some(key_hasher);
        self
    }

    /// The store, or the setting that cannot work: both a `max_size` and a
    /// `shared_capacity`, which would be two limits for one store.
    pub fn build(self) -> Result<Store, ConfigError> {
        if self.max_size.is_some() && self.shared_capacity.is_some() {
            return Err(ConfigError::new(
                "max_size",
                "a store with a shared_capacity counts against that capacity's limit; \
                 set the limit in SharedCapacity::new and leave max_size out",
            ));
        }
        Ok(self.build_store())
    }

    /// The store; the caller has checked the settings agree.
    pub(super) fn build_store(self) -> Store {
        let capacity = match self.shared_capacity {
            Some(shared) => Budget::shared(shared),
            None => Budget::own(self.max_size.unwrap_or(Store::DEFAULT_MAX_SIZE)),
        };
        let hasher = self.key_hasher.unwrap_or_default();
        Store::from_parts(capacity, self.reclaim_grace, hasher, self.random)
    }
}

impl Default for StoreBuilder {
    fn default() -> StoreBuilder {
        StoreBuilder::new()
    }
}

impl fmt::Debug for StoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreBuilder")
            .field("max_size", &self.max_size)
            .field("shared_capacity", &self.shared_capacity)
            .field("reclaim_grace", &self.reclaim_grace)
            .field("key_hasher", &self.key_hasher)
            .finish_non_exhaustive()
    }
}
