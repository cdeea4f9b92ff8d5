//! The schema: one table, its expiry index, and its version; [`migrate`] creates or
//! upgrades it, and [`schema_sql`] is the same SQL for users who run their own
//! migrations (published, for the default table, as `sql/schema.sql` in this crate).

use sqlx::{Executor, PgPool, Row};

use crate::error::{BuildError, sqlx_error};
use crate::table::TableName;

/// The schema version this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 2;

/// The table comment that records the version: `idemkit-postgres schema <n>`.
const VERSION_MARK: &str = "idemkit-postgres schema ";

/// What [`migrate`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Migration {
    /// There was no table: it was created at [`SCHEMA_VERSION`].
    Created,
    /// The table was at an older version and was upgraded.
    Upgraded {
        /// The version it was at.
        from: u32,
    },
    /// The table was already at [`SCHEMA_VERSION`]: nothing was done.
    Current,
}

/// Step `version` of the schema of `table`: what takes it from `version - 1` to
/// `version`. Step 1 is the table, step 2 the index a purge walks.
fn step(table: &str, version: u32) -> String {
    match version {
        1 => format!(
            "CREATE TABLE {table} (\n\
            \x20   key                 text        PRIMARY KEY,\n\
            \x20   token               bytea       NOT NULL,\n\
            \x20   fingerprint         text        NOT NULL,\n\
            \x20   fingerprint_version bigint      NOT NULL,\n\
            \x20   completed           boolean     NOT NULL DEFAULT false,\n\
            \x20   reclaimed           boolean     NOT NULL DEFAULT false,\n\
            \x20   waiters             boolean     NOT NULL DEFAULT false,\n\
            \x20   claimed_at          timestamptz NOT NULL,\n\
            \x20   lease_until         timestamptz NOT NULL,\n\
            \x20   purge_after         timestamptz NOT NULL,\n\
            \x20   completed_at        timestamptz,\n\
            \x20   status              integer,\n\
            \x20   header_names        text[],\n\
            \x20   header_values       bytea[],\n\
            \x20   body                bytea\n\
            );\n"
        ),
        2 => format!("CREATE INDEX {table}_purge_after ON {table} (purge_after);\n"),
        _ => String::new(),
    }
}

fn mark(table: &str, version: u32) -> String {
    format!("COMMENT ON TABLE {table} IS '{VERSION_MARK}{version}';\n")
}

/// The SQL that creates the schema of `table` at [`SCHEMA_VERSION`] from nothing, for
/// users who run their own migrations. For the default table it is the file
/// `sql/schema.sql` of this crate.
///
/// ```
/// let sql = idemkit_postgres::schema_sql("payments_idempotency").unwrap();
/// assert!(sql.contains("CREATE TABLE payments_idempotency"));
/// assert!(idemkit_postgres::schema_sql("bad name").is_err());
/// ```
pub fn schema_sql(table: &str) -> Result<String, crate::InvalidTable> {
    let table = TableName::new(table)?;
    Ok(sql_from(table.as_str(), 0))
}

fn sql_from(table: &str, from: u32) -> String {
    let mut sql = String::new();
    if from == 0 {
        sql.push_str(&format!(
            "-- idemkit-postgres schema {SCHEMA_VERSION} for the table {table}.\n\
             -- Each row is one idempotency key: a claim (completed = false) or a stored\n\
             -- response. Times are the database's clock_timestamp().\n"
        ));
    }
    for version in from + 1..=SCHEMA_VERSION {
        sql.push_str(&step(table, version));
    }
    sql.push_str(&mark(table, SCHEMA_VERSION));
    sql
}

/// The version of `table` in the database: `None` when there is no such table, `Some(0)`
/// when it exists without this crate's mark.
pub(crate) async fn version(pool: &PgPool, table: &TableName) -> Result<Option<u32>, BuildError> {
    let row = sqlx::query(
        "SELECT to_regclass($1) IS NOT NULL, obj_description(to_regclass($1), 'pg_class')",
    )
    .bind(table.as_str())
    .fetch_one(pool)
    .await
    .map_err(sqlx_error("schema check"))
    .map_err(BuildError::Database)?;
    let exists: bool = row.get(0);
    let comment: Option<String> = row.get(1);
    if !exists {
        return Ok(None);
    }
    Ok(Some(
        comment
            .and_then(|c| c.strip_prefix(VERSION_MARK)?.trim().parse().ok())
            .unwrap_or(0),
    ))
}

