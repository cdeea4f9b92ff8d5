//! [`Error`]: why a store, backend or executor could not do what was asked.

use crate::token::RandomSourceError;

/// Why a store or backend refused or failed an operation, or an executor refused its
/// policy.
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
    /// The OS random source failed, so no claim token could be drawn.
    #[error("the OS random source failed: {0}")]
    Random(#[from] RandomSourceError),
    /// The key is longer than the store accepts (4 GiB).
    #[error("the key is {len} bytes long; keys are limited to 4 GiB")]
    KeyTooLong {
        /// The key's length in bytes.
        len: usize,
    },
    /// An executor's [`Policy`](crate::Policy) cannot work; the text says why.
    #[error("invalid policy: {0}")]
    InvalidPolicy(String),
}
