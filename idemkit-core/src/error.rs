//! [`Error`]: why a store, backend or executor could not do what was asked.

use crate::token::RandomSourceError;

/// The source of an [`Error::Storage`]: whatever error the backend's store reported.
pub type StorageSource = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a store or backend refused or failed an operation.
///
/// Every variant is the failure of one operation on a store that was set up right; a
/// setting that cannot work is refused while setting up, with a [`ConfigError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store holds `max_size` live records, so a new key cannot be claimed. Existing
    /// keys still work, and slots free up as records expire. There is deliberately no LRU:
    /// evicting a claimed record would let a duplicate run.
    #[error("the store is full: it holds its maximum of {max_size} records")]
    Full {
        /// The capacity the store was built with.
        max_size: usize,
    },
    /// The store's [`RandomSource`](crate::RandomSource) failed, so no claim token could
    /// be drawn.
    #[error("no claim token could be drawn: {0}")]
    Random(#[from] RandomSourceError),
    /// The key is longer than the store accepts (4 GiB).
    #[error("the key is {len} bytes long; keys are limited to 4 GiB")]
    KeyTooLong {
        /// The key's length in bytes.
        len: usize,
    },
    /// The backend's store failed: a lost connection, a time-out, a reply it could not
    /// understand. Whether the operation took effect is unknown; the executors let
    /// [`OnStorageError`](crate::OnStorageError) decide what to do.
    #[error("the idempotency store failed: {0}")]
    Storage(#[source] StorageSource),
}

impl Error {
    /// A [`Error::Storage`] carrying `source`, for backends written outside this crate.
    ///
    /// ```
    /// use idemkit_core::Error;
    ///
    /// let lost = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset");
    /// let error = Error::storage(lost);
    /// assert!(error.to_string().contains("connection reset"));
    /// assert!(std::error::Error::source(&error).is_some());
    /// ```
    pub fn storage(source: impl Into<StorageSource>) -> Error {
        Error::Storage(source.into())
    }
}

/// A setting that cannot work, found while setting something up (a policy, a backend, a
/// layer), apart from [`Error`], which is what an operation can fail with.
///
/// ```
/// use idemkit_core::ConfigError;
///
/// let error = ConfigError::new("lease_ttl", "must be longer than zero");
/// assert_eq!(error.setting(), "lease_ttl");
/// assert_eq!(error.to_string(), "invalid lease_ttl: must be longer than zero");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {setting}: {reason}")]
pub struct ConfigError {
    setting: &'static str,
    reason: String,
}

impl ConfigError {
    /// A refusal of `setting`, saying why in `reason`.
    pub fn new(setting: &'static str, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            setting,
            reason: reason.into(),
        }
    }

    /// The name of the setting that cannot work.
    pub fn setting(&self) -> &'static str {
        self.setting
    }

    /// Why it cannot work.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}
