//! The schema: migrate creates, upgrades and leaves current tables alone and says which;
//! the backend refuses to start on a missing or outdated table and says what to run; the
//! table name is validated; the expiry index exists.

mod support;

use idemkit_postgres::{BuildError, Migration, PostgresBackend, SCHEMA_VERSION, migrate};
use support::{Scratch, psql};

#[tokio::test]
async fn migrate_creates_then_is_current_and_idempotent() {
    let Some(scratch) = Scratch::new("schema_create") else {
        return;
    };
    let pool = sqlx::PgPool::connect_lazy(&scratch.url).unwrap();
    assert_eq!(
        migrate(&pool, &scratch.table).await.unwrap(),
        Migration::Created
    );
    assert_eq!(
        migrate(&pool, &scratch.table).await.unwrap(),
        Migration::Current
    );
    assert_eq!(
        migrate(&pool, &scratch.table).await.unwrap(),
        Migration::Current
    );
    assert_eq!(
        psql(
            &scratch.url,
            &format!(
                "SELECT obj_description('{}'::regclass, 'pg_class')",
                scratch.table
            )
        ),
        format!("idemkit-postgres schema {SCHEMA_VERSION}")
    );
    let index = psql(
        &scratch.url,
        &format!(
            "SELECT indexdef FROM pg_indexes WHERE tablename = '{}' AND indexdef LIKE '%purge_after%'",
            scratch.table
        ),
    );
    assert!(
        index.contains("(purge_after)"),
        "the expiry index: {index:?}"
    );
}

#[tokio::test]
async fn concurrent_migrations_create_once() {
    let Some(scratch) = Scratch::new("schema_race") else {
        return;
    };
    let pool = sqlx::PgPool::connect_lazy(&scratch.url).unwrap();
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let (pool, table) = (pool.clone(), scratch.table.clone());
            tokio::spawn(async move { migrate(&pool, &table).await.unwrap() })
        })
        .collect();
    let mut outcomes = Vec::new();
    for run in runs {
        outcomes.push(run.await.unwrap());
    }
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| **o == Migration::Created)
            .count(),
        1
    );
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| **o == Migration::Current)
            .count(),
        3
    );
}

#[tokio::test]
async fn migrate_upgrades_an_older_table_and_keeps_its_rows() {
    let Some(scratch) = Scratch::new("schema_upgrade") else {
        return;
    };
    psql(
        &scratch.url,
        &idemkit_postgres::schema_sql_at(&scratch.table, 1),
    );
    psql(
        &scratch.url,
        &format!(
            "INSERT INTO {} (key, token, fingerprint, fingerprint_version, claimed_at, lease_until, purge_after) \
             VALUES ('kept', '\\x00', 'fp', 1, now(), now(), now())",
            scratch.table
        ),
    );
    // An outdated table: the backend refuses and says what to run.
    let refused = PostgresBackend::builder()
        .url(&scratch.url)
        .table(&scratch.table)
        .build()
        .await
        .unwrap_err();
    let text = refused.to_string();
    assert!(matches!(refused, BuildError::Schema(_)), "{refused:?}");
    assert!(
        text.contains("schema version 1") && text.contains("migrate"),
        "{text}"
    );
    let pool = sqlx::PgPool::connect_lazy(&scratch.url).unwrap();
    assert_eq!(
        migrate(&pool, &scratch.table).await.unwrap(),
        Migration::Upgraded { from: 1 }
    );
    assert_eq!(
        psql(&scratch.url, &format!("SELECT key FROM {}", scratch.table)),
        "kept"
    );
    PostgresBackend::builder()
        .url(&scratch.url)
        .table(&scratch.table)
        .build()
        .await
        .expect("a current table is accepted");
}

#[tokio::test]
async fn a_missing_table_fails_at_connect_saying_what_to_run() {
    let Some(scratch) = Scratch::new("schema_missing") else {
        return;
    };
    let error = PostgresBackend::builder()
        .url(&scratch.url)
        .table(&scratch.table)
        .build()
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, BuildError::Schema(_)), "{error:?}");
    assert!(text.contains("does not exist"), "{text}");
    assert!(
        text.contains("migrate") && text.contains("schema.sql"),
        "{text}"
    );
}

#[tokio::test]
async fn a_foreign_table_of_that_name_is_refused() {
    let Some(scratch) = Scratch::new("schema_foreign") else {
        return;
    };
    psql(
        &scratch.url,
        &format!("CREATE TABLE {} (x int)", scratch.table),
    );
    let pool = sqlx::PgPool::connect_lazy(&scratch.url).unwrap();
    let error = migrate(&pool, &scratch.table).await.unwrap_err();
    assert!(
        error.to_string().contains("not an idemkit-postgres table"),
        "{error}"
    );
}

#[tokio::test]
async fn table_names_are_validated_before_any_sql() {
    for bad in ["Robert'); DROP TABLE students;--", "a b", "", "UPPER", "1x"] {
        let error = PostgresBackend::builder()
            .url("postgres://nobody@127.0.0.1:1/none")
            .table(bad)
            .build()
            .await
            .unwrap_err();
        assert!(
            matches!(error, BuildError::InvalidTable(_)),
            "{bad:?}: {error:?}"
        );
        let pool = sqlx::PgPool::connect_lazy("postgres://nobody@127.0.0.1:1/none").unwrap();
        assert!(matches!(
            migrate(&pool, bad).await.unwrap_err(),
            BuildError::InvalidTable(_)
        ));
        assert!(idemkit_postgres::schema_sql(bad).is_err());
    }
}

#[tokio::test]
async fn the_published_sql_makes_a_table_the_backend_accepts() {
    let Some(scratch) = Scratch::new("schema_published") else {
        return;
    };
    let published = include_str!("../sql/schema.sql").replace("idemkit_records", &scratch.table);
    psql(&scratch.url, &published);
    let backend = PostgresBackend::builder()
        .url(&scratch.url)
        .table(&scratch.table)
        .build()
        .await
        .expect("a table made from the published file is current");
    assert_eq!(backend.table(), scratch.table);
}
