//! [`PostgresError`]: what went wrong talking to PostgreSQL, as the source of an
//! [`Error::Storage`](idemkit_core::Error::Storage); and [`BuildError`].

use std::fmt;
use std::time::Duration;

use idemkit_core::Error;

use crate::table::InvalidTable;

/// Why one operation on PostgreSQL failed: the source of every
/// [`Error::Storage`](idemkit_core::Error::Storage) this crate returns.
///
/// Whether the operation took effect is unknown unless [`PostgresError::is_timeout`]
/// and the operation was a read. The backend recovers by itself: the pool opens new
/// connections once the server is back.
#[derive(Debug)]
pub struct PostgresError {
    operation: &'static str,
    cause: Cause,
}

#[derive(Debug)]
pub(crate) enum Cause {
    /// What sqlx reported: the server down, a lost connection, a statement timeout, an
    /// exhausted pool, an error from the server.
    Sqlx(sqlx::Error),
    /// No answer within the operation timeout.
    TimedOut(Duration),
    /// A row this version cannot read, or input the store cannot hold.
    Invalid(String),
}

impl PostgresError {
    pub(crate) fn new(operation: &'static str, cause: Cause) -> PostgresError {
        PostgresError { operation, cause }
    }

    /// The operation that failed: `claim`, `complete`, `release`, `renew`, `read`,
    /// `purge`, `stats`, `begin`, `commit`, ...
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// Whether the operation ran out of time: the backend's operation timeout, or the
    /// server's `statement_timeout` (SQLSTATE 57014).
    pub fn is_timeout(&self) -> bool {
        match &self.cause {
            Cause::TimedOut(_) => true,
            Cause::Sqlx(sqlx::Error::Database(error)) => error.code().as_deref() == Some("57014"),
            Cause::Sqlx(sqlx::Error::PoolTimedOut) => true,
            _ => false,
        }
    }

    /// The sqlx error behind this one, if it came from sqlx.
    pub fn sqlx(&self) -> Option<&sqlx::Error> {
        match &self.cause {
            Cause::Sqlx(error) => Some(error),
            _ => None,
        }
    }
}

impl fmt::Display for PostgresError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Cause::Sqlx(error) => write!(f, "PostgreSQL {}: {error}", self.operation),
            Cause::TimedOut(limit) => write!(
                f,
                "PostgreSQL {}: no answer within the operation timeout of {limit:?}",
                self.operation
            ),
            Cause::Invalid(why) => write!(f, "PostgreSQL {}: {why}", self.operation),
        }
    }
}

impl std::error::Error for PostgresError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Cause::Sqlx(error) => Some(error),
            _ => None,
        }
    }
}

/// An [`Error::Storage`] for `operation` failing with `cause`.
pub(crate) fn storage(operation: &'static str, cause: Cause) -> Error {
    Error::storage(PostgresError::new(operation, cause))
}

/// An [`Error::Storage`] for `operation` failing in sqlx.
pub(crate) fn sqlx_error(operation: &'static str) -> impl Fn(sqlx::Error) -> Error {
    move |error| storage(operation, Cause::Sqlx(error))
}

/// Why a backend could not be built, or a schema migrated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Neither a URL nor a pool was given to the builder.
    #[error("no database: give the builder a URL or a PgPool")]
    NoDatabase,
    /// The URL does not parse as a PostgreSQL URL.
    #[error("not a PostgreSQL URL: {0}")]
    BadUrl(#[source] sqlx::Error),
    /// The table name is not one this crate accepts.
    #[error(transparent)]
    InvalidTable(#[from] InvalidTable),
    /// The tokio runtime the backend would own (built outside one, with no runtime
    /// given: see [`PostgresBuilder::runtime`](crate::PostgresBuilder::runtime)) could not
    /// be started.
    #[error("could not start the PostgreSQL backend's tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The table is missing or at an older schema version; the text says what to run.
    #[error("{0}")]
    Schema(String),
    /// The database failed while the backend connected or migrated.
    #[error("{0}")]
    Database(#[source] Error),
}
