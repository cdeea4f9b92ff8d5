//! The twelve HTTP scenarios of idemkit's conformance suite, each against conformance
//! servers started by a [`Target`] (one backend or another).
//!
//! Each scenario follows its description in the suite; where the suite times a step
//! (a request sent 100 ms after another), the step waits instead for what the timing
//! stood for (the first request is inside its handler), with generous margins, so a
//! slow, shared machine cannot reorder it.

use std::time::Duration;

use http::StatusCode;
use tokio::task::JoinSet;

use super::client::{Call, Reply, send, send_then_abandon};
use super::server::ServerProcess;

/// The payload most scenarios send.
const BODY: &str = r#"{"name": "x"}"#;

/// Writes bytes that do not decode at a storage key.
pub type Corrupt = Box<dyn Fn(&str) + Send + Sync>;

/// Starts conformance servers on one backend.
pub struct Target {
    /// Added to every server's command line (the backend, its namespace).
    pub args: Vec<String>,
    /// Writes bytes that do not decode at a storage key, where the backend can hold
    /// them; `None` where it cannot (a typed in-memory store).
    pub corrupt: Option<Corrupt>,
}

impl Target {
    /// A server with the target's arguments and `args`.
    pub fn start(&self, args: &[&str]) -> ServerProcess {
        let mut all: Vec<&str> = self.args.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        ServerProcess::start(&all)
    }
}

fn resources(key: &str) -> Call {
    Call::post("/resources").key(key).body(BODY)
}

fn replayed(reply: &Reply) -> bool {
    reply.header("idempotency-replayed") == Some("true")
}

