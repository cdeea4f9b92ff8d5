//! SQLite: a file by `sqlite://PATH` (`sqlite:///abs/path.db`, `sqlite://relative.db`),
//! records in `--table` (default `idemkit_records`). The table is created or upgraded by
//! `migrate`; the other commands refuse a file without it rather than create it.

use std::path::{Path, PathBuf};

use idemkit_conformance::backend::Async;
use idemkit_conformance::runner::{Report, Suite};
use idemkit_conformance::runtimes::TokioRuntime;
use idemkit_conformance::{Settings, Target};
use idemkit_core::AsyncIdempotency;
use idemkit_sqlite::{Migration as SqliteMigration, OpenError, SCHEMA_VERSION, SqliteBackend};

use super::check_places::CheckPlaces;
use super::{Checked, Migration, Place, Store, check_table_prefix};
use crate::failure::Failure;

/// An SQLite store, open.
pub struct SqliteStore {
    backend: SqliteBackend,
}

/// The file a `sqlite://PATH` URL names.
fn path_of(place: &Place) -> PathBuf {
    let path = place.url.split_once("://").map_or("", |(_, path)| path);
    PathBuf::from(path)
}

/// What an error opening or migrating the file means to an operator.
fn open_failure(place: &Place, error: OpenError) -> Failure {
    let migrate = format!(
        "idemkit migrate {} --table {}",
        place.shown_url(),
        place.table()
    );
    match error {
        OpenError::InvalidTable { .. } => Failure::usage(error.to_string())
            .remedy("give --table a plain SQL name: letters, digits and _"),
        OpenError::NotADatabase { .. } => Failure::usage(error.to_string())
            .remedy("check the path: it must name the SQLite file the service uses"),
        OpenError::Missing { .. } => {
            Failure::not_ready(error.to_string()).remedy(format!("run `{migrate}`"))
        }
        OpenError::SchemaMismatch { .. } => Failure::not_ready(error.to_string()).remedy(
            format!("if the table is an older idemkit schema, run `{migrate}`; if it is another program's, pass another --table"),
        ),
        OpenError::OtherDatabase { .. } => Failure::not_ready(error.to_string()).remedy(
            format!("check the path names the service's own file; to add the table to this one on purpose, run `{migrate}`"),
        ),
        OpenError::ReadOnly { .. } => Failure::unreachable(error.to_string())
            .remedy("run the command as a user who can write the file and its directory"),
        other => Failure::unreachable(other.to_string())
            .remedy("check that the file's directory exists and can be written, that the disk has room and that no other process holds the file locked, then run the command again"),
    }
}

impl Store for SqliteStore {
    type Backend = SqliteBackend;

    async fn open(place: &Place) -> Result<SqliteStore, Failure> {
        let path = path_of(place);
        // Opening would create a missing file: an operator's typo must not leave one.
        if !path.exists() {
            return Err(Failure::not_ready(format!(
                "there is no SQLite file at {}",
                path.display()
            ))
            .remedy(format!(
                "check the path, or create the store with `idemkit migrate {} --table {}`",
                place.shown_url(),
                place.table()
            )));
        }
        let backend = SqliteBackend::builder(&path)
            .table(place.table())
            .and_then(|builder| builder.require_table().build())
            .map_err(|error| open_failure(place, error))?;
        Ok(SqliteStore { backend })
    }

    fn backend(&self) -> &SqliteBackend {
        &self.backend
    }

    fn describe(place: &Place) -> String {
        format!("{} (table {})", place.shown_url(), place.table())
    }

    fn storage_key(&self, key: &str) -> String {
        self.backend.storage_key(key)
    }

    async fn migrate(place: &Place) -> Result<Migration, Failure> {
        let done = SqliteBackend::migrate(path_of(place), place.table())
            .map_err(|error| open_failure(place, error))?;
        Ok(match done {
            SqliteMigration::Created => Migration::Created {
                version: SCHEMA_VERSION,
            },
            SqliteMigration::Upgraded { from } => Migration::Upgraded {
                from,
                to: SCHEMA_VERSION,
            },
            _ => Migration::Current {
                version: SCHEMA_VERSION,
            },
        })
    }

