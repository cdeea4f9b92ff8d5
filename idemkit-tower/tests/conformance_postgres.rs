//! The HTTP conformance scenarios against the conformance server on PostgreSQL, over
//! loopback HTTP: each server in its own process, on the machine's server, each test in
//! a table of its own. The 50-way race also runs across two server processes sharing one
//! table; with `--effects`, handler writes commit with the stored response, so racing
//! duplicates, a crash inside the transaction and a run taken over leave exactly the
//! rows `GET /_effects` counts.
//!
//! Not run here: corrupt-record-treated-as-absent (a typed table cannot hold bytes that
//! are not a record). Without PostgreSQL these tests say so and pass, unless
//! `IDEMKIT_REQUIRE_POSTGRES=1`.

#[path = "../examples/conformance_server/app/mod.rs"]
#[allow(dead_code)] // only its table naming is read here: the servers are child processes
mod app;
mod support;

use std::process::Command;
use std::time::Duration;

use http::StatusCode;
use support::client::{Call, send};
use support::scenarios::{self, Target};
use support::server::ServerProcess;

fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-XAtqc", sql])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A target on the machine's server with a table of its own (dropped at the end).
struct Postgres {
    target: Target,
    url: String,
    table: String,
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .args([
                &self.url,
                "-XAtqc",
                &format!("DROP TABLE IF EXISTS {}", self.table),
            ])
            .output();
    }
}

fn postgres() -> Option<Postgres> {
    let url = pg_harness::machine()?;
    let table = pg_harness::unique_name("tower_conformance");
    Some(Postgres {
        target: Target {
            args: vec![
                "--backend".into(),
                url.clone(),
                "--table".into(),
                table.clone(),
            ],
            corrupt: None,
        },
        url,
        table,
    })
}

/// A raw key no other test uses (the effects table is shared).
fn raw_key(name: &str) -> String {
    pg_harness::unique_name(name)
}

async fn effect_rows(server: &ServerProcess, key: &str) -> u64 {
    let reply = send(server.address, Call::get(&format!("/_effects?key={key}")))
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let json = reply.json();
    assert_eq!(
        json.as_object().unwrap().len(),
        1,
        "exactly {{\"rows\":N}}: {json}"
    );
    json["rows"].as_u64().unwrap()
}

