//! [`PostgresBuilder`]: where the database is (a URL or the `PgPool` an application already
//! has), which table, and the time limits.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use idemkit_core::Store;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backend::{Inner, PostgresBackend};
use crate::error::BuildError;
use crate::runtime::{RuntimeChoice, Spawner};
use crate::schema::{check, migrate};
use crate::statements::Statements;
use crate::table::{DEFAULT_TABLE, TableName};
use crate::wakeups::Wakeups;

/// Builds a [`PostgresBackend`].
///
/// ```no_run
/// use std::time::Duration;
/// use idemkit_postgres::PostgresBackend;
///
/// # async fn demo(pool: sqlx::PgPool) -> Result<(), idemkit_postgres::BuildError> {
/// let backend = PostgresBackend::builder()
///     .pool(pool)                 // or .url("postgres://app@db/app")
///     .table("payments_idempotency")
///     .migrate(true)              // create or upgrade the table at start
///     .operation_timeout(Duration::from_secs(2))
///     .build()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct PostgresBuilder {
    url: Option<String>,
    pool: Option<PgPool>,
    table: String,
    reclaim_grace: Duration,
    operation_timeout: Duration,
    max_connections: u32,
    migrate: bool,
    notify_every_key: bool,
    /// `None`: the default of [`PostgresBuilder::runtime`].
    runtime: Option<RuntimeChoice>,
}

impl Default for PostgresBuilder {
    fn default() -> PostgresBuilder {
        PostgresBuilder::new()
    }
}

impl PostgresBuilder {
    /// The defaults: table `idemkit_records`, the in-memory backend's reclaim grace
    /// (60 s), a 5 s operation timeout, 10 connections for a pool made from a URL, and
    /// no migration at build (the table must exist).
    pub fn new() -> PostgresBuilder {
        PostgresBuilder {
            url: None,
            pool: None,
            table: DEFAULT_TABLE.to_owned(),
            reclaim_grace: Store::DEFAULT_RECLAIM_GRACE,
            operation_timeout: Duration::from_secs(5),
            max_connections: 10,
            migrate: false,
            notify_every_key: false,
            runtime: None,
        }
    }

    /// Connect to the database at `url` (`postgres://user@host:port/db`) with a pool of
    /// [`max_connections`](PostgresBuilder::max_connections).
    #[must_use]
    pub fn url(mut self, url: &str) -> PostgresBuilder {
        self.url = Some(url.to_owned());
        self
    }

    /// Run on this pool, the application's own: the backend's statements take its
    /// connections (one at a time each, briefly). Takes precedence over a URL.
    #[must_use]
    pub fn pool(mut self, pool: PgPool) -> PostgresBuilder {
        self.pool = Some(pool);
        self
    }

    /// The table (see [`InvalidTable`](crate::InvalidTable) for the names accepted). Its
    /// `NOTIFY` channel has the same name; only keys some waiter has marked are notified
    /// there (see the crate docs, "How it works").
    #[must_use]
    pub fn table(mut self, table: &str) -> PostgresBuilder {
        self.table = table.to_owned();
        self
    }

    /// How long a claim whose lease lapsed is kept, so the next claim reports it
    /// reclaimed and a late completion with its token can still land.
    #[must_use]
    pub fn reclaim_grace(mut self, reclaim_grace: Duration) -> PostgresBuilder {
        self.reclaim_grace = reclaim_grace;
        self
    }

    /// The longest one statement may take, waiting for a pool connection included,
    /// before its operation fails with `Error::Storage`.
    #[must_use]
    pub fn operation_timeout(mut self, timeout: Duration) -> PostgresBuilder {
        self.operation_timeout = timeout;
        self
    }

    /// The size of the pool made from a URL (not used with [`PostgresBuilder::pool`]). That pool
    /// does not ping a connection before each use: one that broke while idle fails one
    /// operation with `Error::Storage` and is replaced. (A pool of your own keeps its
    /// own settings; sqlx's default pings, a round trip per statement.)
    #[must_use]
    pub fn max_connections(mut self, max_connections: u32) -> PostgresBuilder {
        self.max_connections = max_connections.max(1);
        self
    }

    /// Create or upgrade the table at build ([`migrate`](crate::migrate)); otherwise the
    /// build fails, saying what to run, unless the table is at the current version.
    #[must_use]
    pub fn migrate(mut self, migrate: bool) -> PostgresBuilder {
        self.migrate = migrate;
        self
    }

