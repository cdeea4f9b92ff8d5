//! The built `idemkit` against PostgreSQL: the machine's server, each test in tables of
//! its own (dropped after), and a private cluster (pg-harness) for a server that stops.
//! Migrate creates then finds the table current; a missing table is exit 4 with the
//! migrate command; a record written by the HTTP layer through the conformance server is
//! found by its raw key; claims, counts, purge; check in tables of its own.

mod support;

use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Backend, Claim, ClaimToken, Response};
use idemkit_postgres::PostgresBackend;
use pg_harness::{PgCluster, unique_name};
use support::{ConformanceServer, closed_port, http, idemkit, identity_scope};

/// Drops `table` when the test ends, pass or fail.
struct Table {
    url: String,
    name: String,
}

impl Table {
    fn new(url: &str, prefix: &str) -> Table {
        Table {
            url: url.to_owned(),
            name: unique_name(prefix),
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // A runtime of its own: the drop may happen inside a test's runtime.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                if let Ok(pool) = sqlx::PgPool::connect(&url).await {
                    let drop = format!("DROP TABLE IF EXISTS {name}");
                    let _ = sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&pool).await;
                }
            });
        })
        .join();
    }
}

/// How many tables of the machine's database start with `prefix`.
async fn tables_starting(url: &str, prefix: &str) -> i64 {
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() \
         AND left(tablename, length($1)) = $1",
    )
    .bind(prefix)
    .fetch_one(&pool)
    .await
    .unwrap()
}

async fn claim(backend: &PostgresBackend, key: &str, lease: Duration) -> ClaimToken {
    match Backend::claim(backend, key, "fp", 4, lease).await.unwrap() {
        Claim::New(token) => token,
        other => panic!("expected a new claim of {key}, got {other:?}"),
    }
}

