//! [`SqliteError`]: why an operation on the file failed, handed to the core as an
//! [`Error::Storage`](idemkit_core::Error::Storage); and [`OpenError`]: why a file could
//! not be opened or migrated.

use std::fmt;
use std::path::PathBuf;

use rusqlite::ErrorCode;

/// An operation on the SQLite file that failed: the disk is full, the file is locked by
/// another process for longer than the busy timeout, the file is damaged or gone.
///
/// A write that failed was rolled back: it did not take effect.
#[derive(Debug)]
pub struct SqliteError {
    operation: &'static str,
    cause: Cause,
}

#[derive(Debug)]
pub(crate) enum Cause {
    Sqlite(rusqlite::Error),
    /// Anything else, said in words (the OS random source failed, a connection could
    /// not be opened).
    Other(String),
    /// The async runtime's blocking pool dropped the operation (it is shutting down).
    #[cfg(any(feature = "tokio", feature = "smol"))]
    PoolGone,
}

impl SqliteError {
    pub(crate) fn new(operation: &'static str, cause: Cause) -> SqliteError {
        SqliteError { operation, cause }
    }

    pub(crate) fn sqlite(operation: &'static str, error: rusqlite::Error) -> SqliteError {
        SqliteError::new(operation, Cause::Sqlite(error))
    }

    /// The backend operation that failed: `"claim"`, `"complete"`, `"release"`,
    /// `"renew"`, `"read"`, `"purge"`, `"stats"`...
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// Whether the disk (or the file's page limit, see
    /// [`SqliteBuilder::max_page_count`](crate::SqliteBuilder::max_page_count)) is full.
    pub fn is_full(&self) -> bool {
        self.code() == Some(ErrorCode::DiskFull)
    }

    /// Whether another connection held the file's write lock for longer than the busy
    /// timeout.
    pub fn is_busy(&self) -> bool {
        matches!(
            self.code(),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        )
    }

    /// Whether the file cannot be written (a read-only file or directory).
    pub fn is_read_only(&self) -> bool {
        self.code() == Some(ErrorCode::ReadOnly)
    }

    fn code(&self) -> Option<ErrorCode> {
        match &self.cause {
            Cause::Sqlite(error) => error.sqlite_error_code(),
            _ => None,
        }
    }
}

impl fmt::Display for SqliteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sqlite {} failed: ", self.operation)?;
        match &self.cause {
            Cause::Sqlite(error) => write!(f, "{error}"),
            Cause::Other(what) => f.write_str(what),
            #[cfg(any(feature = "tokio", feature = "smol"))]
            Cause::PoolGone => f.write_str(
                "the async runtime's blocking pool dropped the operation (is it shutting down?)",
            ),
        }
    }
}

impl std::error::Error for SqliteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Cause::Sqlite(error) => Some(error),
            _ => None,
        }
    }
}

impl From<SqliteError> for idemkit_core::Error {
    fn from(error: SqliteError) -> idemkit_core::Error {
        idemkit_core::Error::storage(error)
    }
}

/// Why a file could not be opened as a store, or migrated. Nothing was written to a file
/// this reports on, except by [`OpenError::Sqlite`] during a creation that was rolled back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The table name is not a plain SQL identifier.
    #[error(
        "invalid table name `{name}`: use letters, digits and `_`, not starting with a digit, at most 64 characters"
    )]
    InvalidTable {
        /// The name given.
        name: String,
    },
    /// The file exists but is not an SQLite database (or is encrypted, or damaged in its
    /// header). It was left as it was.
    #[error("{} is not an SQLite database; it was left untouched: {source}", path.display())]
    NotADatabase {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The file or its directory cannot be written: a store must write every claim.
    #[error("{} cannot be written (a read-only file, directory or mount): the store writes every claim", path.display())]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// The file has the table, but not as this version of idemkit-sqlite lays it out:
    /// another program's table, or another schema version. Nothing was changed.
    #[error("{} has a table `{table}` that is not idemkit's schema version {expected}: {found}; {remedy}", path.display())]
    SchemaMismatch {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The schema version this version of the crate reads and writes.
        expected: u32,
        /// What was found instead.
        found: String,
        /// What to do about it.
        remedy: String,
    },
    /// The file is another program's database: it holds tables, none of them idemkit's,
    /// and opening a store does not add its table to it unasked (a path pointed at the
    /// wrong file). [`SqliteBackend::migrate`](crate::SqliteBackend::migrate) adds the
    /// table on purpose. Nothing was changed.
    #[error("{} is another program's database (tables {}; none of idemkit's): the store does not add its table `{table}` to it unasked; point it at a file of its own, or add the table on purpose with `idemkit migrate sqlite://{} --table {table}` (or `SqliteBackend::migrate`); the file was left untouched", path.display(), tables.join(", "), path.display())]
    OtherDatabase {
        /// The file.
        path: PathBuf,
        /// The table that would have been created.
        table: String,
        /// The first few of the tables it holds.
        tables: Vec<String>,
    },
    /// The table does not exist and the builder was told not to create it.
    #[error("{} has no table `{table}`: run `idemkit migrate sqlite://{} --table {table}` (or `SqliteBackend::migrate`) first", path.display(), path.display())]
    Missing {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
    },
    /// SQLite failed while opening, checking or creating the table (a full disk, a lock
    /// held past the busy timeout, an I/O error).
    #[error("opening {} failed: {source}", path.display())]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
}
