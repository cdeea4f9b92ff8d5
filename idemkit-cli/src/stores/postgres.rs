//! PostgreSQL: a database by `postgres://USER[:PASSWORD]@HOST:PORT/DB`, records in
//! `--table` (default `idemkit_records`). The table is created or upgraded by `migrate`;
//! the other commands refuse a database without it, saying what to run.

use std::time::Duration;

use idemkit_conformance::backend::Async;
use idemkit_conformance::runner::{Report, Suite};
use idemkit_conformance::runtimes::TokioRuntime;
use idemkit_conformance::{Settings, Target};
use idemkit_core::AsyncIdempotency;
use idemkit_postgres::sqlx::postgres::PgPoolOptions;
use idemkit_postgres::sqlx::{self, PgPool};
use idemkit_postgres::{
    BuildError, Migration as PostgresMigration, PostgresBackend, SCHEMA_VERSION,
};

use super::check_places::CheckPlaces;
use super::{Checked, Migration, Place, Store, check_table_prefix};
use crate::failure::Failure;

/// How long connecting may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A PostgreSQL store, connected.
pub struct PostgresStore {
    backend: PostgresBackend,
}

/// What an error connecting or migrating means to an operator.
fn build_failure(place: &Place, error: BuildError) -> Failure {
    let url = place.shown_url();
    let migrate = format!("idemkit migrate {url} --table {}", place.table());
    match error {
        BuildError::BadUrl(_) | BuildError::InvalidTable(_) | BuildError::NoDatabase => {
            Failure::usage(format!("cannot use {url}: {error}")).remedy(
                "give a URL of the form postgres://USER[:PASSWORD]@HOST:PORT/DB and a table \
                 name of lowercase letters, digits and _",
            )
        }
        BuildError::Schema(why) => {
            Failure::not_ready(format!("{url}: {why}")).remedy(format!("run `{migrate}`"))
        }
        other => unreachable_failure(place, &other.to_string()),
    }
}

fn unreachable_failure(place: &Place, why: &str) -> Failure {
    let url = place.shown_url();
    Failure::unreachable(format!(
        "cannot reach the PostgreSQL server at {url}: {why}"
    ))
    .remedy(format!(
        "check that PostgreSQL runs there and that the URL's host, port, database, user \
             and password are right (try `psql {url} -c 'select 1'`)"
    ))
}

/// A small pool on `place`'s database, for migrating and cleaning up.
async fn pool(place: &Place) -> Result<PgPool, Failure> {
    PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect(&place.url)
        .await
        .map_err(|error| match error {
            sqlx::Error::Configuration(_) => {
                Failure::usage(format!("cannot use {}: {error}", place.shown_url()))
                    .remedy("give a URL of the form postgres://USER[:PASSWORD]@HOST:PORT/DB")
            }
            other => unreachable_failure(place, &other.to_string()),
        })
}

impl Store for PostgresStore {
    type Backend = PostgresBackend;

    async fn open(place: &Place) -> Result<PostgresStore, Failure> {
        let backend = PostgresBackend::builder()
            .url(&place.url)
            .table(place.table())
            .build()
            .await
            .map_err(|error| build_failure(place, error))?;
        Ok(PostgresStore { backend })
    }

    fn backend(&self) -> &PostgresBackend {
        &self.backend
    }

    fn describe(place: &Place) -> String {
        format!("{} (table {})", place.shown_url(), place.table())
    }

    fn storage_key(&self, key: &str) -> String {
        self.backend.storage_key(key)
    }

    async fn migrate(place: &Place) -> Result<Migration, Failure> {
        let pool = pool(place).await?;
        let done = idemkit_postgres::migrate(&pool, place.table())
            .await
            .map_err(|error| build_failure(place, error))?;
        pool.close().await;
        Ok(match done {
            PostgresMigration::Created => Migration::Created {
                version: SCHEMA_VERSION,
            },
            PostgresMigration::Upgraded { from } => Migration::Upgraded {
                from,
                to: SCHEMA_VERSION,
            },
            PostgresMigration::Current => Migration::Current {
                version: SCHEMA_VERSION,
            },
        })
    }

