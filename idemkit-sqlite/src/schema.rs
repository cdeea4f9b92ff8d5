//! The table's layout, its schema version, and the checks that keep this crate from ever
//! writing into a table it does not understand.
//!
//! The records live in `<table>`, one row per key; `<table>_meta` holds the schema
//! version and the number of rows, which two triggers keep exact (the capacity limit
//! reads it instead of counting). A table without its companion, a companion with
//! another version, or columns other than these are refused, never changed.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::OpenError;
use crate::table::TableName;

/// The schema version this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The record table's columns, in order.
const COLUMNS: [&str; 11] = [
    "key",
    "fingerprint",
    "fingerprint_version",
    "token",
    "claimed_at",
    "deadline",
    "remove_at",
    "completed_at",
    "status",
    "headers",
    "body",
];

/// What [`migrate`](crate::SqliteBackend::migrate) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Migration {
    /// The table did not exist: it was created, empty, at the current version.
    Created,
    /// The table was at an older schema version and was upgraded from it. (Version 1 is
    /// the first, so nothing is upgraded yet; a later version's step will say this.)
    Upgraded {
        /// The version it was at.
        from: u32,
    },
    /// The table was at the current version already: nothing was changed.
    AlreadyCurrent,
}

impl std::fmt::Display for Migration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Migration::Created => write!(f, "created at schema version {SCHEMA_VERSION}"),
            Migration::Upgraded { from } => {
                write!(f, "upgraded from schema version {from} to {SCHEMA_VERSION}")
            }
            Migration::AlreadyCurrent => {
                write!(
                    f,
                    "already at schema version {SCHEMA_VERSION}: nothing to do"
                )
            }
        }
    }
}

/// Whether opening may create a missing table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Absent {
    /// Create it in a file with no tables or with idemkit's tables only; a file that
    /// holds other tables and none of idemkit's is another program's database, refused.
    Create,
    /// Create it in any database (an explicit migration: the operator asked for it).
    CreateAnywhere,
    /// Refuse a file without it.
    Refuse,
}

/// What the file holds under this table's names.
enum Found {
    Nothing,
    Current,
    Version(u32),
}

/// Makes sure the file holds `table` at the current version: creates it when absent
/// (if allowed), and refuses anything else it does not understand. Runs in one write
/// transaction, so processes opening one new file at once create the table once.
pub(crate) fn ensure(
    connection: &mut Connection,
    path: &Path,
    table: &TableName,
    absent: Absent,
) -> Result<Migration, OpenError> {
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_owned(),
        source,
    };
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite)?;
    let migration = match inspect(&transaction, path, table)? {
        Found::Current => Migration::AlreadyCurrent,
        Found::Nothing if absent == Absent::Refuse => {
            return Err(OpenError::Missing {
                path: path.to_owned(),
                table: table.to_string(),
            });
        }
        Found::Nothing => {
            if absent == Absent::Create {
                refuse_a_foreign_database(&transaction, path, table)?;
            }
            transaction
                .execute_batch(&create_sql(table))
                .map_err(sqlite)?;
            Migration::Created
        }
        Found::Version(version) if version > SCHEMA_VERSION => {
            return Err(mismatch(
                path,
                table,
                format!("schema version {version}, written by a newer idemkit-sqlite"),
                "upgrade this program to an idemkit-sqlite that reads it; the table was left as it is".to_owned(),
            ));
        }
        Found::Version(version) => {
            // No older version exists yet; when one does, its upgrade step goes here.
            return Err(mismatch(
                path,
                table,
                format!("schema version {version}, which no idemkit-sqlite ever wrote"),
                "use another --table; the table was left as it is".to_owned(),
            ));
        }
    };
    transaction.commit().map_err(sqlite)?;
    Ok(migration)
}