/// Fails, saying what to run, unless `table` is at [`SCHEMA_VERSION`].
pub(crate) async fn check(pool: &PgPool, table: &TableName) -> Result<(), BuildError> {
    let fix = format!(
        "run idemkit_postgres::migrate(&pool, \"{table}\") (or the builder's .migrate(true)), \
         or apply the SQL of idemkit_postgres::schema_sql(\"{table}\") (sql/schema.sql in the \
         crate, for the default table)"
    );
    match version(pool, table).await? {
        Some(SCHEMA_VERSION) => Ok(()),
        None => Err(BuildError::Schema(format!(
            "the idempotency table {table} does not exist: {fix}"
        ))),
        Some(0) => Err(BuildError::Schema(format!(
            "the table {table} exists but is not an idemkit-postgres table (no schema mark): \
             choose another table name"
        ))),
        Some(found) if found < SCHEMA_VERSION => Err(BuildError::Schema(format!(
            "the idempotency table {table} is at schema version {found}, this version needs \
             {SCHEMA_VERSION}: {fix}"
        ))),
        Some(found) => Err(BuildError::Schema(format!(
            "the idempotency table {table} is at schema version {found}, newer than this \
             version of idemkit-postgres reads ({SCHEMA_VERSION}): upgrade idemkit-postgres"
        ))),
    }
}

/// Creates the table `table` (default: `idemkit_records`) or upgrades it to
/// [`SCHEMA_VERSION`], and says which it did. Idempotent: on a current table it does
/// nothing and says [`Migration::Current`]. Replicas may run it at once: it holds a
/// transaction-level advisory lock while it looks and changes.
///
/// ```no_run
/// # async fn demo(pool: sqlx::PgPool) -> Result<(), idemkit_postgres::BuildError> {
/// let done = idemkit_postgres::migrate(&pool, "idemkit_records").await?;
/// println!("{done:?}");
/// # Ok(()) }
/// ```
pub async fn migrate(pool: &PgPool, table: &str) -> Result<Migration, BuildError> {
    let table = TableName::new(table)?;
    let fail = |error| BuildError::Database(sqlx_error("migrate")(error));
    let mut tx = pool.begin().await.map_err(fail)?;
    // One migration of this table at a time, across every process.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('idemkit-postgres migrate ' || $1))")
        .bind(table.as_str())
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
    let row = sqlx::query(
        "SELECT to_regclass($1) IS NOT NULL, obj_description(to_regclass($1), 'pg_class')",
    )
    .bind(table.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(fail)?;
    let exists: bool = row.get(0);
    let comment: Option<String> = row.get(1);
    let found = if exists {
        comment.and_then(|c| c.strip_prefix(VERSION_MARK)?.trim().parse::<u32>().ok())
    } else {
        Some(0)
    };
    let outcome = match found {
        Some(0) => Migration::Created,
        Some(SCHEMA_VERSION) => return Ok(Migration::Current),
        Some(from) if from < SCHEMA_VERSION => Migration::Upgraded { from },
        Some(from) => {
            return Err(BuildError::Schema(format!(
                "the table {table} is at schema version {from}, newer than this version of \
                 idemkit-postgres ({SCHEMA_VERSION}): upgrade idemkit-postgres"
            )));
        }
        None => {
            return Err(BuildError::Schema(format!(
                "the table {table} exists but is not an idemkit-postgres table (no schema \
                 mark): choose another table name"
            )));
        }
    };
    let from = match outcome {
        Migration::Upgraded { from } => from,
        _ => 0,
    };
    tx.execute(sqlx::AssertSqlSafe(sql_from(table.as_str(), from)))
        .await
        .map_err(fail)?;
    tx.commit().await.map_err(fail)?;
    Ok(outcome)
}

/// The SQL of the steps up to `version` and its mark: a table as an older release left
/// it, for the upgrade test.
#[doc(hidden)]
pub fn schema_sql_at(table: &str, version: u32) -> String {
    let mut sql: String = (1..=version).map(|v| step(table, v)).collect();
    sql.push_str(&mark(table, version));
    sql
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::DEFAULT_TABLE;

    #[test]
    fn the_published_file_is_the_default_tables_schema() {
        let published = include_str!("../sql/schema.sql");
        assert_eq!(published, schema_sql(DEFAULT_TABLE).unwrap());
    }
}
