//! The HTTP conformance scenarios against the conformance server on SQLite
//! (`--backend sqlite://PATH`), over loopback HTTP: each server in its own process, each
//! test on a file of its own in Cargo's scratch directory. Two servers on one file act
//! as two replicas: one run across both for a 50-way race, a duplicate sent to the other
//! server waits for the first one's run and replays it, and a server restarted on the
//! file replays what the one before it stored.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use support::client::{Call, send};
use support::scenarios::{self, Target};

/// A fresh file path (nothing created yet) for one test.
fn fresh_file() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-sqlite");
    std::fs::create_dir_all(&dir).expect("the scratch directory");
    let path = dir.join(format!(
        "{}-{}.db",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

/// A target on a file of its own, with `table` when given.
fn sqlite_on(path: &Path, table: Option<&str>) -> Target {
    let mut args = vec![
        "--backend".to_owned(),
        format!("sqlite://{}", path.display()),
    ];
    if let Some(table) = table {
        args.extend(["--table".to_owned(), table.to_owned()]);
    }
    let (file, table) = (
        path.to_owned(),
        table.unwrap_or("idemkit_records").to_owned(),
    );
    Target {
        args,
        corrupt: Some(Box::new(move |storage_key: &str| {
            // A row whose claim token is one byte long: not a record.
            let connection = rusqlite::Connection::open(&file).expect("the file opens");
            connection
                .execute(
                    &format!(
                        "INSERT OR REPLACE INTO \"{table}\" (key, fingerprint, fingerprint_version, token, claimed_at, deadline, remove_at)
                         VALUES (?1, 'x', 1, X'00', 0, 9000000000000000000, 9000000000000000000)"
                    ),
                    [storage_key],
                )
                .expect("the corrupt row is written");
        })),
    }
}

fn sqlite() -> Target {
    sqlite_on(&fresh_file(), None)
}

fn create(key: &str) -> Call {
    Call::post("/resources").key(key).body(r#"{"name": "x"}"#)
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_replay() {
    scenarios::basic_replay(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn payload_mismatch() {
    scenarios::payload_mismatch(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_same_key_exactly_once() {
    scenarios::concurrent_same_key_exactly_once(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_same_key_exactly_once_across_two_servers() {
    let target = sqlite();
    let one = target.start(&[]);
    let two = target.start(&[]);
    scenarios::fifty_way_race(&[&one, &two], "K3").await;
    assert_eq!(
        one.handler_calls().await + two.handler_calls().await,
        1,
        "one run across both servers"
    );
}

/// A duplicate sent to the other replica while the first request runs waits for it
/// (woken through the file) and replays its response.
#[tokio::test(flavor = "multi_thread")]
async fn a_duplicate_on_the_other_replica_waits_and_replays() {
    let target = sqlite();
    let one = target.start(&[]);
    let two = target.start(&[]);
    let address = one.address;
    let first =
        tokio::spawn(
            async move { send(address, create("R1").header("X-Test-Delay-Ms", "1500")).await },
        );
    for _ in 0..3_000 {
        if one.handler_calls().await >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let second = send(two.address, create("R1")).await.unwrap();
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.status, 201);
    assert_eq!(second.status, 201);
    assert_eq!(second.header("idempotency-replayed"), Some("true"));
    assert_eq!(second.body, first.body);
    assert_eq!(one.handler_calls().await + two.handler_calls().await, 1);
}

/// A server stopped and another started on the same file (a deploy) replays what the
/// first stored, in a table of its own name.
#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_server_replays_what_the_last_one_stored() {
    let target = sqlite_on(&fresh_file(), Some("deploy_records"));
    let first = {
        let server = target.start(&[]);
        let reply = send(server.address, create("D1")).await.unwrap();
        assert_eq!(server.handler_calls().await, 1);
        reply
    };
    let server = target.start(&[]);
    let replay = send(server.address, create("D1")).await.unwrap();
    assert_eq!(replay.status, first.status);
    assert_eq!(replay.body, first.body);
    assert_eq!(replay.header("idempotency-replayed"), Some("true"));
    assert_eq!(
        server.handler_calls().await,
        0,
        "nothing ran again after the restart"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_wait_then_replay() {
    scenarios::in_flight_wait_then_replay(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_wait_timeout() {
    scenarios::in_flight_wait_timeout(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_recovery_lease_expiry() {
    scenarios::crash_recovery_lease_expiry(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_are_not_cached() {
    scenarios::server_errors_are_not_cached(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_tenant_isolation() {
    scenarios::cross_tenant_isolation(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_key_when_required() {
    scenarios::missing_key_when_required(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn response_headers_preserved() {
    scenarios::response_headers_preserved(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn corrupt_record_treated_as_absent() {
    scenarios::corrupt_record_treated_as_absent(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn body_size_exceeded_bypass() {
    scenarios::body_size_exceeded_bypass(&sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abandoned_request_frees_its_key() {
    scenarios::abandoned_request_frees_its_key(&sqlite()).await;
}

/// `/_storage_key` answers the key column of the request's row.
#[tokio::test(flavor = "multi_thread")]
async fn the_storage_key_is_the_rows_key() {
    let path = fresh_file();
    let target = sqlite_on(&path, None);
    let server = target.start(&[]);
    let stored = send(server.address, create("S1")).await.unwrap();
    assert_eq!(stored.status, 201);
    let key = send(
        server.address,
        Call::get("/_storage_key?method=POST&path=%2Fresources").key("S1"),
    )
    .await
    .unwrap();
    let key = String::from_utf8(key.body.to_vec()).unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    let status: i64 = connection
        .query_row(
            "SELECT status FROM idemkit_records WHERE key = ?1",
            [key.trim()],
            |row| row.get(0),
        )
        .expect("the row of that key");
    assert_eq!(status, 201);
}

/// `--namespace` names the table on SQLite, as on PostgreSQL: two servers on one file
/// with one namespace share their records (a key runs once across them), and a server
/// with another namespace keeps its own.
#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_names_the_table_servers_share() {
    let path = fresh_file();
    let on = |namespace: &str| Target {
        args: vec![
            "--backend".to_owned(),
            format!("sqlite://{}", path.display()),
            "--namespace".to_owned(),
            namespace.to_owned(),
        ],
        corrupt: None,
    };
    let (blue, blue_too, green) = (on("blue"), on("blue"), on("green"));
    let (one, two, other) = (blue.start(&[]), blue_too.start(&[]), green.start(&[]));
    let first = send(one.address, create("N1")).await.unwrap();
    let shared = send(two.address, create("N1")).await.unwrap();
    assert_eq!(shared.header("idempotency-replayed"), Some("true"));
    assert_eq!(shared.body, first.body);
    let apart = send(other.address, create("N1")).await.unwrap();
    assert_eq!(apart.status, 201);
    assert_eq!(apart.header("idempotency-replayed"), None);
    assert_eq!(other.handler_calls().await, 1, "its own namespace ran it");
    let connection = rusqlite::Connection::open(&path).unwrap();
    for table in ["blue", "green"] {
        let rows: i64 = connection
            .query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |row| {
                row.get(0)
            })
            .unwrap();
        assert_eq!(rows, 1, "{table}");
    }
}
