//! The built `idemkit` against private Redis servers (redis-harness): records written by
//! the HTTP layer through the conformance server and looked up by their raw key; claims
//! in flight and lapsed; counts; purge in batches, on a terminal and off one; check on a
//! healthy and on a failing server; and the errors an operator meets.

mod support;

use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Backend, Claim, ClaimToken, Response};
use idemkit_redis::RedisBackend;
use redis::Commands;
use redis_harness::RedisServer;
use support::{ConformanceServer, closed_port, http, idemkit, identity_scope, namespace};

fn connection(server: &RedisServer) -> redis::Connection {
    redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap()
}

/// A backend on `server` in `namespace`, connected on the test's runtime.
async fn backend(server: &RedisServer, namespace: &str) -> RedisBackend {
    RedisBackend::builder()
        .url(&server.url())
        .namespace(namespace)
        .command_timeout(Duration::from_secs(10))
        .build()
        .await
        .unwrap()
}

async fn claim(backend: &RedisBackend, key: &str, lease: Duration) -> ClaimToken {
    match Backend::claim(backend, key, "fp", 3, lease).await.unwrap() {
        Claim::New(token) => token,
        other => panic!("expected a new claim of {key}, got {other:?}"),
    }
}

/// Writes, by hand, a completed record of the backend's format that is gone (it expired
/// an hour ago) but whose key has no TTL, as a `PERSIST` by hand would leave it: what a
/// purge deletes on Redis.
fn write_gone_record(raw: &mut redis::Connection, storage_key: &str) {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(raw).unwrap();
    let now = seconds * 1_000_000 + micros;
    let ago = |micros: u64| (now - micros).to_string();
    let hour = 3_600_000_000;
    let () = raw
        .hset_multiple(
            storage_key,
            &[
                ("v", "1".to_owned()),
                ("s", "completed".to_owned()),
                ("t", "0123456789abcdef0123456789abcdef".to_owned()),
                ("f", "fp".to_owned()),
                ("fv", "1".to_owned()),
                ("ca", ago(2 * hour)),
                ("lu", ago(hour)),
                ("ga", ago(hour)),
                ("cd", ago(2 * hour)),
                ("st", "200".to_owned()),
                ("h", String::new()),
                ("b", "old".to_owned()),
            ],
        )
        .unwrap();
}

