//! The backend the command line chose, picked at run time.

use idemkit_core::{DynBackend, InMemoryBackend, Key};
use idemkit_postgres::PostgresBackend;
use idemkit_redis::{CorruptRecord, RedisBackend};
use idemkit_sqlite::SqliteBackend;
use idemkit_tokio::TokioTimer;

use super::options::{BackendChoice, Options};

/// The most records the in-memory store holds: far more than a test run makes.
const MEMORY_RECORDS: usize = 1_000_000;

/// The store behind the layer.
pub struct Store {
    backend: DynBackend,
    kind: Kind,
}

enum Kind {
    Memory,
    Redis(RedisBackend),
    Sqlite(SqliteBackend),
    Postgres(PostgresBackend),
}

/// The table `--effects` writes each handler call into.
pub const EFFECTS_TABLE: &str = "idemkit_test_effects";

impl Store {
    /// Opens the backend the options name (connects to Redis, for Redis).
    pub async fn open(options: &Options) -> Result<Store, String> {
        match &options.backend {
            BackendChoice::Memory => Ok(Store {
                backend: DynBackend::new(
                    InMemoryBackend::builder()
                        .max_size(MEMORY_RECORDS)
                        .timer(TokioTimer)
                        .build(),
                ),
                kind: Kind::Memory,
            }),
            BackendChoice::Redis(url) => {
                let mut builder = RedisBackend::builder()
                    .url(url)
                    .on_corrupt_record(print_corrupt_record);
                if let Some(namespace) = &options.namespace {
                    builder = builder.namespace(namespace.as_str());
                }
                let backend = builder
                    .build()
                    .await
                    .map_err(|error| format!("backend {}: {error}", redacted(url)))?;
                Ok(Store {
                    backend: DynBackend::new(backend.clone()),
                    kind: Kind::Redis(backend),
                })
            }
            BackendChoice::Sqlite(path) => {
                let mut builder = SqliteBackend::builder(path).on_corrupt_record(|record| {
                    print_corrupt(
                        &record.key,
                        &record.storage_key,
                        &record.reason,
                        record.overwritten,
                        "sqlite",
                    )
                });
                // As on PostgreSQL: --table, or else --namespace, names the table, so
                // servers that share a file and a namespace share their records.
                let table = match (&options.table, &options.namespace) {
                    (Some(table), _) => Some(("--table", table.clone())),
                    (None, Some(namespace)) => Some(("--namespace", namespace_table(namespace))),
                    (None, None) => None,
                };
                if let Some((option, table)) = table {
                    builder = builder
                        .table(&table)
                        .map_err(|error| format!("{option} on SQLite names the table: {error}"))?;
                }
                let backend = builder
                    .build()
                    .map_err(|error| format!("backend sqlite://{path}: {error}"))?;
                // Gone records are purged in the background, so the file stays small.
                let purger = backend.clone();
                tokio::spawn(async move { purger.run_purger().await });
                Ok(Store {
                    backend: DynBackend::new(backend.clone()),
                    kind: Kind::Sqlite(backend),
                })
            }
            BackendChoice::Postgres(url) => {
                let table = match (&options.table, &options.namespace) {
                    (Some(table), _) => table.clone(),
                    (None, Some(namespace)) => namespace_table(namespace),
                    (None, None) => idemkit_postgres::DEFAULT_TABLE.to_owned(),
                };
                let backend = PostgresBackend::builder()
                    .url(url)
                    .table(&table)
                    .migrate(true)
                    .build()
                    .await
                    .map_err(|error| format!("backend {}: {error}", redacted(url)))?;
                if options.effects {
                    create_effects_table(backend.pool())
                        .await
                        .map_err(|error| format!("creating {EFFECTS_TABLE}: {error}"))?;
                }
                Ok(Store {
                    backend: DynBackend::new(backend.clone()),
                    kind: Kind::Postgres(backend),
                })
            }
        }
    }

    /// The PostgreSQL backend, when that is the store.
    pub fn postgres(&self) -> Option<&PostgresBackend> {
        match &self.kind {
            Kind::Postgres(backend) => Some(backend),
            _ => None,
        }
    }

    /// The backend, for the layer.
    pub fn backend(&self) -> DynBackend {
        self.backend.clone()
    }

