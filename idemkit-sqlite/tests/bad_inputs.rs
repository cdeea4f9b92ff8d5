//! Files the backend must not write into, and a disk that fills up: each is a clear error
//! at open or an `Error::Storage`, and the file is left as it was.

mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{BlockingBackend, Claim, Error, Response};
use idemkit_sqlite::{OpenError, SqliteBackend, SqliteError};

use support::ScratchFile;

const HOUR: Duration = Duration::from_secs(3600);

fn execute(file: &ScratchFile, sql: &str) {
    let connection = rusqlite::Connection::open(file.path()).unwrap();
    connection.execute_batch(sql).unwrap();
}

/// A file that is not a database is refused at open, by name, and not changed.
#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_untouched() {
    let file = ScratchFile::new("not-a-db");
    let text = b"these are somebody's notes, not a database\n".repeat(100);
    std::fs::write(file.path(), &text).unwrap();
    match SqliteBackend::open(file.path()) {
        Err(error @ OpenError::NotADatabase { .. }) => {
            assert!(
                error.to_string().contains("is not an SQLite database"),
                "{error}"
            );
        }
        other => panic!("expected NotADatabase, got {other:?}"),
    }
    assert!(matches!(
        SqliteBackend::migrate(file.path(), "idemkit_records"),
        Err(OpenError::NotADatabase { .. })
    ));
    assert_eq!(
        std::fs::read(file.path()).unwrap(),
        text,
        "the file was not touched"
    );
}