    fn check(place: &Place, on_report: &mut dyn FnMut(&Report)) -> Result<Checked, Failure> {
        let prefix = check_table_prefix();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|error| {
                Failure::unreachable(format!("cannot start an async runtime: {error}"))
            })?;
        // Reachable, and allowed to create a table: else every vector would fail alike.
        runtime.block_on(async {
            let backend = PostgresBackend::builder()
                .url(&place.url)
                .table(&format!("{prefix}_0"))
                .migrate(true)
                .build()
                .await
                .map_err(|error| build_failure(place, error))?;
            drop(backend);
            Ok::<(), Failure>(())
        })?;
        CHECK_PLACES.begin(place.url.clone(), prefix.clone());
        let suite = Suite::core::<PostgresCheck>().async_waits::<PostgresCheck>();
        let reports = suite.run(on_report);
        CHECK_PLACES.end();
        let left_behind = runtime.block_on(clean_up(place, &prefix))?;
        Ok(Checked {
            reports,
            ran_in: format!("tables {prefix}_*"),
            left_behind,
        })
    }
}

/// Drops every table the check made (with its index); how many are left after.
async fn clean_up(place: &Place, prefix: &str) -> Result<u64, Failure> {
    let failed = |error: sqlx::Error| {
        Failure::unreachable(format!(
            "the check ran, but dropping its tables ({prefix}_*) on {} failed: {error}",
            place.shown_url()
        ))
        .remedy("drop them by hand with psql: DROP TABLE <each>")
    };
    let pool = pool(place).await?;
    // `_` is a LIKE wildcard: match the prefix exactly, by its length.
    let list = "SELECT tablename::text FROM pg_tables \
                WHERE schemaname = current_schema() AND left(tablename, $1) = $2";
    let pattern = format!("{prefix}_");
    let length = pattern.len() as i32;
    let tables: Vec<String> = sqlx::query_scalar(list)
        .bind(length)
        .bind(&pattern)
        .fetch_all(&pool)
        .await
        .map_err(failed)?;
    for table in tables {
        // The names are the check's own: lowercase letters, digits and `_`.
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE IF EXISTS {table}")))
            .execute(&pool)
            .await
            .map_err(failed)?;
    }
    let left: Vec<String> = sqlx::query_scalar(list)
        .bind(length)
        .bind(&pattern)
        .fetch_all(&pool)
        .await
        .map_err(failed)?;
    pool.close().await;
    Ok(left.len() as u64)
}

/// Where the check in progress builds its vectors' backends.
static CHECK_PLACES: CheckPlaces<String> = CheckPlaces::new();

/// The PostgreSQL backend as the check drives it: through its async trait, on tokio,
/// each vector in a fresh table of the database.
struct PostgresCheck;

impl Target for PostgresCheck {
    type Runtime = TokioRuntime;
    type Backend = Async<PostgresBackend>;
    type Executor = AsyncIdempotency<PostgresBackend>;

    fn build(settings: Settings) -> Async<PostgresBackend> {
        let (url, table) = CHECK_PLACES.next('_');
        let builder = PostgresBackend::builder()
            .url(&url)
            .table(&table)
            .reclaim_grace(settings.reclaim_grace)
            .migrate(true);
        // Built inside the vector's runtime, so its connections run there.
        let handle = tokio::runtime::Handle::current();
        let backend = tokio::task::block_in_place(|| handle.block_on(builder.build()))
            .unwrap_or_else(|error| panic!("cannot connect to PostgreSQL: {error}"));
        // The vectors see its waiters.
        Async::new(backend).watched_keys(PostgresBackend::watched_keys)
    }
}
