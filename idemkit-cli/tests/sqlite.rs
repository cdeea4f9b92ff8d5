//! The built `idemkit` against SQLite files made by the tests (in temporary
//! directories): migrate creates then finds the table current; the other commands refuse
//! a missing file or table with the migrate command to run; a record written by the HTTP
//! layer through the conformance server is found by its raw key; claims, counts, purge
//! and check.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Backend, Claim, ClaimToken, Response};
use idemkit_sqlite::SqliteBackend;
use support::{ConformanceServer, http, idemkit};

fn url(path: &Path) -> String {
    format!("sqlite://{}", path.display())
}

/// The tables of the file, sorted.
fn tables(path: &Path) -> Vec<String> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut statement = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    statement
        .query_map((), |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

async fn claim(backend: &SqliteBackend, key: &str, lease: Duration) -> ClaimToken {
    match Backend::claim(backend, key, "fp", 2, lease).await.unwrap() {
        Claim::New(token) => token,
        other => panic!("expected a new claim of {key}, got {other:?}"),
    }
}

#[test]
fn migrate_creates_the_table_then_finds_it_current() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let created = idemkit(&["migrate", &url(&file), "--json"]);
    assert_eq!(created.code, 0, "{created:?}");
    assert_eq!(created.json()["action"], "created");
    assert_eq!(created.json()["version"], idemkit_sqlite::SCHEMA_VERSION);
    assert!(tables(&file).contains(&"idemkit_records".to_owned()));

    let again = idemkit(&["migrate", &url(&file)]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again.stdout.contains("already at schema version"),
        "{}",
        again.stdout
    );

    let other = idemkit(&["migrate", &url(&file), "--table", "payments_keys"]);
    assert_eq!(other.code, 0, "{other:?}");
    assert!(
        other.stdout.contains("created table payments_keys"),
        "{}",
        other.stdout
    );
    let bad = idemkit(&["migrate", &url(&file), "--table", "x; DROP TABLE y"]);
    assert_eq!(bad.code, 2, "{bad:?}");
}

#[test]
fn a_missing_file_or_table_is_exit_4_naming_the_migrate_command() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nothing-here.db");
    for command in ["stats", "purge"] {
        let run = idemkit(&[command, &url(&file)]);
        assert_eq!(run.code, 4, "{command}: {run:?}");
        assert!(
            run.stderr
                .contains(&format!("idemkit migrate {}", url(&file))),
            "{command}: {}",
            run.stderr
        );
    }
    assert!(!file.exists(), "no command but migrate creates a file");

    let run = idemkit(&["migrate", &url(&file)]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = idemkit(&[
        "inspect",
        &url(&file),
        "k",
        "--effective",
        "--table",
        "orders",
    ]);
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr.contains("to fix: run `idemkit migrate")
            && run.stderr.contains("--table orders"),
        "{}",
        run.stderr
    );

    let nowhere = dir.path().join("no-such-dir").join("store.db");
    let run = idemkit(&["migrate", &url(&nowhere)]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.contains("directory exists"), "{}", run.stderr);

    let not_a_database = dir.path().join("notes.txt");
    std::fs::write(&not_a_database, "not a database at all, just some text").unwrap();
    let run = idemkit(&["stats", &url(&not_a_database)]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("not an SQLite database"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&not_a_database).unwrap(),
        "not a database at all, just some text"
    );

    // Another program's database: refused untouched, naming the `migrate` that would add
    // the table on purpose.
    let theirs = dir.path().join("theirs.db");
    rusqlite::Connection::open(&theirs)
        .unwrap()
        .execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY)")
        .unwrap();
    let before = std::fs::read(&theirs).unwrap();
    let run = idemkit(&["stats", &url(&theirs)]);
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("idemkit migrate {}", url(&theirs))),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(&theirs).unwrap(), before, "left untouched");
}

