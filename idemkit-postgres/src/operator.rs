//! The operator's side: counts by state and a bounded purge ([`Operator`]), and a purger
//! that runs it in the background.

use std::time::Duration;

use idemkit_core::{Error, Operator, StoreStats};
use sqlx::{AssertSqlSafe, Row};

use crate::backend::PostgresBackend;
use crate::runtime::{Timers, sleep};

/// How many rows one purge statement deletes at most in the background purger.
pub const PURGE_BATCH: usize = 1000;

fn duration_us(micros: Option<i64>) -> Option<Duration> {
    micros.map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0)))
}

impl Operator for PostgresBackend {
    async fn stats(&self) -> Result<StoreStats, Error> {
        let inner = &self.inner;
        let query = sqlx::query(AssertSqlSafe(inner.statements.stats.clone()));
        let row = inner
            .timed("stats", Timers::Auto, query.fetch_one(&inner.pool))
            .await?;
        let count = |i: usize| -> u64 {
            row.try_get::<i64, _>(i)
                .ok()
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0)
        };
        let mut stats = StoreStats::default();
        stats.in_flight = count(0);
        stats.lapsed = count(1);
        stats.completed = count(2);
        stats.purgeable = count(3);
        stats.oldest_claim = duration_us(row.try_get(4).ok().flatten());
        stats.nearest_expiry = duration_us(row.try_get(5).ok().flatten());
        stats.size_bytes = row
            .try_get::<i64, _>(6)
            .ok()
            .and_then(|n| u64::try_from(n).ok());
        Ok(stats)
    }

    async fn purge_batch(&self, limit: usize) -> Result<u64, Error> {
        let inner = &self.inner;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let query = sqlx::query(AssertSqlSafe(inner.statements.purge.clone())).bind(limit);
        let done = inner
            .timed("purge", Timers::Auto, query.execute(&inner.pool))
            .await?;
        Ok(done.rows_affected())
    }
}

impl PostgresBackend {
    /// Deletes every purgeable row (expired results, claims abandoned past the reclaim
    /// grace) in batches of at most `batch` rows, each its own short statement, and says
    /// how many it deleted.
    pub async fn purge(&self, batch: usize) -> Result<u64, Error> {
        let batch = batch.max(1);
        let mut total = 0;
        loop {
            let deleted = self.purge_batch(batch).await?;
            total += deleted;
            if deleted < batch as u64 {
                return Ok(total);
            }
        }
    }

    /// Purges every `every`, forever: spawn it on the application's runtime. A failed
    /// purge is logged and tried again at the next round.
    pub async fn run_purger(self, every: Duration) {
        loop {
            if let Err(error) = self.purge(PURGE_BATCH).await {
                tracing::warn!(%error, "idemkit-postgres: purge failed");
            }
            sleep(Timers::Auto, every).await;
        }
    }
}
