//! What an operator asks of a durable store, beside the executor's operations: how many
//! records it holds in which state, and a purge that works in bounded batches.
//!
//! Each store crate implements [`Operator`] for its backend; the `idemkit` command is
//! written against this trait alone, so a new store gets `stats` and `purge` by
//! implementing it.

use std::future::Future;
use std::time::Duration;

use crate::error::Error;

/// Counts of a store's records by state, and the ages an operator looks at first.
///
/// Built with [`StoreStats::default`] and filled field by field, so that a later field
/// does not break a store that does not know it:
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::StoreStats;
///
/// let mut stats = StoreStats::default();
/// stats.in_flight = 2;
/// stats.oldest_claim = Some(Duration::from_secs(3));
/// assert_eq!(stats.completed, 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreStats {
    /// Claims whose lease has not lapsed: a run in progress somewhere.
    pub in_flight: u64,
    /// Claims whose lease has lapsed but that are within the reclaim grace: the next
    /// claim of the key takes them over.
    pub lapsed: u64,
    /// Completed records that have not expired: what retries replay.
    pub completed: u64,
    /// Expired results and claims abandoned past the reclaim grace: what a purge deletes.
    pub purgeable: u64,
    /// How long ago the oldest claim that is still in flight was made.
    pub oldest_claim: Option<Duration>,
    /// How long until the first unexpired completed record expires.
    pub nearest_expiry: Option<Duration>,
    /// The bytes the store takes, where the store can tell (a file's size, a table's).
    pub size_bytes: Option<u64>,
}

/// A store's operator-facing side: counts by state and a bounded purge.
///
/// Times are judged by the store's own clock, the one its leases are judged by.
pub trait Operator: Send + Sync {
    /// Counts the store's records by state.
    fn stats(&self) -> impl Future<Output = Result<StoreStats, Error>> + Send;

    /// Deletes at most `limit` purgeable records (expired results, and claims abandoned
    /// past the reclaim grace) and says how many it deleted: fewer than `limit` means
    /// none is left. Each call is short, so a purge of many records never holds a long
    /// lock; call it until it returns less than `limit`.
    fn purge_batch(&self, limit: usize) -> impl Future<Output = Result<u64, Error>> + Send;
}
