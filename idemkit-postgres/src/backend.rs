//! [`PostgresBackend`]: each operation one statement, within the operation timeout; the
//! async and blocking traits are thin layers over these.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, Error, PollSchedule, Record, Response};
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgConnection, PgPool};

use crate::error::{Cause, storage};
use crate::releases::PendingReleases;
use crate::responses::SharedResponses;
use crate::row::{Stored, columns, decode};
use crate::run_registry::RunRegistry;
use crate::runtime::{Elapsed, Spawner, Timers, sleep, within};
use crate::statements::Statements;
use crate::table::TableName;
use crate::time::{ServerClock, micros};
use crate::wakeups::Wakeups;

/// How many claim statements one `claim` sends at most. One answers almost always; a
/// second is needed only when the row changed between the conflict and its lock in a
/// way the statement could not settle.
const CLAIM_ATTEMPTS: usize = 3;

/// An idempotency backend on PostgreSQL: every process that shares the database (and
/// table) shares the records, durably, so one key runs once across all of them and
/// across restarts.
///
/// Leases and expiry are judged by the database's `clock_timestamp()`. It implements the
/// async [`Backend`](idemkit_core::Backend) (tokio or smol) and
/// [`BlockingBackend`](idemkit_core::BlockingBackend); clones share one pool, one
/// `LISTEN` connection and one configuration. Build it with
/// [`PostgresBackend::builder`].
#[derive(Clone)]
pub struct PostgresBackend {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) pool: PgPool,
    pub(crate) table: TableName,
    pub(crate) statements: Statements,
    pub(crate) reclaim_grace: Duration,
    pub(crate) operation_timeout: Duration,
    pub(crate) wakeups: Arc<Wakeups>,
    pub(crate) spawner: Spawner,
    pub(crate) listener_name: String,
    pub(crate) clock: ServerClock,
    pub(crate) responses: SharedResponses,
    pub(crate) releases: Arc<PendingReleases>,
    pub(crate) runs: RunRegistry,
    /// Reads of a record so far (for tests of the wake-ups).
    pub(crate) reads: std::sync::atomic::AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.wakeups.close();
    }
}

/// What a read found, as a waiter needs it.
pub(crate) enum Found {
    Nothing,
    Claimed {
        record: Record,
        lease_left: Option<Duration>,
    },
    Completed(Record),
}

/// The connection a statement runs on: the pool, or a transaction's.
pub(crate) enum On<'c> {
    Pool,
    Connection(&'c mut PgConnection),
}