#[test]
fn migrate_creates_the_table_then_finds_it_current_and_others_need_it() {
    let Some(url) = pg_harness::machine() else {
        return;
    };
    let table = Table::new(&url, "cli_migrate");
    let missing = idemkit(&["stats", &url, "--table", &table.name]);
    assert_eq!(missing.code, 4, "{missing:?}");
    assert!(
        missing.stderr.contains(&format!(
            "to fix: run `idemkit migrate {url} --table {}`",
            table.name
        )),
        "{}",
        missing.stderr
    );

    let created = idemkit(&["migrate", &url, "--table", &table.name, "--json"]);
    assert_eq!(created.code, 0, "{created:?}");
    assert_eq!(created.json()["action"], "created");
    assert_eq!(created.json()["version"], idemkit_postgres::SCHEMA_VERSION);
    let again = idemkit(&["migrate", &url, "--table", &table.name]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again.stdout.contains("already at schema version"),
        "{}",
        again.stdout
    );
    let stats = idemkit(&["stats", &url, "--table", &table.name, "--json"]);
    assert_eq!(stats.code, 0, "{stats:?}");
    assert_eq!(stats.json()["completed"], 0);

    let bad = idemkit(&["migrate", &url, "--table", "Bad-Name"]);
    assert_eq!(bad.code, 2, "{bad:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_upgrades_a_table_an_older_release_left_and_says_so() {
    let Some(url) = pg_harness::machine() else {
        return;
    };
    let table = Table::new(&url, "cli_upgrade");
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let older = idemkit_postgres::schema_sql_at(&table.name, 1);
    sqlx::raw_sql(sqlx::AssertSqlSafe(older))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let name = table.name.clone();
    let url_ = url.clone();
    let (stats, upgraded, again) = tokio::task::spawn_blocking(move || {
        (
            idemkit(&["stats", &url_, "--table", &name]),
            idemkit(&["migrate", &url_, "--table", &name, "--json"]),
            idemkit(&["migrate", &url_, "--table", &name, "--json"]),
        )
    })
    .await
    .unwrap();
    assert_eq!(stats.code, 4, "an older table is not ready: {stats:?}");
    assert!(stats.stderr.contains("idemkit migrate"), "{}", stats.stderr);
    assert_eq!(upgraded.code, 0, "{upgraded:?}");
    let done = upgraded.json();
    assert_eq!(done["action"], "upgraded", "{done}");
    assert_eq!(done["from_version"], 1);
    assert_eq!(done["version"], idemkit_postgres::SCHEMA_VERSION);
    assert_eq!(again.json()["action"], "current");
}

#[test]
fn an_unreachable_or_stopped_server_is_exit_3() {
    let url = format!("postgres://postgres@127.0.0.1:{}/test", closed_port());
    for command in ["stats", "migrate"] {
        let run = idemkit(&[command, &url]);
        assert_eq!(run.code, 3, "{command}: {run:?}");
        assert!(run.stderr.contains("to fix:"), "{command}: {}", run.stderr);
    }
    if !pg_harness::available() {
        return;
    }
    let cluster = PgCluster::start_new().unwrap();
    let run = idemkit(&["migrate", &cluster.url()]);
    assert_eq!(run.code, 0, "{run:?}");
    cluster.stop().unwrap();
    let run = idemkit(&["stats", &cluster.url()]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("cannot reach the PostgreSQL server"),
        "{}",
        run.stderr
    );
}

#[test]
fn inspect_finds_a_record_the_conformance_server_stored_by_its_raw_key() {
    let Some(url) = pg_harness::machine() else {
        return;
    };
    let table = Table::new(&url, "cli_server");
    let server = ConformanceServer::start(&["--backend", &url, "--table", &table.name]);
    let headers = [("idempotency-key", "invoice-3"), ("x-identity", "acme")];
    let answer = http(
        server.address,
        "POST",
        "/invoices",
        &headers,
        "{\"total\":12}",
    );
    assert_eq!(answer.status, 201, "{answer:?}");

    let run = idemkit(&[
        "inspect",
        &url,
        "invoice-3",
        "--table",
        &table.name,
        "--scope",
        &identity_scope("acme"),
        "--path",
        "/invoices",
        "--body",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let found = &run.json()[0];
    assert_eq!(found["state"], "completed", "{found}");
    assert_eq!(found["status"], 201);
    assert_eq!(
        found["body"],
        String::from_utf8(answer.body.clone()).unwrap()
    );
    let storage = http(
        server.address,
        "GET",
        "/_storage_key?method=POST&path=/invoices",
        &[("idempotency-key", "invoice-3"), ("x-identity", "acme")],
        "",
    );
    assert_eq!(
        found["storage_key"].as_str().unwrap(),
        String::from_utf8(storage.body).unwrap().trim()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_stats_and_purge_see_each_state() {
    let Some(url) = pg_harness::machine() else {
        return;
    };
    let table = Table::new(&url, "cli_states");
    // No reclaim grace: a claim whose lease lapsed is purgeable at once.
    let backend = PostgresBackend::builder()
        .url(&url)
        .table(&table.name)
        .reclaim_grace(Duration::ZERO)
        .migrate(true)
        .build()
        .await
        .unwrap();
    claim(&backend, "running", Duration::from_secs(60)).await;
    let done = claim(&backend, "done", Duration::from_secs(60)).await;
    let response = Arc::new(Response::new(200, "fine").with_header("location", "/x/1"));
    let hour = Duration::from_secs(3600);
    assert!(
        Backend::complete(&backend, "done", &done, response, hour)
            .await
            .unwrap()
    );
    // Short leases, all written well within them, then left to lapse.
    let short = Duration::from_secs(2);
    for index in 0..3 {
        claim(&backend, &format!("abandoned-{index}"), short).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;

    let (url_, name) = (url.clone(), table.name.clone());
    let (inspect, stats, purge, after) = tokio::task::spawn_blocking(move || {
        let inspect = idemkit(&[
            "inspect",
            &url_,
            "running",
            "done",
            "abandoned-0",
            "--effective",
            "--table",
            &name,
            "--json",
        ]);
        let stats = idemkit(&["stats", &url_, "--table", &name, "--json"]);
        let purge = idemkit(&["purge", &url_, "--table", &name, "--batch-size", "2"]);
        let after = idemkit(&["stats", &url_, "--table", &name, "--json"]);
        (inspect, stats, purge, after)
    })
    .await
    .unwrap();
    assert_eq!(inspect.code, 0, "{inspect:?}");
    let records = inspect.json();
    assert_eq!(records[0]["state"], "in_flight");
    assert_eq!(records[0]["fingerprint_version"], 4);
    assert_eq!(records[1]["state"], "completed");
    assert_eq!(records[1]["header_names"], serde_json::json!(["location"]));
    assert_eq!(
        records[2]["state"], "absent",
        "past its grace: gone: {records}"
    );
    let counted = stats.json();
    assert_eq!(counted["in_flight"], 1, "{counted}");
    assert_eq!(counted["completed"], 1, "{counted}");
    assert_eq!(counted["purgeable"], 3, "{counted}");
    assert_eq!(purge.code, 0, "{purge:?}");
    assert!(
        purge
            .stdout
            .starts_with("batch 1: deleted 2 (total 2)\nbatch 2: deleted 1 (total 3)\n"),
        "{}",
        purge.stdout
    );
    let after = after.json();
    assert_eq!(
        (after["purgeable"].clone(), after["in_flight"].clone()),
        (0.into(), 1.into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_runs_every_vector_in_tables_of_its_own_and_drops_them() {
    let Some(url) = pg_harness::machine() else {
        return;
    };
    let url_ = url.clone();
    let run = tokio::task::spawn_blocking(move || idemkit(&["check", &url_, "--json"]))
        .await
        .unwrap();
    let report = run.json();
    let vectors = report["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 30, "{report}");
    let failed: Vec<_> = vectors
        .iter()
        .filter(|vector| vector["passed"] == false)
        .collect();
    assert_eq!(report["failed"], failed.len());
    assert_eq!(
        report["passed"].as_u64().unwrap() as usize + failed.len(),
        vectors.len()
    );
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(report["left_behind"], 0);
    let prefix = report["ran_in"]
        .as_str()
        .unwrap()
        .trim_start_matches("tables ")
        .trim_end_matches('*');
    assert!(prefix.starts_with("idemkit_check_"), "{report}");
    assert_eq!(
        tables_starting(&url, prefix).await,
        0,
        "the check dropped its tables"
    );
}