    /// Whether complete, release and a reclaim `NOTIFY` every key on the table's channel,
    /// not only the keys some waiter has marked (the default, `false`). Turn it on for a
    /// listener of your own on the channel that must hear of every completion; it costs
    /// throughput, as each notifying commit takes a server-wide lock (see the crate docs,
    /// "How it works"). The backend's own waiters are woken either way.
    #[must_use]
    pub fn notify_every_key(mut self, notify_every_key: bool) -> PostgresBuilder {
        self.notify_every_key = notify_every_key;
        self
    }

    /// The async runtime the backend's connections, listener and background work run
    /// on, whoever calls it: tasks of either runtime, or blocking code on plain threads.
    ///
    /// Without it: with the `tokio` feature, the tokio runtime [`PostgresBuilder::build`]
    /// (or [`PostgresBuilder::build_blocking`]) is called in, or, outside one, a tokio
    /// runtime of the backend's own (one worker thread, shut down when the last clone of
    /// the backend is gone); with only `smol`, smol. Never the runtime that merely happens
    /// to poll it. With both features and smol chosen, poll the backend outside tokio:
    /// sqlx opens a connection on tokio wherever it finds a tokio context.
    ///
    /// ```no_run
    /// # #[cfg(feature = "tokio")]
    /// # fn build(handle: tokio::runtime::Handle) -> Result<(), idemkit_postgres::BuildError> {
    /// use idemkit_postgres::{PostgresBackend, TokioRuntime};
    ///
    /// // Blocking code whose connections run on an existing tokio runtime.
    /// let backend = PostgresBackend::builder()
    ///     .url("postgres://app@127.0.0.1:5432/app")
    ///     .runtime(TokioRuntime::from(handle))
    ///     .build_blocking()?;
    /// # Ok(()) }
    /// ```
    pub fn runtime(mut self, runtime: impl Into<RuntimeChoice>) -> PostgresBuilder {
        self.runtime = Some(runtime.into());
        self
    }

    /// Connects, checks (or migrates) the schema and starts the `LISTEN` connection, on
    /// the runtime [`PostgresBuilder::runtime`] names (or its default).
    pub async fn build(self) -> Result<PostgresBackend, BuildError> {
        let spawner = Spawner::resolve(self.runtime.clone()).map_err(BuildError::Runtime)?;
        spawner.in_context(self.build_on(spawner.clone())).await
    }

    /// [`PostgresBuilder::build`] for blocking code, which it blocks until connected.
    pub fn build_blocking(self) -> Result<PostgresBackend, BuildError> {
        let spawner = Spawner::resolve(self.runtime.clone()).map_err(BuildError::Runtime)?;
        let build = spawner.in_context(self.build_on(spawner.clone()));
        futures_lite::future::block_on(build)
    }

    async fn build_on(self, spawner: Spawner) -> Result<PostgresBackend, BuildError> {
        let table = TableName::new(&self.table)?;
        let pool = match (self.pool, &self.url) {
            (Some(pool), _) => pool,
            (None, Some(url)) => {
                let options = PgConnectOptions::from_str(url).map_err(BuildError::BadUrl)?;
                PgPoolOptions::new()
                    .max_connections(self.max_connections)
                    .acquire_timeout(self.operation_timeout)
                    // No ping before each statement (a round trip each): a connection
                    // that broke while idle fails one operation, with a storage error,
                    // and is replaced.
                    .test_before_acquire(false)
                    .connect_lazy_with(options)
            }
            (None, None) => return Err(BuildError::NoDatabase),
        };
        if self.migrate {
            migrate(&pool, table.as_str()).await?;
        } else {
            check(&pool, &table).await?;
        }
        let listener_name = format!("idemkit-listen-{}", token_hex());
        let listener_options = pool
            .connect_options()
            .as_ref()
            .clone()
            .application_name(&listener_name);
        let wakeups = Arc::new(Wakeups::default());
        wakeups.start(
            &spawner,
            listener_options,
            table.as_str().to_owned(),
            Duration::from_millis(200),
        );
        Ok(PostgresBackend {
            inner: Arc::new(Inner {
                statements: Statements::new(&table, self.notify_every_key),
                pool,
                table,
                reclaim_grace: self.reclaim_grace,
                operation_timeout: self.operation_timeout,
                wakeups,
                spawner,
                listener_name,
                clock: Default::default(),
                responses: Default::default(),
                releases: Default::default(),
                runs: Default::default(),
                reads: Default::default(),
            }),
        })
    }
}

/// Eight random bytes in hex, to tell one backend's listener from another's.
fn token_hex() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