impl Inner {
    /// Runs `run` within the operation timeout, mapping its failure to `Error::Storage`.
    pub(crate) async fn timed<T, F>(
        &self,
        operation: &'static str,
        timers: Timers,
        run: F,
    ) -> Result<T, Error>
    where
        F: Future<Output = Result<T, sqlx::Error>>,
    {
        match within(timers, self.operation_timeout, run).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(storage(operation, Cause::Sqlx(error))),
            Err(Elapsed) => Err(storage(operation, Cause::TimedOut(self.operation_timeout))),
        }
    }

    /// Decodes a row of a statement sent at `sent` and answered now.
    fn decode(&self, operation: &'static str, row: &PgRow, sent: Instant) -> Result<Stored, Error> {
        decode(
            operation,
            row,
            (sent, Instant::now()),
            &self.clock,
            &self.responses,
        )
        .map_err(Error::storage)
    }

    /// Waits for a release of `key` this process has in flight, if any.
    pub(crate) async fn settled(&self, key: &str, timers: Timers) {
        self.releases
            .settled(key, timers, self.operation_timeout)
            .await;
    }

    /// Fetches at most one row of `query` on `on`.
    async fn fetch_optional(
        &self,
        operation: &'static str,
        on: On<'_>,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
        timers: Timers,
    ) -> Result<Option<PgRow>, Error> {
        match on {
            On::Pool => {
                self.timed(operation, timers, query.fetch_optional(&self.pool))
                    .await
            }
            On::Connection(connection) => {
                self.timed(operation, timers, query.fetch_optional(connection))
                    .await
            }
        }
    }

    pub(crate) async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
        timers: Timers,
    ) -> Result<Claim, Error> {
        check_text("claim", key)?;
        check_text("claim", fingerprint)?;
        self.settled(key, timers).await;
        let token = ClaimToken::from_bytes(fresh_token()?);
        for _ in 0..CLAIM_ATTEMPTS {
            let query = sqlx::query(AssertSqlSafe(self.statements.claim.clone()))
                .bind(key)
                .bind(token.as_bytes().as_slice())
                .bind(fingerprint)
                .bind(i64::from(fingerprint_version))
                .bind(micros(lease_ttl))
                .bind(micros(self.reclaim_grace));
            let sent = Instant::now();
            let row = self
                .fetch_optional("claim", On::Pool, query, timers)
                .await?
                .ok_or_else(|| {
                    storage("claim", Cause::Invalid("the claim returned no row".into()))
                })?;
            let stored = self.decode("claim", &row, sent)?;
            if stored.token == token {
                self.runs.claimed(key, &token);
                return Ok(if stored.reclaimed {
                    Claim::Reclaimed(token)
                } else {
                    Claim::New(token)
                });
            }
            // Someone else's: it was neither gone nor lapsed when the statement locked it,
            // so a row that looks so now only raced the clock; ask again.
            if stored.gone() || stored.lapsed() {
                continue;
            }
            return Ok(Claim::found(
                stored.into_record(),
                fingerprint,
                fingerprint_version,
            ));
        }
        Err(storage(
            "claim",
            Cause::Invalid("the key kept changing under the claim".into()),
        ))
    }

    pub(crate) async fn complete_on(
        &self,
        on: On<'_>,
        key: &str,
        token: &ClaimToken,
        response: &Arc<Response>,
        expires_after: Duration,
        timers: Timers,
    ) -> Result<bool, Error> {
        let (status, names, values, body) = columns(response);
        for name in &names {
            check_text("complete", name)?;
        }
        let query = sqlx::query(AssertSqlSafe(self.statements.complete.clone()))
            .bind(key)
            .bind(token.as_bytes().as_slice())
            .bind(micros(expires_after))
            .bind(status)
            .bind(names)
            .bind(values)
            .bind(body);
        // Remembered before the statement: a waiter woken by its notification may read
        // the row before this call gets the reply. Harmless if it fails: only an equal
        // response stored by this very claim is ever shared.
        self.responses.remember(key, token, response);
        Ok(self
            .fetch_optional("complete", on, query, timers)
            .await?
            .is_some())
    }

    pub(crate) async fn release(
        &self,
        key: &str,
        token: &ClaimToken,
        timers: Timers,
    ) -> Result<bool, Error> {
        let query = sqlx::query(AssertSqlSafe(self.statements.release.clone()))
            .bind(key)
            .bind(token.as_bytes().as_slice());
        Ok(self
            .fetch_optional("release", On::Pool, query, timers)
            .await?
            .is_some())
    }

    pub(crate) async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
        timers: Timers,
    ) -> Result<bool, Error> {
        self.settled(key, timers).await;
        let query = sqlx::query(AssertSqlSafe(self.statements.renew.clone()))
            .bind(key)
            .bind(token.as_bytes().as_slice())
            .bind(micros(lease_ttl))
            .bind(micros(self.reclaim_grace));
        Ok(self
            .fetch_optional("renew", On::Pool, query, timers)
            .await?
            .is_some())
    }

    /// The row of `key` as stored, gone or not.
    async fn read(&self, key: &str, timers: Timers) -> Result<Option<Stored>, Error> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let query = sqlx::query(AssertSqlSafe(self.statements.read.clone())).bind(key);
        let sent = Instant::now();
        let row = self.fetch_optional("read", On::Pool, query, timers).await?;
        row.map(|row| self.decode("read", &row, sent)).transpose()
    }

    pub(crate) async fn find(&self, key: &str, timers: Timers) -> Result<Found, Error> {
        check_text("read", key)?;
        let Some(stored) = self.read(key, timers).await? else {
            return Ok(Found::Nothing);
        };
        if stored.gone() {
            return Ok(Found::Nothing);
        }
        if stored.completed {
            return Ok(Found::Completed(stored.into_record()));
        }
        let lease_left = (!stored.lapsed()).then(|| stored.now.until(stored.lease_until));
        Ok(Found::Claimed {
            record: stored.into_record(),
            lease_left,
        })
    }

    pub(crate) async fn get(&self, key: &str, timers: Timers) -> Result<Option<Record>, Error> {
        self.settled(key, timers).await;
        Ok(match self.find(key, timers).await? {
            Found::Nothing => None,
            Found::Claimed { record, .. } | Found::Completed(record) => Some(record),
        })
    }

    /// Waits for `key` to complete: registered for its wake-ups before each read, a
    /// re-read on the [`PollSchedule`] as the floor, `None` at once when the owner's lease
    /// has lapsed, and never past `timeout`.
    pub(crate) async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
        timers: Timers,
    ) -> Result<Option<Record>, Error> {
        let deadline = Instant::now().checked_add(timeout);
        let registration = self.wakeups.register(key);
        // Marked as waited on (committed) before the first read: a completion that
        // commits after the read sees the mark and notifies; one before, the read sees.
        check_text("wait", key)?;
        let watch = sqlx::query(AssertSqlSafe(self.statements.watch.clone())).bind(key);
        self.timed("wait", timers, watch.execute(&self.pool))
            .await?;
        let mut polls = PollSchedule::new();
        loop {
            let woken = registration.listen();
            let lease_left = match self.find(key, timers).await? {
                Found::Nothing => return Ok(None),
                Found::Completed(record) => return Ok(Some(record)),
                Found::Claimed {
                    lease_left: None, ..
                } => return Ok(None),
                Found::Claimed {
                    lease_left: Some(left),
                    ..
                } => left,
            };
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() {
                return Ok(None);
            }
            let park = polls.next_park(lease_left).min(left);
            futures_lite::future::or(woken, sleep(timers, park)).await;
        }
    }
}