/// A table of the same name that another program made (no `_meta` companion) is
/// refused by open and by migrate, and its rows stay as they were.
#[test]
fn another_programs_table_is_refused_and_left_as_it_is() {
    let file = ScratchFile::new("foreign");
    execute(
        &file,
        "CREATE TABLE idemkit_records (id INTEGER PRIMARY KEY, note TEXT);
         INSERT INTO idemkit_records (note) VALUES ('keep me');",
    );
    let before = std::fs::read(file.path()).unwrap();
    for error in [
        SqliteBackend::open(file.path()).map(drop).unwrap_err(),
        SqliteBackend::migrate(file.path(), "idemkit_records")
            .map(drop)
            .unwrap_err(),
    ] {
        assert!(
            matches!(error, OpenError::SchemaMismatch { .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("--table"),
            "says what to do: {error}"
        );
    }
    assert_eq!(
        std::fs::read(file.path()).unwrap(),
        before,
        "the file was not touched, journal mode included"
    );
    let connection = rusqlite::Connection::open(file.path()).unwrap();
    let note: String = connection
        .query_row("SELECT note FROM idemkit_records", [], |row| row.get(0))
        .unwrap();
    assert_eq!(note, "keep me");
    // Another table name in the same file works beside it, once added on purpose.
    assert_eq!(
        SqliteBackend::migrate(file.path(), "idemkit_mine").unwrap(),
        idemkit_sqlite::Migration::Created
    );
    let backend = SqliteBackend::builder(file.path())
        .table("idemkit_mine")
        .unwrap()
        .build()
        .unwrap();
    assert!(matches!(
        BlockingBackend::claim(&backend, "k", "fp", 1, HOUR),
        Ok(Claim::New(_))
    ));
}

/// A database of another program (tables, none of them idemkit's) is refused at open,
/// whatever the table asked for, and left exactly as it was, its journal mode included:
/// a store pointed at the wrong file does not move in. `migrate` adds the table to it on
/// purpose, and then it opens.
#[test]
fn another_programs_database_is_refused_and_left_untouched() {
    let file = ScratchFile::new("foreign-db");
    execute(
        &file,
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         INSERT INTO users (name) VALUES ('ada'), ('grace');",
    );
    let before = std::fs::read(file.path()).unwrap();
    for table in ["idemkit_records", "users_idempotency"] {
        let error = SqliteBackend::builder(file.path())
            .table(table)
            .unwrap()
            .build()
            .map(drop)
            .unwrap_err();
        assert!(
            matches!(error, OpenError::OtherDatabase { .. }),
            "{error:?}"
        );
        let text = error.to_string();
        assert!(text.contains("users"), "names what it found: {text}");
        assert!(text.contains(table), "{text}");
        assert!(text.contains("idemkit migrate sqlite://"), "{text}");
    }
    assert_eq!(
        std::fs::read(file.path()).unwrap(),
        before,
        "the file was not touched"
    );
    let connection = rusqlite::Connection::open(file.path()).unwrap();
    let mode: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "not switched to WAL");
    drop(connection);

    assert_eq!(
        SqliteBackend::migrate(file.path(), "idemkit_records").unwrap(),
        idemkit_sqlite::Migration::Created
    );
    let backend = SqliteBackend::open(file.path()).unwrap();
    assert!(matches!(
        BlockingBackend::claim(&backend, "k", "fp", 1, HOUR),
        Ok(Claim::New(_))
    ));
    let connection = rusqlite::Connection::open(file.path()).unwrap();
    let users: i64 = connection
        .query_row("SELECT count(*) FROM users", [], |row| row.get(0))
        .unwrap();
    assert_eq!(users, 2, "the program's rows are as they were");
}

/// A table at another schema version, or with other columns, is refused, saying what
/// was found and what to run; nothing is migrated away.
#[test]
fn another_schema_version_or_shape_is_refused() {
    let file = ScratchFile::new("versions");
    drop(SqliteBackend::open(file.path()).unwrap());
    execute(
        &file,
        "UPDATE idemkit_records_meta SET value = 7 WHERE name = 'schema_version'",
    );
    let error = SqliteBackend::open(file.path()).unwrap_err();
    assert!(error.to_string().contains("schema version 7"), "{error}");
    assert!(error.to_string().contains("newer"), "{error}");
    assert!(SqliteBackend::migrate(file.path(), "idemkit_records").is_err());
    let connection = rusqlite::Connection::open(file.path()).unwrap();
    let version: i64 = connection
        .query_row(
            "SELECT value FROM idemkit_records_meta WHERE name = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(version, 7, "not migrated away");
    drop(connection);

    execute(
        &file,
        "UPDATE idemkit_records_meta SET value = 1 WHERE name = 'schema_version';
         ALTER TABLE idemkit_records ADD COLUMN extra TEXT;",
    );
    let error = SqliteBackend::open(file.path()).unwrap_err();
    assert!(error.to_string().contains("columns"), "{error}");
}

/// A file without the table, opened by a backend told not to create it, names the
/// migrate command to run.
#[test]
fn a_missing_table_names_the_migrate_command() {
    let file = ScratchFile::new("missing");
    let error = SqliteBackend::builder(file.path())
        .require_table()
        .build()
        .unwrap_err();
    assert!(matches!(error, OpenError::Missing { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("idemkit migrate sqlite://"), "{text}");
    assert!(text.contains("--table idemkit_records"), "{text}");
}

/// A bad table name is refused before the file is opened.
#[test]
fn a_table_name_that_is_not_an_identifier_is_refused() {
    let file = ScratchFile::new("badname");
    let error = SqliteBackend::builder(file.path())
        .table("records; DROP TABLE x")
        .unwrap_err();
    assert!(matches!(error, OpenError::InvalidTable { .. }));
    assert!(SqliteBackend::migrate(file.path(), "").is_err());
    assert!(!file.path().exists(), "nothing was created");
}

/// A file that cannot be written is refused at open. As root, file modes do not stop a
/// write, so the file is made immutable (`chattr +i`) instead; where that is not
/// possible the test says so and checks nothing.
#[test]
fn a_read_only_file_is_refused_at_open() {
    let file = ScratchFile::new("read-only");
    drop(SqliteBackend::open(file.path()).unwrap());
    let before = std::fs::read(file.path()).unwrap();
    let root = effective_uid() == 0;
    let locked = if root {
        Command::new("chattr")
            .arg("+i")
            .arg(file.path())
            .status()
            .is_ok_and(|s| s.success())
    } else {
        let mut permissions = std::fs::metadata(file.path()).unwrap().permissions();
        permissions.set_readonly(true);
        std::fs::set_permissions(file.path(), permissions).is_ok()
    };
    if !locked {
        eprintln!("cannot make the file read-only here (no chattr +i as root): not checked");
        return;
    }
    let opened = SqliteBackend::open(file.path());
    let migrated = SqliteBackend::migrate(file.path(), "idemkit_records");
    if root {
        let _ = Command::new("chattr").arg("-i").arg(file.path()).status();
    }
    match opened {
        Err(error @ OpenError::ReadOnly { .. }) => {
            assert!(error.to_string().contains("cannot be written"), "{error}");
        }
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    assert!(migrated.is_err());
    assert_eq!(
        std::fs::read(file.path()).unwrap(),
        before,
        "the file was not touched"
    );
}

/// A file whose permissions give nobody write access is refused at open, even to root
/// (who could write it anyway): its owner marked it read-only, and the store honours
/// that instead of overriding it.
#[test]
fn a_file_whose_permissions_forbid_writing_is_refused_even_for_root() {
    let file = ScratchFile::new("mode-0444");
    drop(SqliteBackend::open(file.path()).unwrap());
    let before = std::fs::read(file.path()).unwrap();
    let mut permissions = std::fs::metadata(file.path()).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(file.path(), permissions.clone()).unwrap();
    let opened = SqliteBackend::open(file.path());
    let migrated = SqliteBackend::migrate(file.path(), "idemkit_records");
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(file.path(), permissions).unwrap();
    match opened {
        Err(error @ OpenError::ReadOnly { .. }) => {
            assert!(error.to_string().contains("read-only"), "{error}");
        }
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    assert!(matches!(migrated, Err(OpenError::ReadOnly { .. })));
    assert_eq!(std::fs::read(file.path()).unwrap(), before);
    SqliteBackend::open(file.path()).expect("opens once writable again");
}

/// The effective user id, from `id -u` (the crate forbids unsafe code, so no libc call).
fn effective_uid() -> u32 {
    let output = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or(u32::MAX)
}

/// A full disk, simulated by capping the file's pages (`PRAGMA max_page_count`; a
/// tiny file system to fill is not available here): a claim or completion that needs
/// room fails with `Error::Storage` whose `SqliteError` says the disk is full; what is
/// stored stays readable, the file stays intact, and it works again once room is made.
#[test]
fn a_full_disk_is_a_storage_error_and_loses_nothing() {
    let file = ScratchFile::new("full");
    let backend = SqliteBackend::builder(file.path())
        .max_page_count(40)
        .build()
        .unwrap();
    let body = vec![1u8; 8 * 1024];
    let mut stored = Vec::new();
    let full = loop {
        let key = format!("k{}", stored.len());
        let token = match BlockingBackend::claim(&backend, &key, "fp", 1, HOUR) {
            Ok(Claim::New(token)) => token,
            Ok(other) => panic!("{other:?}"),
            Err(error) => break error,
        };
        let response = Arc::new(Response::new(200, body.clone()));
        match BlockingBackend::complete(&backend, &key, &token, response, HOUR) {
            Ok(true) => stored.push((key, token)),
            Ok(false) => panic!("the claim was held"),
            Err(error) => break error,
        }
        assert!(stored.len() < 1000, "the page cap never filled the file");
    };
    let Error::Storage(source) = &full else {
        panic!("expected a storage error, got {full:?}");
    };
    let sqlite = source.downcast_ref::<SqliteError>().expect("a SqliteError");
    assert!(sqlite.is_full(), "{sqlite}");
    assert!(full.to_string().contains("full"), "{full}");
    assert!(!stored.is_empty());
    for (key, token) in &stored {
        let record = BlockingBackend::get(&backend, key).unwrap().expect("kept");
        assert_eq!(record.claim_token(), token);
        assert_eq!(record.response().unwrap().body.len(), body.len());
    }
    let connection = rusqlite::Connection::open(file.path()).unwrap();
    let verdict: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(verdict, "ok");
}

/// A row that is not a record (here a claim token of one byte, and a status of 70000)
/// is treated as absent and reported: a read sees nothing, the next claim overwrites it
/// as new; it is never replayed and never an error.
#[test]
fn a_corrupt_row_is_absent_reported_and_overwritten() {
    let file = ScratchFile::new("corrupt");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let backend = {
        let seen = Arc::clone(&seen);
        SqliteBackend::builder(file.path())
            .on_corrupt_record(move |record| seen.lock().unwrap().push(record.clone()))
            .build()
            .unwrap()
    };
    execute(
        &file,
        "INSERT INTO idemkit_records (key, fingerprint, fingerprint_version, token, claimed_at, deadline, remove_at, completed_at, status, headers, body)
         VALUES ('short-token', 'fp', 1, X'00', 0, 9000000000000000000, 9000000000000000000, 0, 200, X'', X''),
                ('bad-status', 'fp', 1, X'00000000000000000000000000000000', 0, 9000000000000000000, 9000000000000000000, 0, 70000, X'', X'');",
    );
    assert!(
        BlockingBackend::get(&backend, "short-token")
            .unwrap()
            .is_none()
    );
    assert!(
        BlockingBackend::wait_for_completion(&backend, "bad-status", HOUR)
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        BlockingBackend::claim(&backend, "short-token", "fp", 1, HOUR),
        Ok(Claim::New(_))
    ));
    assert!(matches!(
        BlockingBackend::claim(&backend, "bad-status", "fp", 1, HOUR),
        Ok(Claim::New(_))
    ));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(!seen[0].overwritten && seen[2].overwritten);
    assert_eq!(seen[0].key, "short-token");
    assert!(seen[1].reason.contains("status"), "{}", seen[1].reason);
    assert_eq!(backend.records().unwrap(), 2, "overwritten in place");
}

/// A write lock another process holds past the busy timeout is a storage error that
/// says so, after about the timeout: never a hang. Reads go on meanwhile (WAL), and the
/// claim works once the lock is gone.
#[test]
fn a_lock_held_past_the_busy_timeout_is_a_storage_error_not_a_hang() {
    let file = ScratchFile::new("busy");
    let backend = SqliteBackend::builder(file.path())
        .busy_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let held = new_claim_blocking(&backend, "held");
    let other = rusqlite::Connection::open(file.path()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let start = std::time::Instant::now();
    let error = BlockingBackend::claim(&backend, "k", "fp", 1, HOUR).unwrap_err();
    let waited = start.elapsed();
    let Error::Storage(source) = &error else {
        panic!("expected a storage error, got {error:?}");
    };
    let sqlite = source.downcast_ref::<SqliteError>().expect("a SqliteError");
    assert!(sqlite.is_busy(), "{sqlite}");
    assert_eq!(sqlite.operation(), "claim");
    assert!(
        waited >= Duration::from_millis(250),
        "gave up after {waited:?}"
    );
    assert!(waited < Duration::from_secs(10), "hung for {waited:?}");
    let record = BlockingBackend::get(&backend, "held")
        .unwrap()
        .expect("reads go on");
    assert_eq!(record.claim_token(), &held);
    other.execute_batch("ROLLBACK").unwrap();
    assert!(matches!(
        BlockingBackend::claim(&backend, "k", "fp", 1, HOUR),
        Ok(Claim::New(_))
    ));
}

fn new_claim_blocking(backend: &SqliteBackend, key: &str) -> idemkit_core::ClaimToken {
    match BlockingBackend::claim(backend, key, "fp", 1, HOUR).unwrap() {
        Claim::New(token) => token,
        other => panic!("expected a new claim, got {other:?}"),
    }
}
