//! [`SqliteBackend`] and the synchronous operations both traits are built on.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, Error, Record, Response};
use parking_lot::Mutex;
use rusqlite::Connection;

use crate::clock::FileClock;
use crate::connection::{Settings, Synchronous, configure, connect, open};
use crate::corrupt::OnCorrupt;
use crate::error::{OpenError, SqliteError};
use crate::ops::{self, Found, Rules, Statements};
use crate::releases::Releases;
use crate::responses::SharedResponses;
use crate::schema::{Absent, Migration, ensure};
use crate::table::TableName;
use crate::wakeups::{KeyWatch, Wakeups};

/// How many idle read connections a backend keeps open.
const IDLE_READERS: usize = 8;

/// Idempotency records in one SQLite file, shared by every process on the machine that
/// opens it: see the [crate docs](crate).
///
/// Clones share one set of connections.
#[derive(Clone)]
pub struct SqliteBackend {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) path: PathBuf,
    pub(crate) table: TableName,
    pub(crate) sql: Statements,
    pub(crate) rules: Rules,
    pub(crate) clock: FileClock,
    pub(crate) settings: Settings,
    /// Every write of this process goes through one connection, in turn: a mutex is a
    /// far cheaper queue than SQLite's busy handler, which sleeps. Other processes are
    /// kept apart by the file's lock and the busy timeout.
    writer: Mutex<Connection>,
    /// Read connections not in use.
    readers: Mutex<Vec<Connection>>,
    pub(crate) wakeups: Wakeups,
    responses: SharedResponses,
    pub(crate) releases: Releases,
    on_corrupt: Option<OnCorrupt>,
    /// Claims made by this backend: every [`ops::PURGE_EVERY`]th purges on its way.
    claims: AtomicU64,
    /// The thread that runs the async side's writes.
    pub(crate) writes: crate::writer::Writer,
}

impl SqliteBackend {
    /// Creates the table `table` in the file at `path` (and the file) if missing, or
    /// upgrades it to the current schema version, and says which it did. Run again, it
    /// does nothing and says so. A table it does not understand (another program's, or a
    /// newer version's) is refused and left as it is. Unlike [`open`](SqliteBackend::open),
    /// it adds the table to a database that holds other programs' tables: that is how a
    /// store is put into an existing database on purpose.
    ///
    /// ```
    /// use idemkit_sqlite::{Migration, SqliteBackend};
    ///
    /// let dir = std::env::temp_dir().join(format!("idemkit-doc-migrate-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("records.db");
    /// # let _ = std::fs::remove_file(&path);
    /// assert_eq!(SqliteBackend::migrate(&path, "idemkit_records")?, Migration::Created);
    /// assert_eq!(SqliteBackend::migrate(&path, "idemkit_records")?, Migration::AlreadyCurrent);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn migrate(path: impl AsRef<Path>, table: &str) -> Result<Migration, OpenError> {
        let path = path.as_ref();
        let table = TableName::new(table)?;
        let settings = Settings::DEFAULT;
        let mut connection = connect(path, &settings)?;
        let migration = ensure(&mut connection, path, &table, Absent::CreateAnywhere)?;
        configure(&connection, path, &settings)?;
        Ok(migration)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The records' table.
    pub fn table(&self) -> &TableName {
        &self.inner.table
    }

    /// The value of the `key` column of `key`'s row: the key itself, as the executor
    /// hands it over (already a digest when it comes from `Key`).
    pub fn storage_key(&self, key: &str) -> String {
        key.to_owned()
    }

    /// How long a lapsed claim is kept before it is dropped.
    pub fn reclaim_grace(&self) -> Duration {
        self.inner.rules.reclaim_grace
    }

    /// The most records the file holds, if limited.
    pub fn max_records(&self) -> Option<u64> {
        self.inner.rules.max_records
    }

    /// Rows in the table, gone ones not purged yet included (what the capacity limit
    /// counts).
    pub fn records(&self) -> Result<u64, Error> {
        self.inner
            .read("count", |connection, _| {
                ops::count(connection, &self.inner.sql).map_err(|e| SqliteError::sqlite("count", e))
            })
            .map_err(Error::from)
    }

    /// The `synchronous` level the file is written with, as SQLite reports it on the
    /// backend's write connection.
    pub fn synchronous(&self) -> Result<Synchronous, Error> {
        let level: i64 = self
            .inner
            .write(|connection| connection.query_row("PRAGMA synchronous", [], |row| row.get(0)))
            .map_err(|error| SqliteError::sqlite("read", error))?;
        // SQLite's numbers: 1 is NORMAL, 2 is FULL (3, EXTRA, is never set here).
        Ok(if level == 1 {
            Synchronous::Normal
        } else {
            Synchronous::Full
        })
    }

    /// How many keys have waiters in this process right now.
    pub fn watched_keys(&self) -> usize {
        self.inner.wakeups.watched()
    }
}

impl fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteBackend")
            .field("path", &self.inner.path)
            .field("table", &self.inner.table)
            .field("rules", &self.inner.rules)
            .finish_non_exhaustive()
    }
}