/// What the file holds under `table`'s names, refusing what is not idemkit's.
fn inspect(connection: &Connection, path: &Path, table: &TableName) -> Result<Found, OpenError> {
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_owned(),
        source,
    };
    let exists = |name: &str| -> Result<bool, OpenError> {
        connection
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE name = ?1 COLLATE NOCASE",
                [name],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(sqlite)
    };
    let meta = table.meta();
    match (exists(table.as_str())?, exists(&meta)?) {
        (false, false) => return Ok(Found::Nothing),
        (true, false) => {
            return Err(mismatch(
                path,
                table,
                format!("it has no `{meta}` table, so idemkit did not create it"),
                "pass another --table; idemkit never writes into a table it did not create"
                    .to_owned(),
            ));
        }
        (false, true) => {
            return Err(mismatch(
                path,
                table,
                format!("`{meta}` exists but the table itself does not"),
                format!(
                    "drop `{meta}` if the table was removed on purpose, then run `idemkit migrate`"
                ),
            ));
        }
        (true, true) => {}
    }
    let version: Option<i64> = connection
        .query_row(
            &format!("SELECT value FROM \"{meta}\" WHERE name = 'schema_version'"),
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(|source| {
            mismatch(
                path,
                table,
                format!("`{meta}` cannot be read as idemkit's ({source})"),
                "pass another --table; the table was left as it is".to_owned(),
            )
        })?;
    let Some(version) = version else {
        return Err(mismatch(
            path,
            table,
            format!("`{meta}` holds no schema version"),
            "pass another --table; the table was left as it is".to_owned(),
        ));
    };
    let version = u32::try_from(version).unwrap_or(u32::MAX);
    if version != SCHEMA_VERSION {
        return Ok(Found::Version(version));
    }
    let mut columns = Vec::new();
    let mut statement = connection
        .prepare(&format!("PRAGMA table_info(\"{table}\")"))
        .map_err(sqlite)?;
    let mut rows = statement.query([]).map_err(sqlite)?;
    while let Some(row) = rows.next().map_err(sqlite)? {
        columns.push(row.get::<_, String>(1).map_err(sqlite)?);
    }
    if columns != COLUMNS {
        return Err(mismatch(
            path,
            table,
            format!(
                "its columns are ({}), not idemkit's ({})",
                columns.join(", "),
                COLUMNS.join(", ")
            ),
            "pass another --table; the table was left as it is".to_owned(),
        ));
    }
    Ok(Found::Current)
}

/// Refuses a file that holds tables, none of them idemkit's: another program's database,
/// which opening a store must not add to unasked (a path pointed at the wrong file).
/// [`migrate`](crate::SqliteBackend::migrate) adds the table on purpose.
fn refuse_a_foreign_database(
    connection: &Connection,
    path: &Path,
    table: &TableName,
) -> Result<(), OpenError> {
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_owned(),
        source,
    };
    let mut statement = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
        .map_err(sqlite)?;
    let tables = statement
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
        .map_err(sqlite)?;
    let lowercase: Vec<String> = tables
        .iter()
        .map(|name| name.to_ascii_lowercase())
        .collect();
    // Each idemkit table comes with its `<name>_meta` companion.
    let idemkit = lowercase
        .iter()
        .any(|name| lowercase.contains(&format!("{name}_meta")));
    if tables.is_empty() || idemkit {
        return Ok(());
    }
    let mut shown: Vec<String> = tables.iter().take(5).cloned().collect();
    if tables.len() > shown.len() {
        shown.push("...".to_owned());
    }
    Err(OpenError::OtherDatabase {
        path: path.to_owned(),
        table: table.to_string(),
        tables: shown,
    })
}

fn mismatch(path: &Path, table: &TableName, found: String, remedy: String) -> OpenError {
    OpenError::SchemaMismatch {
        path: path.to_owned(),
        table: table.to_string(),
        expected: SCHEMA_VERSION,
        found,
        remedy,
    }
}

/// The statements that create the table at the current version.
fn create_sql(table: &TableName) -> String {
    let meta = table.meta();
    format!(
        "CREATE TABLE \"{table}\" (
            key TEXT PRIMARY KEY NOT NULL,
            fingerprint TEXT NOT NULL,
            fingerprint_version INTEGER NOT NULL,
            token BLOB NOT NULL,
            claimed_at INTEGER NOT NULL,
            deadline INTEGER NOT NULL,
            remove_at INTEGER NOT NULL,
            completed_at INTEGER,
            status INTEGER,
            headers BLOB,
            body BLOB
        ) WITHOUT ROWID;
        CREATE INDEX \"{table}_remove_at\" ON \"{table}\" (remove_at);
        CREATE TABLE \"{meta}\" (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO \"{meta}\" (name, value) VALUES ('schema_version', {SCHEMA_VERSION}), ('records', 0);
        CREATE TRIGGER \"{table}_count_insert\" AFTER INSERT ON \"{table}\" BEGIN
            UPDATE \"{meta}\" SET value = value + 1 WHERE name = 'records';
        END;
        CREATE TRIGGER \"{table}_count_delete\" AFTER DELETE ON \"{table}\" BEGIN
            UPDATE \"{meta}\" SET value = value - 1 WHERE name = 'records';
        END;"
    )
}
