//! Opening a connection to the file with the settings every connection shares: WAL, the
//! busy timeout, the `synchronous` level, the page limit.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, MAIN_DB, OpenFlags};

use crate::error::OpenError;

/// How much a commit waits for the disk: what an acknowledged write survives.
///
/// In WAL mode, which this crate always uses, both levels keep the file intact through a
/// crash of the process (`kill -9` mid-write) and of the machine; they differ in what an
/// acknowledged write survives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// `synchronous=FULL`, the default: every commit is flushed to the disk (`fsync` of
    /// the write-ahead log) before it is acknowledged, so a claim or a result that was
    /// acknowledged survives a crash of the process, of the operating system and a loss
    /// of power. Nothing acknowledged is lost.
    #[default]
    Full,
    /// `synchronous=NORMAL`: commits reach the operating system but are flushed only at
    /// checkpoints. An acknowledged write survives a crash of the process, but a crash of
    /// the operating system or a loss of power may undo the last ones (the file stays
    /// intact): a completed result lost that way runs again on retry. Faster on disks
    /// with slow flushes.
    Normal,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// The size, in bytes, the write-ahead log is cut back to after a checkpoint empties it
/// (`PRAGMA journal_size_limit`): about what SQLite's automatic checkpoint lets it reach.
pub(crate) const WAL_SIZE_LIMIT: i64 = 4 * 1024 * 1024;

/// What every connection to the file is opened with.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) busy_timeout: Duration,
    pub(crate) synchronous: Synchronous,
    pub(crate) max_page_count: Option<u32>,
}

impl Settings {
    /// The settings of [`SqliteBackend::open`](crate::SqliteBackend::open) and
    /// [`SqliteBackend::migrate`](crate::SqliteBackend::migrate): a write waits 5 s for
    /// another process's, every commit is synced, and the file has no size limit.
    pub(crate) const DEFAULT: Settings = Settings {
        busy_timeout: Duration::from_secs(5),
        synchronous: Synchronous::Full,
        max_page_count: None,
    };
}

/// A connection to `path`, created if missing, in WAL mode with `settings`. A file that
/// is not a database, or that cannot be written, is refused before anything is written.
pub(crate) fn open(path: &Path, settings: &Settings) -> Result<Connection, OpenError> {
    let connection = connect(path, settings)?;
    configure(&connection, path, settings)?;
    Ok(connection)
}

/// A connection to `path`, created if missing, with the busy timeout but nothing yet
/// written to the file: the journal mode is the file's own. A file that is not a
/// database, or that cannot be written, is refused here. The schema is checked on this
/// connection before [`configure`] switches the file to WAL, so that a file refused for
/// its tables is left exactly as it was, journal mode included.
pub(crate) fn connect(path: &Path, settings: &Settings) -> Result<Connection, OpenError> {
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_owned(),
        source,
    };
    // Write permission nobody has: its owner marked it read-only. Root could write it
    // anyway, and SQLite would; a store honours the mark instead of overriding it.
    if std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().readonly()) {
        return Err(OpenError::ReadOnly {
            path: path.to_owned(),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags).map_err(|source| {
        if source.sqlite_error_code() == Some(ErrorCode::ReadOnly)
            || source.sqlite_error_code() == Some(ErrorCode::CannotOpen) && read_only(path)
        {
            OpenError::ReadOnly {
                path: path.to_owned(),
            }
        } else {
            sqlite(source)
        }
    })?;
    connection
        .busy_timeout(settings.busy_timeout)
        .map_err(sqlite)?;
    // SQLite reads the file's header at the first statement: a file that is not a
    // database is found here, before anything is written to it.
    let tables: i64 = connection
        .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
        .map_err(|source| match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => OpenError::NotADatabase {
                path: path.to_owned(),
                source,
            },
            _ => sqlite(source),
        })?;
    if connection.is_readonly(MAIN_DB).map_err(sqlite)? {
        return Err(OpenError::ReadOnly {
            path: path.to_owned(),
        });
    }
    if tables == 0 {
        // A new file: let it give pages back (`PRAGMA incremental_vacuum`). Only
        // possible before the first table is created.
        connection
            .pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(sqlite)?;
    }
    Ok(connection)
}

/// Switches the file to WAL (a no-op once it is) and sets `settings` on `connection`.
pub(crate) fn configure(
    connection: &Connection,
    path: &Path,
    settings: &Settings,
) -> Result<(), OpenError> {
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_owned(),
        source,
    };
    let mode: String = connection
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(|source| match source.sqlite_error_code() {
            Some(ErrorCode::ReadOnly) => OpenError::ReadOnly {
                path: path.to_owned(),
            },
            _ => sqlite(source),
        })?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(sqlite(rusqlite::Error::InvalidParameterName(format!(
            "the file stays in journal mode `{mode}`; it must be able to use WAL"
        ))));
    }
    connection
        .pragma_update(None, "synchronous", settings.synchronous.pragma())
        .map_err(sqlite)?;
    // The write-ahead log grows past its checkpoint size while a reader holds a burst
    // of commits back, and a WAL file never shrinks by itself: cut it back to this once
    // a checkpoint has emptied it, so a long-lived file keeps no peak on disk.
    let _: i64 = connection
        .pragma_update_and_check(None, "journal_size_limit", WAL_SIZE_LIMIT, |row| row.get(0))
        .map_err(sqlite)?;
    if let Some(pages) = settings.max_page_count {
        let _: i64 = connection
            .pragma_update_and_check(None, "max_page_count", pages, |row| row.get(0))
            .map_err(sqlite)?;
    }
    Ok(())
}

/// Whether `path` or, for a file not made yet, its directory cannot be written.
fn read_only(path: &Path) -> bool {
    let probe = if path.exists() {
        path.to_owned()
    } else {
        path.parent().map(Path::to_owned).unwrap_or_default()
    };
    std::fs::metadata(probe).is_ok_and(|meta| meta.permissions().readonly())
}