    /// The key under which the backend stores the record of `key`.
    pub fn storage_key(&self, key: &Key) -> String {
        match &self.kind {
            Kind::Memory => key.as_str().to_owned(),
            Kind::Redis(backend) => backend.storage_key(key.as_str()),
            Kind::Sqlite(backend) => backend.storage_key(key.as_str()),
            Kind::Postgres(backend) => backend.storage_key(key.as_str()),
        }
    }
}

/// Creates `idemkit_test_effects` unless it exists. Servers started together may run
/// this at once, and two concurrent `CREATE TABLE IF NOT EXISTS` can both try to create
/// it (one then fails on the catalog's unique index): an advisory lock takes them in turn.
async fn create_effects_table(pool: &sqlx::PgPool) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('idemkit conformance effects table'))")
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS idemkit_test_effects \
         (key text NOT NULL, server text NOT NULL, call bigint NOT NULL)",
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// The SQL table (PostgreSQL, SQLite) of `--namespace NAME` (without `--table`): the name itself when it
/// is a valid table name (lowercase ASCII letters, digits and `_`, not starting with a
/// digit, at most 63 bytes); otherwise `idemkit_`, the name with every other character
/// as `_` (lowercased, shortened), `_` and a hash of the whole name, so that a namespace
/// written for Redis (`tower-17-2`) also works here and two namespaces never share a table.
pub fn namespace_table(namespace: &str) -> String {
    let valid = (1..=63).contains(&namespace.len())
        && !namespace.starts_with(|c: char| c.is_ascii_digit())
        && namespace
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid {
        return namespace.to_owned();
    }
    // FNV-1a, 64 bits: stable across runs and builds, unlike the std hasher.
    let hash = namespace
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    let readable: String = namespace
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '_',
        })
        .take(38)
        .collect();
    format!("idemkit_{readable}_{hash:016x}")
}

/// One JSON line for a value at a record's key that is not a record.
fn print_corrupt_record(record: &CorruptRecord) {
    print_corrupt(
        &record.key,
        &record.storage_key,
        &record.reason,
        record.overwritten,
        "redis",
    );
}

/// One JSON line for a stored value that is not a record, in `backend`.
fn print_corrupt(key: &str, storage_key: &str, reason: &str, overwritten: bool, backend: &str) {
    super::print_line(&serde_json::json!({
        "event": "idempotency.corrupt_record",
        "decision": "corrupt_record",
        "corrupt": true,
        "effective_key": key,
        "storage_key": storage_key,
        "reason": reason,
        "overwritten": overwritten,
        "backend": backend,
    }));
}

/// `url` with the password of its user information (`scheme://user:password@host`)
/// replaced by `***`, so that an error message never prints a credential.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((user_info, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    match user_info.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod redaction_tests {
    use super::redacted;

    #[test]
    fn passwords_never_reach_an_error_message() {
        assert_eq!(
            redacted("redis://:secret@127.0.0.1:6379/"),
            "redis://:***@127.0.0.1:6379/"
        );
        assert_eq!(
            redacted("postgres://app:p@ss@db:5432/test?sslmode=disable"),
            "postgres://app:***@db:5432/test?sslmode=disable"
        );
        assert_eq!(redacted("postgres://app@db/test"), "postgres://app@db/test");
        assert_eq!(redacted("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redacted("not a url"), "not a url");
    }
}

#[cfg(test)]
mod tests {
    use super::namespace_table;

    #[test]
    fn a_namespace_becomes_a_valid_table_of_its_own() {
        assert_eq!(namespace_table("orders_test"), "orders_test");
        let names = [
            "tower-17-2",
            "tower_17_2x",
            "Tower-17-2",
            "tower.17.2",
            "9lives",
            "ünïcode",
            &"x-".repeat(100),
        ];
        let tables: Vec<String> = names.iter().map(|name| namespace_table(name)).collect();
        for (name, table) in names.iter().zip(&tables) {
            assert!(
                idemkit_postgres::schema_sql(table).is_ok(),
                "{name:?} gave the invalid table {table:?}"
            );
        }
        // Namespaces that differ only in what the table name cannot hold stay apart.
        assert_ne!(tables[0], tables[2]);
        assert_ne!(tables[0], tables[3]);
        assert_eq!(namespace_table("tower-17-2"), tables[0], "stable");
    }
}