/// Sends a signal to a server process, by its id.
fn signal(server: &ServerProcess, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn order(key: &str) -> Call {
    Call::post("/resources").key(key).body(r#"{"name": "x"}"#)
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_replay() {
    let Some(pg) = postgres() else { return };
    scenarios::basic_replay(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn payload_mismatch() {
    let Some(pg) = postgres() else { return };
    scenarios::payload_mismatch(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_same_key_exactly_once() {
    let Some(pg) = postgres() else { return };
    scenarios::concurrent_same_key_exactly_once(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_same_key_exactly_once_across_two_servers() {
    let Some(pg) = postgres() else { return };
    let one = pg.target.start(&[]);
    let two = pg.target.start(&[]);
    scenarios::fifty_way_race(&[&one, &two], "K3").await;
    assert_eq!(one.handler_calls().await + two.handler_calls().await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_wait_then_replay() {
    let Some(pg) = postgres() else { return };
    scenarios::in_flight_wait_then_replay(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_wait_timeout() {
    let Some(pg) = postgres() else { return };
    scenarios::in_flight_wait_timeout(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_recovery_lease_expiry() {
    let Some(pg) = postgres() else { return };
    scenarios::crash_recovery_lease_expiry(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_are_not_cached() {
    let Some(pg) = postgres() else { return };
    scenarios::server_errors_are_not_cached(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_tenant_isolation() {
    let Some(pg) = postgres() else { return };
    scenarios::cross_tenant_isolation(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_key_when_required() {
    let Some(pg) = postgres() else { return };
    scenarios::missing_key_when_required(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn response_headers_preserved() {
    let Some(pg) = postgres() else { return };
    scenarios::response_headers_preserved(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn body_size_exceeded_bypass() {
    let Some(pg) = postgres() else { return };
    scenarios::body_size_exceeded_bypass(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abandoned_request_frees_its_key() {
    let Some(pg) = postgres() else { return };
    scenarios::abandoned_request_frees_its_key(&pg.target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn storage_key_answers_the_rows_key() {
    let Some(pg) = postgres() else { return };
    let server = pg.target.start(&[]);
    let reply = send(server.address, order("SK1")).await.unwrap();
    assert_eq!(reply.status, 201);
    let storage_key = send(
        server.address,
        Call::get("/_storage_key?method=POST&path=%2Fresources").key("SK1"),
    )
    .await
    .unwrap();
    assert_eq!(storage_key.status, StatusCode::OK);
    let storage_key = String::from_utf8(storage_key.body.to_vec()).unwrap();
    let sql = format!(
        "SELECT count(*) FROM {} WHERE key = '{}' AND completed",
        pg.table,
        storage_key.trim()
    );
    assert_eq!(psql(&pg.url, &sql), "1");
}

/// `--namespace` as the Redis tests pass it (not a valid table name) names a table of its
/// own, shared by the servers given the same namespace.
#[tokio::test(flavor = "multi_thread")]
async fn a_redis_style_namespace_names_a_table_of_its_own() {
    let Some(url) = pg_harness::machine() else {
        return;
    };
    let namespace = format!("tower-{}-ns", std::process::id());
    let table = app::store::namespace_table(&namespace);
    let target = Target {
        args: vec![
            "--backend".into(),
            url.clone(),
            "--namespace".into(),
            namespace,
        ],
        corrupt: None,
    };
    let _dropped = Postgres {
        target: Target {
            args: vec![],
            corrupt: None,
        },
        url: url.clone(),
        table: table.clone(),
    };
    let one = target.start(&[]);
    let two = target.start(&[]);
    let first = send(one.address, order("NS1")).await.unwrap();
    assert_eq!(first.status, 201);
    let replay = send(two.address, order("NS1")).await.unwrap();
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotency-replayed"), Some("true"));
    assert_eq!(replay.body, first.body);
    let sql = format!("SELECT count(*) FROM {table} WHERE completed");
    assert_eq!(psql(&url, &sql), "1");
}

#[tokio::test(flavor = "multi_thread")]
async fn effects_of_fifty_racing_duplicates_across_two_servers_are_one_row() {
    let Some(pg) = postgres() else { return };
    let one = pg.target.start(&["--effects"]);
    let two = pg.target.start(&["--effects"]);
    let key = raw_key("race");
    scenarios::fifty_way_race(&[&one, &two], &key).await;
    assert_eq!(one.handler_calls().await + two.handler_calls().await, 1);
    assert_eq!(effect_rows(&one, &key).await, 1);
    assert_eq!(effect_rows(&two, &key).await, 1);
    assert_eq!(effect_rows(&one, "never-sent").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_inside_the_transaction_leaves_no_row_and_the_retry_makes_one() {
    let Some(pg) = postgres() else { return };
    let key = raw_key("crash");
    let mut crashed = pg.target.start(&["--effects", "--lease-ttl-ms", "300"]);
    let lost = send(crashed.address, order(&key).header("X-Test-Crash", "1")).await;
    assert!(lost.is_err(), "the crashed server answered: {lost:?}");
    crashed
        .wait_for_exit(Duration::from_secs(60))
        .expect("it exits");
    let server = pg.target.start(&["--effects", "--lease-ttl-ms", "300"]);
    assert_eq!(
        effect_rows(&server, &key).await,
        0,
        "the crashed run's row rolled back"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let reply = send(server.address, order(&key)).await.unwrap();
    assert_eq!(reply.status, 201);
    assert_eq!(effect_rows(&server, &key).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_taken_over_is_refused_and_leaves_no_row() {
    let Some(pg) = postgres() else { return };
    let key = raw_key("stalled");
    let args = [
        "--effects",
        "--lease-ttl-ms",
        "500",
        "--wait-timeout-ms",
        "20000",
    ];
    let one = pg.target.start(&args);
    let two = pg.target.start(&args);
    let stalled = {
        let (address, call) = (one.address, order(&key).header("X-Test-Delay-Ms", "1000"));
        tokio::spawn(async move { send(address, call).await })
    };
    // Once its handler has written its row (inside the open transaction), the first
    // server stalls: stopped, so not even its heartbeat renews the lease.
    tokio::time::sleep(Duration::from_millis(400)).await;
    signal(&one, "-STOP");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let reply = send(two.address, order(&key)).await.unwrap();
    assert_eq!(reply.status, 201, "the retry took the lapsed key over");
    assert_eq!(reply.header("idempotency-replayed"), None);
    signal(&one, "-CONT");
    let stalled = stalled.await.unwrap().unwrap();
    assert!(
        !stalled.status.is_success(),
        "a 2xx for a rolled-back effect"
    );
    assert_eq!(
        stalled.header("content-type"),
        Some("application/problem+json")
    );
    assert_eq!(stalled.problem_type(), "urn:idemkit:lease-lost");
    assert_eq!(effect_rows(&one, &key).await, 1, "only the successor's row");
}

#[tokio::test(flavor = "multi_thread")]
async fn effects_of_an_unprotected_call_are_written_at_once() {
    let Some(pg) = postgres() else { return };
    let server = pg.target.start(&["--effects"]);
    let before = effect_rows(&server, "").await;
    let reply = send(server.address, Call::post("/resources").body("{}"))
        .await
        .unwrap();
    assert_eq!(reply.status, 201);
    assert_eq!(effect_rows(&server, "").await, before + 1);
}
