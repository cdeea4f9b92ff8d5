//! The HTTP conformance scenarios against the conformance server on Redis, over loopback
//! HTTP: each server in its own process, all sharing one `redis-server` this test binary
//! starts on a free loopback port (no persistence), each test in its own namespace. The
//! 50-way race also runs across two server processes sharing one namespace.
//!
//! Without `redis-server` these tests say so and pass, unless `IDEMKIT_REQUIRE_REDIS=1`.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};

use redis_harness::RedisServer;
use support::client::{Call, send};
use support::scenarios::{self, Target};

/// A target on this binary's shared Redis, in a namespace of its own; `None` (after
/// saying why) when Redis is not installed.
fn redis() -> Option<Target> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let server: &'static RedisServer = redis_harness::shared()?;
    let namespace = format!(
        "tower-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    Some(Target {
        args: vec![
            "--backend".to_owned(),
            server.url(),
            "--namespace".to_owned(),
            namespace,
        ],
        corrupt: Some(Box::new(move |storage_key: &str| {
            // A plain string where the backend keeps its records: not a record.
            server
                .cli(&["SET", storage_key, "not a record"])
                .expect("redis-cli SET");
        })),
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_replay() {
    let Some(target) = redis() else { return };
    scenarios::basic_replay(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn payload_mismatch() {
    let Some(target) = redis() else { return };
    scenarios::payload_mismatch(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_same_key_exactly_once() {
    let Some(target) = redis() else { return };
    scenarios::concurrent_same_key_exactly_once(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_same_key_exactly_once_across_two_servers() {
    let Some(target) = redis() else { return };
    let one = target.start(&[]);
    let two = target.start(&[]);
    scenarios::fifty_way_race(&[&one, &two], "K3").await;
    assert_eq!(
        one.handler_calls().await + two.handler_calls().await,
        1,
        "one run across both servers"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_wait_then_replay() {
    let Some(target) = redis() else { return };
    scenarios::in_flight_wait_then_replay(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_wait_timeout() {
    let Some(target) = redis() else { return };
    scenarios::in_flight_wait_timeout(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_recovery_lease_expiry() {
    let Some(target) = redis() else { return };
    scenarios::crash_recovery_lease_expiry(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_are_not_cached() {
    let Some(target) = redis() else { return };
    scenarios::server_errors_are_not_cached(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_tenant_isolation() {
    let Some(target) = redis() else { return };
    scenarios::cross_tenant_isolation(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_key_when_required() {
    let Some(target) = redis() else { return };
    scenarios::missing_key_when_required(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn response_headers_preserved() {
    let Some(target) = redis() else { return };
    scenarios::response_headers_preserved(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn corrupt_record_treated_as_absent() {
    let Some(target) = redis() else { return };
    scenarios::corrupt_record_treated_as_absent(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn body_size_exceeded_bypass() {
    let Some(target) = redis() else { return };
    scenarios::body_size_exceeded_bypass(&target).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abandoned_request_frees_its_key() {
    let Some(target) = redis() else { return };
    scenarios::abandoned_request_frees_its_key(&target).await;
}

/// A stored record whose status is out of range is corrupt like any other broken field:
/// the retry runs anew (and the corruption is reported), instead of answering 503 on
/// every retry for the record's whole life.
#[tokio::test(flavor = "multi_thread")]
async fn a_stored_status_out_of_range_runs_anew_instead_of_503() {
    let Some(target) = redis() else { return };
    let Some(redis) = redis_harness::shared() else {
        return;
    };
    let server = target.start(&[]);
    let call = || Call::post("/resources").key("K-status").body("{}");
    let first = send(server.address, call()).await.unwrap();
    assert_eq!(first.status, 201);
    let storage_key = send(
        server.address,
        Call::get("/_storage_key?method=POST&path=%2Fresources").key("K-status"),
    )
    .await
    .unwrap();
    let storage_key = String::from_utf8(storage_key.body.to_vec()).unwrap();
    // The record is one string (idemkit-redis's layout 2): its status is the three
    // digits at offset 116, here made one no HTTP response has.
    redis
        .cli(&["SETRANGE", storage_key.trim(), "116", "099"])
        .expect("redis-cli SETRANGE");

    for _ in 0..2 {
        let retry = send(server.address, call()).await.unwrap();
        assert_eq!(retry.status, 201, "run anew, not {}", retry.status);
    }
    assert_eq!(
        server.handler_calls().await,
        2,
        "ran again once, then replayed"
    );
}

/// A claim whose reply timed out (the server frozen mid-request) answers 503 with
/// `Retry-After`, and the key is free again soon after the server answers: the retry the
/// 503 asked for runs, instead of meeting the lost claim in flight for a whole lease.
#[tokio::test(flavor = "multi_thread")]
async fn a_claim_whose_reply_timed_out_does_not_hold_the_key() {
    if !redis_harness::available() {
        return;
    }
    let redis = RedisServer::start().expect("a private redis-server");
    let server = support::server::ServerProcess::start(&[
        "--backend",
        &redis.url(),
        "--lease-ttl-ms",
        "60000",
        "--wait-timeout-ms",
        "500",
    ]);
    let call = || Call::post("/resources").key("K-lost-claim").body("{}");
    redis.pause().unwrap();
    let during = send(server.address, call()).await;
    redis.resume().unwrap();
    let during = during.unwrap();
    assert_eq!(during.status, 503, "a frozen store is a storage error");
    assert!(during.header("retry-after").is_some());

    // Well within the 60 s lease; a few retries, as a client following Retry-After would.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let retry = send(server.address, call()).await.unwrap();
        if retry.status == 201 {
            break;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "the lost claim still holds the key: {}",
            retry.status
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(server.handler_calls().await, 1);
}

/// Started on a Redis that refuses the connection or the password, the server exits at
/// once and says which: "connection refused", or the server's own `WRONGPASS ...` reply,
/// instead of `redis connect failed: no reply within 5s` once the 5 s connect timeout
/// has run out.
#[test]
fn start_up_errors_say_why_at_once() {
    if !redis_harness::available() {
        return;
    }
    let limit = std::time::Duration::from_secs(30);
    // Well under the connect timeout, with room for a loaded machine to start a process.
    let at_once = std::time::Duration::from_secs(4);

    let gone = RedisServer::start().expect("a private redis-server");
    let refusing = gone.url();
    drop(gone);
    let (status, stderr, took) = support::server::run_failing(&["--backend", &refusing], limit);
    assert!(status.is_some_and(|status| !status.success()), "{stderr}");
    assert!(stderr.contains("connection refused"), "{stderr}");
    assert!(took < at_once, "took {took:?}: {stderr}");

    let guarded = RedisServer::start().expect("a private redis-server");
    guarded
        .cli(&["CONFIG", "SET", "requirepass", "right"])
        .expect("redis-cli CONFIG SET");
    let wrong = format!("redis://:wrong@127.0.0.1:{}/", guarded.port());
    let (status, stderr, took) = support::server::run_failing(&["--backend", &wrong], limit);
    assert!(status.is_some_and(|status| !status.success()), "{stderr}");
    assert!(
        stderr.contains("WRONGPASS invalid username-password pair"),
        "the server's own words: {stderr}"
    );
    assert!(
        !stderr.contains(":wrong@"),
        "the password is never printed: {stderr}"
    );
    assert!(took < at_once, "took {took:?}: {stderr}");
}