impl Inner {
    pub(crate) fn new(
        path: PathBuf,
        table: TableName,
        rules: Rules,
        clock: FileClock,
        settings: Settings,
        absent: Absent,
        on_corrupt: Option<OnCorrupt>,
    ) -> Result<Inner, OpenError> {
        // The tables are checked before the file is switched to WAL: a file refused is
        // left exactly as it was.
        let mut writer = connect(&path, &settings)?;
        ensure(&mut writer, &path, &table, absent)?;
        configure(&writer, &path, &settings)?;
        Ok(Inner {
            sql: Statements::new(&table),
            path,
            table,
            rules,
            clock,
            settings,
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            wakeups: Wakeups::default(),
            responses: SharedResponses::default(),
            releases: Releases::default(),
            on_corrupt,
            claims: AtomicU64::new(0),
            writes: crate::writer::Writer::default(),
        })
    }

    fn decode(&self) -> ops::Decode<'_> {
        ops::Decode {
            responses: &self.responses,
            on_corrupt: self.on_corrupt.as_ref(),
        }
    }

    /// Runs `work` on the write connection.
    fn write<T>(&self, work: impl FnOnce(&mut Connection) -> T) -> T {
        work(&mut self.writer.lock())
    }

    /// Runs `work` on an idle read connection (opened if none is idle), at the present.
    pub(crate) fn read<T>(
        &self,
        operation: &'static str,
        work: impl FnOnce(&Connection, &crate::clock::Reading) -> Result<T, SqliteError>,
    ) -> Result<T, SqliteError> {
        let idle = self.readers.lock().pop();
        let connection = match idle {
            Some(connection) => connection,
            None => open(&self.path, &self.settings).map_err(|error| match error {
                OpenError::Sqlite { source, .. } | OpenError::NotADatabase { source, .. } => {
                    SqliteError::sqlite(operation, source)
                }
                other => SqliteError::new(operation, crate::error::Cause::Other(other.to_string())),
            })?,
        };
        let result = work(&connection, &self.clock.read());
        let mut readers = self.readers.lock();
        if readers.len() < IDLE_READERS {
            readers.push(connection);
        }
        result
    }

    pub(crate) fn now(&self) -> Instant {
        self.clock.now()
    }

    pub(crate) fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        let claimed = self
            .write(|connection| {
                let now = self.clock.read();
                ops::claim(
                    connection,
                    &self.sql,
                    self.rules,
                    key,
                    fingerprint,
                    fingerprint_version,
                    lease_ttl,
                    &now,
                    &self.decode(),
                    self.claims
                        .fetch_add(1, Ordering::Relaxed)
                        .is_multiple_of(ops::PURGE_EVERY),
                )
            })
            .map_err(ops::ClaimError::into_core)?;
        if claimed.replaced {
            // Waiters of the old claim now watch the new one.
            self.wakeups.wake(key);
        }
        Ok(claimed.claim)
    }

    pub(crate) fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: &Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        // Remembered before the row is written: a read in this process may land as soon
        // as the commit does, before this call returns, and must share this allocation
        // rather than keep one of its own. Remembering a completion that is then refused
        // is harmless: a read shares a remembered response only if it equals the row's.
        self.responses.remember(key, token, response);
        let stored = self
            .write(|connection| {
                let now = self.clock.read();
                ops::complete(
                    connection,
                    &self.sql,
                    key,
                    token,
                    response,
                    expires_after,
                    &now,
                )
            })
            .map_err(|error| SqliteError::sqlite("complete", error))?;
        if stored {
            self.wakeups.wake(key);
        }
        Ok(stored)
    }

    pub(crate) fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        let released = self
            .write(|connection| {
                let now = self.clock.read();
                ops::release(connection, &self.sql, key, token, &now)
            })
            .map_err(|error| SqliteError::sqlite("release", error))?;
        if released {
            self.wakeups.wake(key);
        }
        Ok(released)
    }

    pub(crate) fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        let renewed = self
            .write(|connection| {
                let now = self.clock.read();
                ops::renew(
                    connection, &self.sql, self.rules, key, token, lease_ttl, &now,
                )
            })
            .map_err(|error| SqliteError::sqlite("renew", error))?;
        Ok(renewed)
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        Ok(self.read("read", |connection, now| {
            ops::get(connection, &self.sql, key, now, &self.decode())
        })?)
    }

    pub(crate) fn find(&self, key: &str) -> Result<Found, Error> {
        Ok(self.read("read", |connection, now| {
            ops::watch(connection, &self.sql, key, now, &self.decode())
        })?)
    }

    /// Deletes at most `limit` gone records, then gives free pages back to the file
    /// system; how many records it deleted.
    pub(crate) fn purge_batch(&self, limit: u64) -> Result<u64, Error> {
        let deleted = self
            .write(|connection| {
                let now = self.clock.read();
                let deleted = ops::purge(connection, &self.sql, limit, &now)?;
                if deleted > 0 {
                    // The free pages are those this batch's records held: giving them
                    // back costs what the batch deleted. The pragma frees one page per
                    // row it returns, so every row is stepped through.
                    let mut vacuum = connection.prepare_cached("PRAGMA incremental_vacuum")?;
                    let mut freed = vacuum.query([])?;
                    while freed.next()?.is_some() {}
                }
                Ok(deleted)
            })
            .map_err(|error| SqliteError::sqlite("purge", error))?;
        Ok(deleted)
    }

    pub(crate) fn stats(&self) -> Result<idemkit_core::StoreStats, Error> {
        Ok(self.read("stats", |connection, now| {
            ops::stats(connection, &self.sql, now)
                .map_err(|error| SqliteError::sqlite("stats", error))
        })?)
    }

    /// Starts watching `key` for wake-ups.
    pub(crate) fn watch(&self, key: &str) -> KeyWatch {
        self.wakeups
            .watch(key, || open(&self.path, &self.settings).ok())
    }
}