/// Polls `/_stats` until the handler has run `count` times (bounded: a minute).
async fn until_handler_calls(server: &ServerProcess, count: u64) {
    for _ in 0..3_000 {
        if server.handler_calls().await >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the handler did not reach {count} calls within a minute");
}

/// basic-replay: the second request with the same key and payload gets the first
/// response, marked `Idempotency-Replayed: true`, without running the handler.
pub async fn basic_replay(target: &Target) {
    let server = target.start(&[]);
    let first = send(server.address, resources("K1")).await.unwrap();
    assert_eq!(first.status, 201);
    assert!(first.header("idempotency-replayed").is_none());
    assert_eq!(server.handler_calls().await, 1);

    let second = send(server.address, resources("K1")).await.unwrap();
    assert_eq!(
        server.handler_calls().await,
        1,
        "the handler did not run again"
    );
    assert_eq!(second.status, 201);
    assert!(replayed(&second));
    assert_eq!(second.body, first.body);
    assert_eq!(second.header("content-type"), Some("application/json"));
}

/// payload-mismatch: the same key with another payload is refused with a 422, and the
/// stored response is not handed out.
pub async fn payload_mismatch(target: &Target) {
    let server = target.start(&[]);
    let first = send(server.address, resources("K2")).await.unwrap();
    assert_eq!(first.status, 201);
    let other = send(
        server.address,
        Call::post("/resources").key("K2").body(r#"{"name": "y"}"#),
    )
    .await
    .unwrap();
    assert_eq!(
        server.handler_calls().await,
        1,
        "the handler did not run again"
    );
    assert_eq!(other.status, 422);
    assert_eq!(other.problem_type(), "urn:idemkit:payload-mismatch");
    assert!(!replayed(&other));
    assert!(!String::from_utf8_lossy(&other.body).contains("\"call\""));
}

/// concurrent-same-key-exactly-once: 50 requests at once with one key run the handler
/// once; all get the same response, 49 of them as replays.
pub async fn concurrent_same_key_exactly_once(target: &Target) {
    let server = target.start(&[]);
    fifty_way_race(&[&server], "K3").await;
    assert_eq!(server.handler_calls().await, 1);
}

/// Sends 50 identical requests at once, spread over `servers` in turn, and checks that
/// every answer is the same response, 49 of them replays.
pub async fn fifty_way_race(servers: &[&ServerProcess], key: &str) {
    let mut requests = JoinSet::new();
    for index in 0..50 {
        let address = servers[index % servers.len()].address;
        let call = resources(key);
        requests.spawn(async move { send(address, call).await });
    }
    let mut replies = Vec::new();
    while let Some(reply) = requests.join_next().await {
        replies.push(reply.unwrap().unwrap());
    }
    assert!(replies.iter().all(|reply| reply.status == 201));
    assert!(
        replies.iter().all(|reply| reply.body == replies[0].body),
        "all responses identical"
    );
    assert_eq!(replies.iter().filter(|reply| replayed(reply)).count(), 49);
}

/// in-flight-wait-then-replay: a duplicate that arrives while the first request runs
/// waits for it and replays its response.
pub async fn in_flight_wait_then_replay(target: &Target) {
    let server = target.start(&[]);
    let address = server.address;
    let first = tokio::spawn(async move {
        send(address, resources("K4").header("X-Test-Delay-Ms", "1500")).await
    });
    until_handler_calls(&server, 1).await;
    let second = send(server.address, resources("K4")).await.unwrap();
    let first = first.await.unwrap().unwrap();
    assert_eq!(server.handler_calls().await, 1, "the duplicate did not run");
    assert_eq!(second.status, 201);
    assert!(replayed(&second));
    assert_eq!(second.body, first.body);
    assert!(!replayed(&first));
}

/// in-flight-wait-timeout: when the wait runs out, 423 with the in-progress type and a
/// `Retry-After` (the lease's remaining seconds).
pub async fn in_flight_wait_timeout(target: &Target) {
    let server = target.start(&["--wait-timeout-ms", "200"]);
    let address = server.address;
    let _first = tokio::spawn(async move {
        send(address, resources("K5").header("X-Test-Delay-Ms", "5000")).await
    });
    until_handler_calls(&server, 1).await;
    let second = send(server.address, resources("K5")).await.unwrap();
    assert_eq!(second.status, 423);
    assert_eq!(second.problem_type(), "urn:idemkit:in-progress");
    let retry_after: u64 = second
        .header("retry-after")
        .expect("a Retry-After header")
        .parse()
        .expect("whole seconds");
    // The default lease is 30 s: what remains of it, rounded up, at least one.
    assert!((1..=30).contains(&retry_after), "{retry_after}");
    assert_eq!(server.handler_calls().await, 1, "the duplicate did not run");
}

/// crash-recovery-lease-expiry: the process dies inside the handler, after the claim;
/// once the lease has lapsed, the next request runs the handler.
pub async fn crash_recovery_lease_expiry(target: &Target) {
    let mut crashed = target.start(&["--lease-ttl-ms", "300"]);
    let lost = send(crashed.address, resources("K6").header("X-Test-Crash", "1")).await;
    assert!(lost.is_err(), "the crashed server answered: {lost:?}");
    let status = crashed
        .wait_for_exit(Duration::from_secs(60))
        .expect("the server process exits");
    assert!(!status.success());
    drop(crashed);
    tokio::time::sleep(Duration::from_millis(600)).await;

    let server = target.start(&["--lease-ttl-ms", "300"]);
    let reply = send(server.address, resources("K6")).await.unwrap();
    assert_eq!(reply.status, 201);
    assert!(!replayed(&reply));
    assert_eq!(server.handler_calls().await, 1, "the handler ran");
}

/// 5xx-not-cached-by-default: a 500 is not stored; the retry runs the handler again.
pub async fn server_errors_are_not_cached(target: &Target) {
    let server = target.start(&[]);
    let failed = send(
        server.address,
        resources("K7").header("X-Test-Status", "500"),
    )
    .await
    .unwrap();
    assert_eq!(failed.status, 500);
    assert_eq!(server.handler_calls().await, 1);
    let retry = send(server.address, resources("K7")).await.unwrap();
    assert_eq!(server.handler_calls().await, 2, "the handler ran again");
    assert_eq!(retry.status, 201);
    assert!(!replayed(&retry));
}

/// cross-tenant-isolation: one key from two callers names two records.
pub async fn cross_tenant_isolation(target: &Target) {
    let server = target.start(&[]);
    let a = send(
        server.address,
        resources("K8").header("X-Identity", "tenant-A:user-1"),
    )
    .await
    .unwrap();
    assert_eq!(a.status, 201);
    assert!(String::from_utf8_lossy(&a.body).contains("tenant-A"));
    assert_eq!(server.handler_calls().await, 1);
    let b = send(
        server.address,
        resources("K8").header("X-Identity", "tenant-B:user-2"),
    )
    .await
    .unwrap();
    assert_eq!(
        server.handler_calls().await,
        2,
        "the handler ran for tenant B"
    );
    assert_eq!(b.status, 201);
    assert!(String::from_utf8_lossy(&b.body).contains("tenant-B"));
    assert!(b.header("idempotency-replayed").is_none());
}

/// missing-key-when-required: with keys required, a POST without one is a 400 with the
/// missing-key type, and the handler does not run.
pub async fn missing_key_when_required(target: &Target) {
    let server = target.start(&["--require-key"]);
    let reply = send(server.address, Call::post("/resources").body(BODY))
        .await
        .unwrap();
    assert_eq!(reply.status, 400);
    assert_eq!(reply.problem_type(), "urn:idemkit:missing-key");
    assert_eq!(server.handler_calls().await, 0);
}

/// response-headers-preserved: a replay keeps `Location` and `ETag`, drops `Set-Cookie`
/// and `Authorization`, and is marked.
pub async fn response_headers_preserved(target: &Target) {
    let server = target.start(&[]);
    let first = send(
        server.address,
        resources("K10")
            .header("X-Test-Response-Header", "Location: /resources/abc123")
            .header("X-Test-Response-Header", "ETag: \"v1\"")
            .header("X-Test-Response-Header", "Set-Cookie: session=secret-value")
            .header("X-Test-Response-Header", "Authorization: Bearer secret"),
    )
    .await
    .unwrap();
    assert_eq!(first.status, 201);
    // The first client gets every header its handler set.
    assert_eq!(first.header("set-cookie"), Some("session=secret-value"));
    let replay = send(server.address, resources("K10")).await.unwrap();
    assert_eq!(
        server.handler_calls().await,
        1,
        "the handler did not run again"
    );
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("location"), Some("/resources/abc123"));
    assert_eq!(replay.header("etag"), Some("\"v1\""));
    assert!(replayed(&replay));
    assert!(replay.header("set-cookie").is_none());
    assert!(replay.header("authorization").is_none());
}

/// corrupt-record-treated-as-absent: bytes that do not decode at the request's storage
/// key are treated as no record: the handler runs, and the server reports the corrupt
/// record. Only for targets that can hold such bytes.
pub async fn corrupt_record_treated_as_absent(target: &Target) {
    let corrupt = target
        .corrupt
        .as_ref()
        .expect("this target can hold a corrupt record");
    let server = target.start(&[]);
    let storage_key = send(
        server.address,
        Call::get("/_storage_key?method=POST&path=%2Fresources").key("K11"),
    )
    .await
    .unwrap();
    assert_eq!(storage_key.status, StatusCode::OK);
    corrupt(String::from_utf8(storage_key.body.to_vec()).unwrap().trim());

    let reply = send(server.address, resources("K11")).await.unwrap();
    assert_eq!(reply.status, 201);
    assert!(!replayed(&reply));
    assert_eq!(server.handler_calls().await, 1, "the handler ran");
    // The report may follow the response by a moment: poll for it (bounded).
    for _ in 0..500 {
        if server
            .events()
            .iter()
            .any(|event| event["corrupt"] == true && event["event"] == "idempotency.corrupt_record")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no corrupt-record event: {:?}", server.events());
}

/// body-size-exceeded-bypass: a response longer than the cache cap, sent in chunks
/// without `Content-Length`, is delivered whole, marked, and not stored.
pub async fn body_size_exceeded_bypass(target: &Target) {
    let server = target.start(&["--max-body-bytes", "1024"]);
    let long = || {
        resources("K12")
            .header("X-Test-Status", "200")
            .header("X-Test-Body-Bytes", "2048")
    };
    let first = send(server.address, long()).await.unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(
        first.header("idempotency-replay-unavailable"),
        Some("size-exceeded")
    );
    assert_eq!(first.body.len(), 2048, "delivered whole");
    assert_eq!(server.handler_calls().await, 1);
    let second = send(server.address, resources("K12")).await.unwrap();
    assert_eq!(
        server.handler_calls().await,
        2,
        "not replayed: it was not stored"
    );
    assert!(!replayed(&second));
}

/// Beyond the suite: a client that goes away while its request runs never leaves the
/// key held past the lease. The server drops the abandoned run (releasing the claim at
/// once where the store can, or letting its 1 s lease lapse, its heartbeat gone with
/// it), so a retry waits at most that long, then runs.
pub async fn abandoned_request_frees_its_key(target: &Target) {
    let server = target.start(&["--lease-ttl-ms", "1000"]);
    let address = server.address;
    send_then_abandon(
        address,
        resources("K-gone").header("X-Test-Delay-Ms", "60000"),
        || async { server.handler_calls().await >= 1 },
    )
    .await;
    let retry = send(server.address, resources("K-gone")).await.unwrap();
    assert_eq!(retry.status, 201, "{retry:?}");
    assert!(!replayed(&retry));
    assert_eq!(server.handler_calls().await, 2, "the retry ran the handler");
}