    fn check(place: &Place, on_report: &mut dyn FnMut(&Report)) -> Result<Checked, Failure> {
        let path = path_of(place);
        let prefix = check_table_prefix();
        // A file the check had to create is removed after it, with its journal files.
        let existed = path.exists();
        // The vectors' tables are made in the deployment's file, beside its table (which
        // is never touched): a file that cannot hold them fails here, clearly.
        SqliteBackend::builder(&path)
            .table(&format!("{prefix}_0"))
            .and_then(|builder| builder.build())
            .map_err(|error| open_failure(place, error))?;
        CHECK_PLACES.begin(path.clone(), prefix.clone());
        let suite = Suite::core::<SqliteCheck>().async_waits::<SqliteCheck>();
        let reports = suite.run(on_report);
        CHECK_PLACES.end();
        let mut left_behind = clean_up(place, &path, &prefix)?;
        if !existed && left_behind == 0 {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut file = path.clone().into_os_string();
                file.push(suffix);
                let file = PathBuf::from(file);
                if file.exists() && std::fs::remove_file(&file).is_err() {
                    left_behind += 1;
                }
            }
        }
        Ok(Checked {
            reports,
            ran_in: format!("tables {prefix}_* of {}", path.display()),
            left_behind,
        })
    }
}

/// Drops every table the check made (with their indexes and triggers); how many are left
/// after.
fn clean_up(place: &Place, path: &Path, prefix: &str) -> Result<u64, Failure> {
    let failed = |error: rusqlite::Error| {
        Failure::unreachable(format!(
            "the check ran, but dropping its tables ({prefix}_*) in {} failed: {error}",
            place.shown_url()
        ))
        .remedy(format!(
            "drop them by hand: sqlite3 {} 'DROP TABLE ...'",
            path.display()
        ))
    };
    let connection = rusqlite::Connection::open(path).map_err(failed)?;
    connection
        .busy_timeout(std::time::Duration::from_secs(30))
        .map_err(failed)?;
    let tables = |connection: &rusqlite::Connection| -> rusqlite::Result<Vec<String>> {
        let mut statement = connection.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?1) = ?2",
        )?;
        let prefix = format!("{prefix}_");
        let names = statement
            .query_map((prefix.len() as i64, prefix.as_str()), |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(names)
    };
    for table in tables(&connection).map_err(failed)? {
        // The names are the check's own, made of letters, digits and `_`.
        connection
            .execute_batch(&format!("DROP TABLE IF EXISTS \"{table}\""))
            .map_err(failed)?;
    }
    Ok(tables(&connection).map_err(failed)?.len() as u64)
}

/// Where the check in progress builds its vectors' backends.
static CHECK_PLACES: CheckPlaces<PathBuf> = CheckPlaces::new();

/// The SQLite backend as the check drives it: through its async trait, on tokio, each
/// vector in a fresh table of the deployment's file.
struct SqliteCheck;

impl Target for SqliteCheck {
    type Runtime = TokioRuntime;
    type Backend = Async<SqliteBackend>;
    type Executor = AsyncIdempotency<SqliteBackend>;

    fn build(settings: Settings) -> Async<SqliteBackend> {
        let (path, table) = CHECK_PLACES.next('_');
        let backend = SqliteBackend::builder(&path)
            .table(&table)
            .map(|builder| builder.reclaim_grace(settings.reclaim_grace))
            .and_then(|builder| builder.build())
            .unwrap_or_else(|error| panic!("cannot open the SQLite file: {error}"));
        // The vectors see its exact record count and its waiters.
        Async::new(backend)
            .held_records(|backend| backend.records().map_or(0, |count| count as usize))
            .watched_keys(SqliteBackend::watched_keys)
    }
}
