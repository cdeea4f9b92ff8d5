//! The operator's side of the store: counts by state and a bounded purge, for the
//! `idemkit` command; and a purger loop for services that want one.

use std::time::Duration;

use idemkit_core::{Error, StoreStats};

use crate::backend::SqliteBackend;

impl SqliteBackend {
    /// Counts the file's records by state (one scan of the table), blocking.
    pub fn stats_blocking(&self) -> Result<StoreStats, Error> {
        self.inner.stats()
    }

    /// Deletes at most `limit` gone records (expired results, claims lapsed past the
    /// reclaim grace), then hands free pages back to the file system (`PRAGMA
    /// incremental_vacuum`), blocking; how many records it deleted. Fewer than `limit`
    /// means none is left. Each call is one short write transaction.
    pub fn purge_batch_blocking(&self, limit: usize) -> Result<u64, Error> {
        self.inner.purge_batch(limit as u64)
    }

    /// Purges gone records in batches of [`PURGE_BATCH`](SqliteBackend::PURGE_BATCH)
    /// every [`PURGE_INTERVAL`](SqliteBackend::PURGE_INTERVAL), forever: spawn it on the
    /// service's runtime so a file that sees no new claims still shrinks. A failed batch
    /// is tried again at the next interval.
    pub async fn run_purger(&self) {
        loop {
            loop {
                match idemkit_core::Operator::purge_batch(self, Self::PURGE_BATCH).await {
                    Ok(deleted) if deleted as usize >= Self::PURGE_BATCH => continue,
                    _ => break,
                }
            }
            crate::runtime::sleep(Self::PURGE_INTERVAL).await;
        }
    }

    /// How many records one purge batch of [`SqliteBackend::run_purger`] deletes at most.
    pub const PURGE_BATCH: usize = 500;
    /// How often [`SqliteBackend::run_purger`] looks for gone records.
    pub const PURGE_INTERVAL: Duration = Duration::from_millis(500);
}

impl idemkit_core::Operator for SqliteBackend {
    async fn stats(&self) -> Result<StoreStats, Error> {
        let inner = std::sync::Arc::clone(&self.inner);
        crate::runtime::unblock("stats", move || inner.stats()).await?
    }

    async fn purge_batch(&self, limit: usize) -> Result<u64, Error> {
        let inner = std::sync::Arc::clone(&self.inner);
        self.inner
            .writes
            .run("purge", move || inner.purge_batch(limit as u64))
            .await?
    }
}