/// A fresh token from the OS random source.
fn fresh_token() -> Result<[u8; 16], Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| {
        storage(
            "claim",
            Cause::Invalid(format!("the OS random source failed: {error}")),
        )
    })?;
    Ok(bytes)
}

/// PostgreSQL's text cannot hold a NUL character: refuse such input clearly.
fn check_text(operation: &'static str, text: &str) -> Result<(), Error> {
    if text.contains('\0') {
        return Err(storage(
            operation,
            Cause::Invalid("PostgreSQL text cannot hold a NUL character".into()),
        ));
    }
    Ok(())
}

impl PostgresBackend {
    /// The table the records are kept in.
    pub fn table(&self) -> &str {
        self.inner.table.as_str()
    }

    /// The primary key of `key`'s row: the key itself (`SELECT * FROM <table> WHERE key
    /// = ...` finds it).
    pub fn storage_key(&self, key: &str) -> String {
        key.to_owned()
    }

    /// The pool the backend runs its statements on.
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// How long a claim whose lease lapsed is kept, so that the next claim reports it
    /// reclaimed; after that a purge deletes it.
    pub fn reclaim_grace(&self) -> Duration {
        self.inner.reclaim_grace
    }

    /// The longest any one statement may take (pool wait included) before the operation
    /// fails with `Error::Storage`.
    pub fn operation_timeout(&self) -> Duration {
        self.inner.operation_timeout
    }

    /// How many keys this process is waiting on right now.
    pub fn watched_keys(&self) -> usize {
        self.inner.wakeups.watched()
    }

    /// How many record reads this backend has made (waits re-read on each wake-up): for
    /// tests of the wake-ups.
    #[doc(hidden)]
    pub fn reads(&self) -> u64 {
        self.inner.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the backend's `LISTEN` connection is up and listening right now.
    pub fn listening(&self) -> bool {
        self.inner.wakeups.listening()
    }

    /// The `application_name` of the backend's `LISTEN` connection, as
    /// `pg_stat_activity` shows it: unique to this backend.
    pub fn listener_application_name(&self) -> &str {
        &self.inner.listener_name
    }
}

impl fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("table", &self.inner.table.as_str())
            .field("reclaim_grace", &self.inner.reclaim_grace)
            .field("operation_timeout", &self.inner.operation_timeout)
            .finish_non_exhaustive()
    }
}