#[test]
fn inspect_finds_a_record_the_conformance_server_stored_by_its_raw_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.db");
    let server = ConformanceServer::start(&["--backend", &url(&file), "--table", "http_records"]);
    let headers = [
        ("idempotency-key", "\"refund-9\""),
        ("content-type", "text/plain"),
    ];
    let answer = http(
        server.address,
        "PATCH",
        "/refunds//9/",
        &headers,
        "all of it",
    );
    assert_eq!(answer.status, 201, "{answer:?}");

    // No X-Identity: the server's scope function calls the caller `anonymous`. The key
    // bare or quoted, the path as sent or canonical: the same record.
    let run = idemkit(&[
        "inspect",
        &url(&file),
        "refund-9",
        "--table",
        "http_records",
        "--scope",
        "anonymous",
        "--method",
        "PATCH",
        "--path",
        "/refunds/9",
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
    assert_eq!(found["body_bytes"], answer.body.len());

    let storage = http(
        server.address,
        "GET",
        "/_storage_key?method=PATCH&path=/refunds/9",
        &[("idempotency-key", "refund-9")],
        "",
    );
    assert_eq!(storage.status, 200, "{storage:?}");
    assert_eq!(
        found["storage_key"].as_str().unwrap(),
        String::from_utf8(storage.body).unwrap().trim()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_stats_and_purge_see_each_state() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("states.db");
    // No reclaim grace: a claim whose lease lapsed is purgeable at once.
    let backend = SqliteBackend::builder(&file)
        .reclaim_grace(Duration::ZERO)
        .build()
        .unwrap();
    claim(&backend, "running", Duration::from_secs(60)).await;
    let done = claim(&backend, "done", Duration::from_secs(60)).await;
    let response =
        Arc::new(Response::new(202, vec![0xff, 0x00, 0x10]).with_header("etag", "\"v1\""));
    let hour = Duration::from_secs(3600);
    assert!(
        Backend::complete(&backend, "done", &done, response, hour)
            .await
            .unwrap()
    );
    // Short leases and a short time to live, all written well within them: no write
    // finds another's record gone (a write may drop the gone records it meets).
    let short = Duration::from_secs(2);
    let brief = claim(&backend, "brief", Duration::from_secs(60)).await;
    for index in 0..3 {
        claim(&backend, &format!("abandoned-{index}"), short).await;
    }
    let soon_gone = Arc::new(Response::new(200, "soon gone"));
    assert!(
        Backend::complete(&backend, "brief", &brief, soon_gone, short)
            .await
            .unwrap()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;

    let url = url(&file);
    let (inspect, stats, dry, purge, after) = tokio::task::spawn_blocking(move || {
        let inspect = idemkit(&[
            "inspect",
            &url,
            "running",
            "done",
            "--effective",
            "--body",
            "--json",
        ]);
        let stats = idemkit(&["stats", &url, "--json"]);
        let dry = idemkit(&["purge", &url, "--dry-run"]);
        let purge = idemkit(&["purge", &url, "--batch-size", "3", "--json"]);
        let after = idemkit(&["stats", &url, "--json"]);
        (inspect, stats, dry, purge, after)
    })
    .await
    .unwrap();

    assert_eq!(inspect.code, 0, "{inspect:?}");
    let records = inspect.json();
    assert_eq!(records[0]["state"], "in_flight");
    assert_eq!(records[0]["fingerprint_version"], 2);
    assert!(records[0]["lease_left_ms"].as_u64().unwrap() > 30_000);
    assert_eq!(records[1]["state"], "completed");
    assert_eq!(records[1]["status"], 202);
    assert_eq!(records[1]["header_names"], serde_json::json!(["etag"]));
    assert_eq!(records[1]["body_bytes"], 3);
    assert_eq!(records[1]["body_base64"], "/wAQ", "a body that is not text");

    assert_eq!(stats.code, 0, "{stats:?}");
    let counted = stats.json();
    assert_eq!(counted["in_flight"], 1, "{counted}");
    assert_eq!(counted["completed"], 1, "{counted}");
    assert_eq!(counted["purgeable"], 4, "{counted}");
    assert!(counted["size_bytes"].as_u64().unwrap() > 0);

    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(
        dry.stdout.contains("4 record(s) would be deleted"),
        "{}",
        dry.stdout
    );
    assert_eq!(purge.code, 0, "{purge:?}");
    let purged = purge.json();
    assert_eq!(purged["deleted"], 4, "{purged}");
    assert_eq!(
        purged["batches"], 2,
        "a batch of 3, then one of 1: {purged}"
    );
    let after = after.json();
    assert_eq!(
        (after["purgeable"].clone(), after["in_flight"].clone()),
        (0.into(), 1.into())
    );
    assert_eq!(after["completed"], 1);
}

#[test]
fn check_passes_in_tables_of_its_own_and_drops_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("checked.db");
    assert_eq!(idemkit(&["migrate", &url(&file)]).code, 0);
    let before = tables(&file);

    let run = idemkit(&["check", &url(&file)]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("ok    claims::atomic_claim"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(" 0 failed"), "{}", run.stdout);
    assert!(!run.stdout.contains("FAIL"), "{}", run.stdout);
    assert_eq!(
        tables(&file),
        before,
        "the check dropped every table it made"
    );

    // On a path with no file yet, the check makes one and removes it after.
    let fresh = dir.path().join("fresh.db");
    let run = idemkit(&["check", &url(&fresh), "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["left_behind"], 0);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("fresh.db"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
