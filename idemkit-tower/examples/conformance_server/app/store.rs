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
                    .map_err(|error| format!("backend {url}: {error}"))?;
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
                    (Some(table), _) => Some(("--table", table)),
                    (None, Some(namespace)) => Some(("--namespace", namespace)),
                    (None, None) => None,
                };
                if let Some((option, table)) = table {
                    builder = builder
                        .table(table)
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
                let table = options
                    .table
                    .as_deref()
                    .or(options.namespace.as_deref())
                    .unwrap_or(idemkit_postgres::DEFAULT_TABLE);
                let backend = PostgresBackend::builder()
                    .url(url)
                    .table(table)
                    .migrate(true)
                    .build()
                    .await
                    .map_err(|error| format!("backend {url}: {error}"))?;
                if options.effects {
                    sqlx::query(
                        "CREATE TABLE IF NOT EXISTS idemkit_test_effects \
                         (key text NOT NULL, server text NOT NULL, call bigint NOT NULL)",
                    )
                    .execute(backend.pool())
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

    /// The backend's name in events.
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Memory => "memory",
            Kind::Redis(_) => "redis",
            Kind::Sqlite(_) => "sqlite",
            Kind::Postgres(_) => "postgres",
        }
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