#[test]
fn inspect_finds_a_record_the_conformance_server_stored_by_its_raw_key() {
    let Some(redis) = redis_harness::shared() else {
        return;
    };
    let namespace = namespace("server");
    let server = ConformanceServer::start(&["--backend", &redis.url(), "--namespace", &namespace]);
    let headers = [
        ("idempotency-key", "order-17"),
        ("x-identity", "alice"),
        ("content-type", "application/json"),
        ("x-test-response-header", "Location: /charges/17"),
    ];
    let first = http(
        server.address,
        "POST",
        "/charges",
        &headers,
        r#"{"amount":5}"#,
    );
    assert_eq!(first.status, 201, "{first:?}");

    let run = idemkit(&[
        "inspect",
        &redis.url(),
        "order-17",
        "--namespace",
        &namespace,
        "--scope",
        &identity_scope("alice"),
        "--method",
        "POST",
        "--path",
        "/charges",
        "--body",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let found = &run.json()[0];
    assert_eq!(found["key"], "order-17");
    assert_eq!(found["state"], "completed", "{found}");
    assert_eq!(found["status"], 201);
    assert_eq!(found["body_bytes"], first.body.len());
    assert_eq!(
        found["body"],
        String::from_utf8(first.body.clone()).unwrap()
    );
    let names: Vec<String> = found["header_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap().to_ascii_lowercase())
        .collect();
    assert!(names.contains(&"location".to_owned()), "{names:?}");
    assert!(found["fingerprint_version"].as_u64().is_some());
    let expires_in = found["expires_in_ms"].as_u64().unwrap();
    assert!(
        expires_in > 23 * 3_600_000 && expires_in <= 24 * 3_600_000,
        "the layer stores 2xx for 24 h: {expires_in}"
    );
    assert!(found["expires_at"].as_str().unwrap().ends_with('Z'));

    // The server says where it stored the record of this request: the same key.
    let storage = http(
        server.address,
        "GET",
        "/_storage_key?method=POST&path=/charges",
        &[("idempotency-key", "order-17"), ("x-identity", "alice")],
        "",
    );
    assert_eq!(storage.status, 200, "{storage:?}");
    assert_eq!(
        found["storage_key"].as_str().unwrap(),
        String::from_utf8(storage.body).unwrap().trim()
    );

    // By its effective key, the same record; in human form, the same facts.
    let effective = found["effective_key"].as_str().unwrap();
    let run = idemkit(&[
        "inspect",
        &redis.url(),
        effective,
        "--effective",
        "--namespace",
        &namespace,
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    for line in [
        "state           completed",
        "status          201",
        &format!("effective key   {effective}"),
    ] {
        assert!(run.stdout.contains(line), "{line:?} in {}", run.stdout);
    }
    assert!(
        !run.stdout.contains("amount"),
        "no body without --body: {}",
        run.stdout
    );

    // Another caller's scope, another path or another namespace names no record.
    for (scope, path, space) in [
        (&identity_scope("bob"), "/charges", namespace.as_str()),
        (&identity_scope("alice"), "/refunds", namespace.as_str()),
        (&identity_scope("alice"), "/charges", "idemkit"),
    ] {
        let run = idemkit(&[
            "inspect",
            &redis.url(),
            "order-17",
            "--namespace",
            space,
            "--scope",
            scope,
            "--path",
            path,
            "--json",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.json()[0]["state"], "absent", "{scope} {path} {space}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_shows_claims_in_flight_with_their_lease_and_lapsed_ones() {
    let Some(redis) = redis_harness::shared() else {
        return;
    };
    let namespace = namespace("claims");
    let backend = backend(redis, &namespace).await;
    claim(&backend, "running", Duration::from_secs(60)).await;
    claim(&backend, "stalled", Duration::from_millis(100)).await;
    tokio::time::sleep(Duration::from_millis(400)).await;

    let url = redis.url();
    let run = tokio::task::spawn_blocking(move || {
        idemkit(&[
            "inspect",
            &url,
            "running",
            "stalled",
            "nothing",
            "--effective",
            "--namespace",
            &namespace,
            "--json",
        ])
    })
    .await
    .unwrap();
    assert_eq!(run.code, 0, "{run:?}");
    let records = run.json();
    let [running, stalled, nothing] = records.as_array().unwrap().as_slice() else {
        panic!("one answer per key, in order: {records}");
    };
    assert_eq!(running["state"], "in_flight");
    assert_eq!(running["lease_lapsed"], false);
    let left = running["lease_left_ms"].as_u64().unwrap();
    assert!(left > 30_000 && left <= 60_000, "{left}");
    assert_eq!(running["fingerprint_version"], 3);
    assert_eq!(running["status"], serde_json::Value::Null);
    assert_eq!(stalled["state"], "in_flight");
    assert_eq!(stalled["lease_lapsed"], true);
    assert_eq!(stalled["lease_left_ms"], 0);
    assert_eq!(nothing["state"], "absent");
    assert_eq!(nothing["claimed_at"], serde_json::Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_the_namespace_by_state() {
    let Some(redis) = redis_harness::shared() else {
        return;
    };
    let namespace = namespace("stats");
    let backend = backend(redis, &namespace).await;
    claim(&backend, "running", Duration::from_secs(60)).await;
    let done = claim(&backend, "done", Duration::from_secs(60)).await;
    let ttl = Duration::from_secs(3600);
    let response = Arc::new(Response::new(200, "ok"));
    assert!(
        Backend::complete(&backend, "done", &done, response, ttl)
            .await
            .unwrap()
    );
    write_gone_record(&mut connection(redis), &backend.storage_key("old"));

    let url = redis.url();
    let (json, human) = tokio::task::spawn_blocking(move || {
        (
            idemkit(&["stats", &url, "--namespace", &namespace, "--json"]),
            idemkit(&["stats", &url, "--namespace", &namespace]),
        )
    })
    .await
    .unwrap();
    assert_eq!(json.code, 0, "{json:?}");
    let stats = json.json();
    assert_eq!(stats["in_flight"], 1, "{stats}");
    assert_eq!(stats["lapsed"], 0, "{stats}");
    assert_eq!(stats["completed"], 1, "{stats}");
    assert_eq!(stats["purgeable"], 1, "{stats}");
    assert!(stats["oldest_claim_ms"].as_u64().is_some(), "{stats}");
    let nearest = stats["nearest_expiry_ms"].as_u64().unwrap();
    assert!(nearest > 3_000_000 && nearest <= 3_600_000, "{nearest}");
    assert!(stats["size_bytes"].as_u64().unwrap() > 0, "{stats}");
    assert_eq!(human.code, 0, "{human:?}");
    for line in [
        "in flight       1",
        "completed       1",
        "purgeable       1",
        "oldest claim    made ",
    ] {
        assert!(human.stdout.contains(line), "{line:?} in {}", human.stdout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_counts_with_dry_run_and_deletes_in_bounded_batches() {
    let Some(redis) = redis_harness::shared() else {
        return;
    };
    let namespace = namespace("purge");
    let backend = backend(redis, &namespace).await;
    let mut raw = connection(redis);
    for index in 0..5 {
        write_gone_record(&mut raw, &backend.storage_key(&format!("old-{index}")));
    }
    claim(&backend, "running", Duration::from_secs(60)).await;

    let url = redis.url();
    let (dry, purge, again) = tokio::task::spawn_blocking(move || {
        let dry = idemkit(&[
            "purge",
            &url,
            "--namespace",
            &namespace,
            "--dry-run",
            "--json",
        ]);
        let purge = idemkit(&[
            "purge",
            &url,
            "--namespace",
            &namespace,
            "--batch-size",
            "2",
        ]);
        let again = idemkit(&["purge", &url, "--namespace", &namespace, "--json"]);
        (dry, purge, again)
    })
    .await
    .unwrap();
    assert_eq!(dry.code, 0, "{dry:?}");
    let counted = dry.json();
    assert_eq!(
        (counted["dry_run"].clone(), counted["purgeable"].clone()),
        (true.into(), 5.into())
    );
    assert_eq!(counted["deleted"], 0);

    // Not a terminal: one plain line per batch, bounded by the batch size.
    assert_eq!(purge.code, 0, "{purge:?}");
    let lines: Vec<&str> = purge.stdout.lines().collect();
    assert_eq!(
        &lines[..3],
        [
            "batch 1: deleted 2 (total 2)",
            "batch 2: deleted 2 (total 4)",
            "batch 3: deleted 1 (total 5)"
        ],
        "{}",
        purge.stdout
    );
    assert!(lines[3].contains("deleted 5 record(s)"), "{}", purge.stdout);
    assert!(!purge.stdout.contains('\r'), "no bar off a terminal");

    assert_eq!(again.json()["deleted"], 0, "{again:?}");
    let left: u64 = redis::cmd("EXISTS")
        .arg(backend.storage_key("old-0"))
        .arg(backend.storage_key("running"))
        .query(&mut raw)
        .unwrap();
    assert_eq!(left, 1, "the gone records went, the claim in flight stayed");
    assert!(Backend::get(&backend, "running").await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_on_a_terminal_draws_a_progress_bar() {
    let Some(redis) = redis_harness::shared() else {
        return;
    };
    let namespace = namespace("bar");
    let backend = backend(redis, &namespace).await;
    let mut raw = connection(redis);
    for index in 0..3 {
        write_gone_record(&mut raw, &backend.storage_key(&format!("old-{index}")));
    }
    // `script` runs the command on a pseudo-terminal of its own.
    let command = format!(
        "{} purge {} --namespace {namespace} --batch-size 1",
        env!("CARGO_BIN_EXE_idemkit"),
        redis.url()
    );
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("`script` (util-linux) runs")
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    let shown = String::from_utf8_lossy(&output.stdout);
    let full = format!("[{}] 3/3 deleted", "#".repeat(30));
    assert!(shown.contains(&format!("\r{full}")), "{shown:?}");
    assert!(
        shown.contains("\r[##########"),
        "redrawn in place: {shown:?}"
    );
    assert!(
        !shown.contains("batch 1:"),
        "no plain lines on a terminal: {shown:?}"
    );
    assert!(shown.contains("deleted 3 record(s)"), "{shown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_passes_on_redis_in_its_own_namespace_and_cleans_up() {
    let Some(_) = redis_harness::shared() else {
        return;
    };
    // A server of its own, so that every key on it can be counted.
    let redis = RedisServer::start().unwrap();
    let deployment = backend(&redis, "idemkit").await;
    let token = claim(&deployment, "live-order", Duration::from_secs(600)).await;
    let keys_before: u64 = redis::cmd("DBSIZE").query(&mut connection(&redis)).unwrap();

    let url = redis.url();
    let run = tokio::task::spawn_blocking(move || idemkit(&["check", &url, "--json"]))
        .await
        .unwrap();
    assert_eq!(run.code, 0, "{run:?}");
    let report = run.json();
    assert_eq!(report["failed"], 0, "{report}");
    let vectors = report["vectors"].as_array().unwrap();
    assert_eq!(report["passed"].as_u64().unwrap() as usize, vectors.len());
    assert!(vectors.len() >= 30, "{report}");
    assert!(
        vectors
            .iter()
            .any(|vector| vector["name"] == "atomic_claim")
    );
    assert!(
        report["ran_in"]
            .as_str()
            .unwrap()
            .starts_with("namespaces idemkit:check-")
    );
    assert_eq!(report["left_behind"], 0);

    let keys_after: u64 = redis::cmd("DBSIZE").query(&mut connection(&redis)).unwrap();
    assert_eq!(keys_after, keys_before, "the check left nothing behind");
    let record = Backend::get(&deployment, "live-order")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        record.claim_token(),
        &token,
        "the deployment's record is untouched"
    );
}

/// Sets `redis`'s memory limit below what it uses: from then on it refuses every write
/// (`OOM`) and still answers reads.
fn refuse_writes(redis: &RedisServer) {
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(1)
        .query(&mut connection(redis))
        .unwrap();
}

#[test]
fn a_server_at_its_memory_limit_is_reported_as_such_not_as_unreachable() {
    let Some(_) = redis_harness::shared() else {
        return;
    };
    // No library loaded yet, and a memory limit below what the server uses: the
    // backend's first write, loading its functions, is refused.
    let redis = RedisServer::start().unwrap();
    refuse_writes(&redis);
    let run = idemkit(&["stats", &redis.url()]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.contains("refused to load"), "{}", run.stderr);
    assert!(run.stderr.contains("OOM"), "says why: {}", run.stderr);
    assert!(run.stderr.contains("raise maxmemory"), "{}", run.stderr);
    assert!(!run.stderr.contains("redis-cli"), "{}", run.stderr);
}

#[test]
fn check_reports_each_vector_and_exits_1_on_a_server_that_refuses_writes() {
    let Some(_) = redis_harness::shared() else {
        return;
    };
    // The library loaded first (loading it is a write too), then a memory limit below
    // what the server uses: every write is refused.
    let redis = RedisServer::start().unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(backend(&redis, "idemkit"));
    refuse_writes(&redis);
    let run = idemkit(&["check", &redis.url()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains("FAIL  claims::atomic_claim"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("OOM"), "says why: {}", run.stdout);
    assert!(
        run.stderr.contains("conformance vectors failed"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("to fix:"), "{}", run.stderr);

    // With --json: one document, the failures in it, and the same exit code.
    let run = idemkit(&["check", &redis.url(), "--json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let report = run.json();
    assert!(report["failed"].as_u64().unwrap() > 0, "{report}");
    let first = &report["vectors"][0];
    assert_eq!(
        (first["name"].as_str(), first["passed"].as_bool()),
        (Some("atomic_claim"), Some(false))
    );
    assert!(
        first["message"].as_str().unwrap().contains("OOM"),
        "{first}"
    );
}

#[test]
fn an_unreachable_server_is_exit_3_with_what_to_do() {
    let url = format!("redis://127.0.0.1:{}", closed_port());
    for command in ["stats", "purge", "migrate", "check"] {
        let run = idemkit(&[command, &url]);
        assert_eq!(run.code, 3, "{command}: {run:?}");
        assert!(
            run.stderr.contains("cannot reach the Redis server"),
            "{command}: {}",
            run.stderr
        );
        assert!(run.stderr.contains("to fix:"), "{command}: {}", run.stderr);
    }
    let run = idemkit(&["inspect", &url, "k", "--path", "/a", "--json"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(run.json()["exit_code"], 3);
    assert!(
        run.json()["remedy"]
            .as_str()
            .unwrap()
            .contains("redis-server")
    );
}

#[test]
fn a_server_that_stops_answering_is_exit_3_not_a_hang() {
    let Some(_) = redis_harness::shared() else {
        return;
    };
    let redis = RedisServer::start().unwrap();
    redis.pause().unwrap();
    let started = std::time::Instant::now();
    let run = idemkit(&["stats", &redis.url()]);
    let took = started.elapsed();
    redis.resume().unwrap();
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.contains("to fix:"), "{}", run.stderr);
    // The connect timeout (5 s) and one command timeout (10 s), with room for a busy
    // machine: never an endless wait.
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn migrate_on_redis_connects_and_says_there_is_nothing_to_do() {
    let Some(redis) = redis_harness::shared() else {
        return;
    };
    let run = idemkit(&["migrate", &redis.url()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("nothing to migrate"), "{}", run.stdout);
    let json = idemkit(&["migrate", &redis.url(), "--json"]);
    assert_eq!(json.json()["action"], "nothing_to_do");
}
