//! [`SqliteBuilder`]: the file, the table and everything else a [`SqliteBackend`] is opened with.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Clock, Store};

use crate::backend::{Inner, SqliteBackend};
use crate::clock::FileClock;
use crate::connection::{Settings, Synchronous};
use crate::corrupt::{CorruptRecord, OnCorrupt};
use crate::error::OpenError;
use crate::ops::Rules;
use crate::schema::Absent;
use crate::table::TableName;

/// How to open a [`SqliteBackend`]: the file, and everything else.
///
/// ```
/// use std::time::Duration;
/// use idemkit_sqlite::{SqliteBackend, Synchronous};
///
/// let dir = std::env::temp_dir().join(format!("idemkit-doc-builder-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let backend = SqliteBackend::builder(dir.join("records.db"))
///     .table("payments_idempotency")?
///     .reclaim_grace(Duration::from_secs(30))
///     .max_records(1_000_000)
///     .synchronous(Synchronous::Full)
///     .build()?;
/// assert_eq!(backend.table().as_str(), "payments_idempotency");
/// # drop(backend);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct SqliteBuilder {
    path: PathBuf,
    table: TableName,
    rules: Rules,
    settings: Settings,
    clock: FileClock,
    absent: Absent,
    on_corrupt: Option<OnCorrupt>,
}

// The backend's shortest way in goes through the builder, so it is written beside it:
// the backend's own file needs nothing from this one.
impl SqliteBackend {
    /// A backend on the file at `path` with the defaults: table `idemkit_records`
    /// (created if the file has none), 60 s reclaim grace, no capacity limit,
    /// `synchronous=FULL`, 5 s busy timeout. A missing file is created.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteBackend, OpenError> {
        SqliteBuilder::new(path).build()
    }
}

impl SqliteBuilder {
    /// The busy timeout unless set: how long a write waits for another process's.
    pub const DEFAULT_BUSY_TIMEOUT: Duration = Settings::DEFAULT.busy_timeout;

    /// A builder for the file at `path` (created if missing), with the defaults of
    /// [`SqliteBackend::open`].
    pub fn new(path: impl AsRef<Path>) -> SqliteBuilder {
        SqliteBuilder {
            path: path.as_ref().to_owned(),
            table: TableName::default(),
            rules: Rules {
                reclaim_grace: Store::DEFAULT_RECLAIM_GRACE,
                max_records: None,
            },
            settings: Settings::DEFAULT,
            clock: FileClock::system(),
            absent: Absent::Create,
            on_corrupt: None,
        }
    }

    /// The records' table (default `idemkit_records`): a plain identifier, see
    /// [`TableName`]. Processes that share a file and a table share their records.
    pub fn table(mut self, name: &str) -> Result<SqliteBuilder, OpenError> {
        self.table = TableName::new(name)?;
        Ok(self)
    }

    /// How long a claim whose lease lapsed is kept so the next claim reports
    /// `Reclaimed` (default 60 s). It is written into each claim's row, so processes
    /// sharing a table should use the same.
    pub fn reclaim_grace(mut self, reclaim_grace: Duration) -> SqliteBuilder {
        self.rules.reclaim_grace = reclaim_grace;
        self
    }

    /// At most `max_records` rows: a claim of a new key beyond that first deletes gone
    /// records, then is refused with `Error::Full` if there is still no room. Nothing is
    /// ever evicted. Unlimited unless set.
    pub fn max_records(mut self, max_records: u64) -> SqliteBuilder {
        self.rules.max_records = Some(max_records);
        self
    }

    /// What an acknowledged write survives (default [`Synchronous::Full`]: everything).
    pub fn synchronous(mut self, synchronous: Synchronous) -> SqliteBuilder {
        self.settings.synchronous = synchronous;
        self
    }

    /// How long a write waits for another process's write lock before it fails with a
    /// busy [`SqliteError`](crate::SqliteError) (default 5 s).
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> SqliteBuilder {
        self.settings.busy_timeout = busy_timeout;
        self
    }

    /// Caps the file at `pages` pages (`PRAGMA max_page_count`, of 4 KiB each unless
    /// the file says otherwise): a write that would grow it further fails as if the disk
    /// were full ([`SqliteError::is_full`](crate::SqliteError::is_full)). No cap unless
    /// set. The tests use it to show what a full disk does.
    pub fn max_page_count(mut self, pages: u32) -> SqliteBuilder {
        self.settings.max_page_count = Some(pages);
        self
    }

    /// Judges leases and results by `clock` instead of the machine's wall clock, for
    /// tests: a test moves every lease by moving a
    /// [`ManualClock`](idemkit_core::ManualClock). Times are written to the file as the
    /// wall clock at build plus how far `clock` has moved, so other processes on the
    /// machine's clock read them as if that much time had passed.
    pub fn clock(mut self, clock: impl Clock) -> SqliteBuilder {
        self.clock = FileClock::following(Arc::new(clock));
        self
    }

    /// Refuses a file without the table (with an error naming the `idemkit migrate`
    /// command to run) instead of creating it: for deployments whose tables are made by
    /// a migration step.
    pub fn require_table(mut self) -> SqliteBuilder {
        self.absent = Absent::Refuse;
        self
    }

    /// Calls `callback` with each row found that is not a record (see
    /// [`CorruptRecord`]), besides logging it with `tracing`.
    pub fn on_corrupt_record(
        mut self,
        callback: impl Fn(&CorruptRecord) + Send + Sync + 'static,
    ) -> SqliteBuilder {
        self.on_corrupt = Some(Arc::new(callback));
        self
    }

    /// Opens the file: refuses a file that is not a database, cannot be written (its
    /// permissions give nobody write access, or the file system refuses) or holds the
    /// table in a layout this version does not read, and creates the table if it is
    /// missing (unless [`SqliteBuilder::require_table`]), but only in a new or empty file or
    /// one holding idemkit's tables: a database of other tables only is another
    /// program's, refused ([`SqliteBackend::migrate`] adds the table to it on purpose).
    /// A refused file is left exactly as it was.
    pub fn build(self) -> Result<SqliteBackend, OpenError> {
        let inner = Inner::new(
            self.path,
            self.table,
            self.rules,
            self.clock,
            self.settings,
            self.absent,
            self.on_corrupt,
        )?;
        Ok(SqliteBackend {
            inner: Arc::new(inner),
        })
    }
}

impl std::fmt::Debug for SqliteBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteBuilder")
            .field("path", &self.path)
            .field("table", &self.table)
            .field("rules", &self.rules)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}
