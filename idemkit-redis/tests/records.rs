//! What the backend leaves in Redis and what it makes of what it finds there: corrupt
//! values are claimed as new and reported, never replayed; every key it writes expires;
//! records sit at `storage_key`, namespaces keep services apart; headers survive with
//! repeated names. Plus the configuration checks made at connect: the eviction policy,
//! `WAIT`, bad settings.

mod support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemkit_core::{
    AsyncIdempotency, Backend, Claim, ClaimToken, Decision, Fingerprint, Key, Policy, Response,
    RunError,
};
use idemkit_redis::{BuildError, CorruptRecord, EvictionCheck, RedisBackend, RedisError};
use redis::Commands;
use redis_harness::RedisServer;
use support::{LEASE, builder};

fn connection(server: &RedisServer) -> redis::Connection {
    redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap()
}

/// The value of a record of layout 2 (see the crate's `scripts/library.lua`): its fixed
/// header, then the fingerprint, the headers and the body.
const HEADER: usize = 149;

/// Rewrites the stored headers of the completed record at `storage_key` (layout 2) to
/// `headers`, keeping its TTL.
fn rewrite_headers(raw: &mut redis::Connection, storage_key: &str, headers: &[u8]) {
    let value: Vec<u8> = raw.get(storage_key).unwrap();
    let length = |at: usize| -> usize {
        std::str::from_utf8(&value[at..at + 10])
            .unwrap()
            .parse()
            .unwrap()
    };
    let (fingerprint, old_headers) = (length(129), length(139));
    let mut new = value[..139].to_vec();
    new.extend_from_slice(format!("{:010}", headers.len()).as_bytes());
    new.extend_from_slice(&value[HEADER..HEADER + fingerprint]);
    new.extend_from_slice(headers);
    new.extend_from_slice(&value[HEADER + fingerprint + old_headers..]);
    let () = redis::cmd("SET")
        .arg(storage_key)
        .arg(new)
        .arg("KEEPTTL")
        .query(raw)
        .unwrap();
}

/// Writes a record of layout 1 (a hash, as the previous versions' scripts wrote it) at
/// `storage_key`: claimed by `token` for the next 60 s, or completed with `result`
/// (status, headers encoded as the crate encodes them, body), live for an hour.
fn plant_layout_1(
    raw: &mut redis::Connection,
    storage_key: &str,
    token: &str,
    result: Option<(&str, &[u8], &str)>,
) {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(raw).unwrap();
    let now = seconds * 1_000_000 + micros;
    let mut hset = redis::cmd("HSET");
    hset.arg(storage_key)
        .arg(&["v", "1", "t", token, "f", "fp", "fv", "1"])
        .arg("ca")
        .arg(now)
        .arg("lu")
        .arg(now + 60_000_000)
        .arg("ga")
        .arg(now + 3_600_000_000u64);
    match result {
        None => hset.arg(&["s", "claimed"]),
        Some((status, headers, body)) => hset
            .arg(&["s", "completed", "st", status, "b", body])
            .arg("cd")
            .arg(now)
            .arg("h")
            .arg(headers),
    };
    let _: i64 = hset.query(raw).unwrap();
    let _: bool = raw.pexpire(storage_key, 3_600_000).unwrap();
}

/// A backend whose corrupt-record reports are collected.
async fn reporting(
    server: &RedisServer,
    tag: &str,
) -> (RedisBackend, Arc<Mutex<Vec<CorruptRecord>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let backend = builder(&server.url(), tag)
        .on_corrupt_record(move |record| sink.lock().unwrap().push(record.clone()))
        .build()
        .await
        .unwrap();
    (backend, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_at_a_key_is_claimed_as_new_and_reported() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let (backend, seen) = reporting(server, "garbage").await;
    let key = Key::new(["garbage"]);
    let storage_key = backend.storage_key(key.as_str());
    let () = connection(server)
        .set(&storage_key, "\u{0}not a record at all")
        .unwrap();

    assert!(
        Backend::get(&backend, key.as_str())
            .await
            .unwrap()
            .is_none(),
        "absent to a read"
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].storage_key, storage_key);
        assert_eq!(seen[0].key, key.as_str());
        assert!(!seen[0].overwritten);
        assert!(seen[0].reason.contains("string"), "{}", seen[0].reason);
    }

    let idempotency = AsyncIdempotency::new(backend.clone());
    let fingerprint = Fingerprint::new(["request"]);
    let first = idempotency
        .run(&key, &fingerprint, || async {
            Ok::<_, Infallible>(Response::new(201, "ran"))
        })
        .await
        .unwrap();
    assert_eq!(
        first.decision,
        Decision::New,
        "claimed as new, not an error"
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert!(seen[1].overwritten, "the claim overwrote it");
    }
    let replay = idempotency
        .run(&key, &fingerprint, || async {
            Ok::<_, Infallible>(Response::new(500, "again"))
        })
        .await
        .unwrap();
    assert_eq!(replay.decision, Decision::Replayed);
    assert_eq!(
        replay.response.body, "ran",
        "the stored result, never the garbage"
    );
    assert_eq!(seen.lock().unwrap().len(), 2, "nothing corrupt any more");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_whose_headers_do_not_decode_is_run_again_not_replayed() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let (backend, seen) = reporting(server, "bad-headers").await;
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() else {
        panic!("not new");
    };
    let stored = Arc::new(Response::new(200, "body").with_header("a", "b"));
    assert!(
        Backend::complete(&backend, "k", &token, stored, LEASE)
            .await
            .unwrap()
    );
    rewrite_headers(
        &mut connection(server),
        &backend.storage_key("k"),
        b"\0\0\0\x09truncated",
    );

    assert!(Backend::get(&backend, "k").await.unwrap().is_none());
    match Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() {
        Claim::New(_) => {}
        other => panic!("replayed a record that does not decode: {other:?}"),
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|record| record.reason.contains("headers")));
    assert!(!seen[0].overwritten && seen[1].overwritten);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_whose_status_is_out_of_range_is_corrupt_like_one_whose_headers_are() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    // Layout 1 stores the status as a field of its own, layout 2 in three digits.
    let layout_1 = ["1000", "99", "0", "65535", "70000", "-1", "2x0"];
    let layout_2 = ["099", "000", "-01", "2x0", " 20"];
    for (round, (layout, status)) in layout_1
        .into_iter()
        .map(|status| (1, status))
        .chain(layout_2.into_iter().map(|status| (2, status)))
        .enumerate()
    {
        let (backend, seen) = reporting(server, "bad-status").await;
        let key = Key::new(["bad-status", status]);
        let fingerprint = Fingerprint::new(["request"]);
        let idempotency = AsyncIdempotency::new(backend.clone());
        let ran = idempotency
            .run(&key, &fingerprint, || async {
                Ok::<_, Infallible>(Response::new(201, "first"))
            })
            .await
            .unwrap();
        assert_eq!(ran.decision, Decision::New);
        let storage_key = backend.storage_key(key.as_str());
        let mut raw = connection(server);
        if layout == 1 {
            let token = "0123456789abcdef0123456789abcdef";
            let () = raw.del(&storage_key).unwrap();
            plant_layout_1(&mut raw, &storage_key, token, Some((status, b"", "first")));
        } else {
            let _: i64 = raw.setrange(&storage_key, 116, status).unwrap();
        }

        assert!(
            Backend::get(&backend, key.as_str())
                .await
                .unwrap()
                .is_none(),
            "status {status}: absent to a read, not an error"
        );
        let again = idempotency
            .run(&key, &fingerprint, || async {
                Ok::<_, Infallible>(Response::new(201, "second"))
            })
            .await
            .unwrap_or_else(|error| panic!("status {status}: an error, not a new run: {error}"));
        assert_eq!(
            again.decision,
            Decision::New,
            "status {status}, round {round}"
        );
        assert_eq!(again.response.body, "second");
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.len(),
            2,
            "status {status}: read and claim report it: {seen:?}"
        );
        assert!(
            seen.iter().all(|record| record.reason.contains("status")),
            "{seen:?}"
        );
        assert!(!seen[0].overwritten && seen[1].overwritten);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_that_is_not_http_is_refused_when_stored_and_the_key_given_back() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let backend = builder(&server.url(), "unstorable").build().await.unwrap();
    for status in [0, 42, 99, 1000, u16::MAX] {
        let key = format!("unstorable-{status}");
        let Claim::New(token) = Backend::claim(&backend, &key, "fp", 1, LEASE)
            .await
            .unwrap()
        else {
            panic!("not new");
        };
        let error = Backend::complete(
            &backend,
            &key,
            &token,
            Arc::new(Response::new(status, "x")),
            LEASE,
        )
        .await
        .expect_err("stored a status that every read would call corrupt");
        assert!(error.to_string().contains("HTTP status"), "{error}");
        // The claim is given back, so a retry runs instead of waiting out the lease.
        match Backend::claim(&backend, &key, "fp", 1, LEASE)
            .await
            .unwrap()
        {
            Claim::New(_) => {}
            other => panic!("status {status}: the key is still held: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_live_at_their_storage_key_and_namespaces_are_apart() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let one = builder(&server.url(), "one").build().await.unwrap();
    let other = builder(&server.url(), "other").build().await.unwrap();
    assert_eq!(
        one.storage_key("abc"),
        format!("{}:{{abc}}", one.namespace())
    );
    let Claim::New(_) = Backend::claim(&one, "abc", "fp", 1, LEASE).await.unwrap() else {
        panic!("not new");
    };
    let exists: bool = connection(server).exists(one.storage_key("abc")).unwrap();
    assert!(exists);
    assert!(
        matches!(
            Backend::claim(&other, "abc", "fp", 1, LEASE).await.unwrap(),
            Claim::New(_)
        ),
        "another namespace has its own records"
    );
    assert!(matches!(
        Backend::claim(&one, "abc", "fp", 1, LEASE).await.unwrap(),
        Claim::InFlight(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_survive_with_repeated_headers_and_raw_bytes() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let backend = builder(&server.url(), "headers").build().await.unwrap();
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() else {
        panic!("not new");
    };
    let response = Arc::new(
        Response::new(299, vec![0u8, 255, 13, 10, 0])
            .with_header("set-cookie", "a=1")
            .with_header("Set-Cookie", "b=2")
            .with_header("set-cookie", "a=1")
            .with_header("x-raw", vec![0u8, 200, 10]),
    );
    assert!(
        Backend::complete(&backend, "k", &token, response.clone(), LEASE)
            .await
            .unwrap()
    );
    let record = Backend::get(&backend, "k").await.unwrap().unwrap();
    assert_eq!(record.response(), Some(&*response));
    let Claim::Completed(replay) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap()
    else {
        panic!("no replay");
    };
    assert_eq!(replay.response(), &*response);
    assert_eq!(replay.claim_token(), &token);
    assert!(replay.completed_at() <= replay.expires_at());
    let lives = replay.expires_at() - replay.completed_at();
    assert_eq!(lives, LEASE, "the TTL counts from completion");
}

/// A mix of everything the executor does, then a look at every key in the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_the_backend_writes_expires() {
    if !redis_harness::available() {
        return;
    }
    let server = RedisServer::start().unwrap();
    let backend = builder(&server.url(), "ttl")
        .reclaim_grace(Duration::from_secs(5))
        .build()
        .await
        .unwrap();
    let policy = Policy::builder()
        .lease_ttl(Duration::from_millis(600))
        .wait_timeout(Duration::from_secs(5))
        .build()
        .expect("a valid policy");
    let idempotency = Arc::new(AsyncIdempotency::with_policy(backend.clone(), policy));
    let fingerprint = Fingerprint::new(["request"]);
    for i in 0..20 {
        let key = Key::new(["ttl", &i.to_string()]);
        let status = if i % 4 == 0 { 503 } else { 200 };
        // Long enough for the heartbeat to renew the lease.
        let slow = i % 5 == 0;
        let run = |idempotency: Arc<AsyncIdempotency<RedisBackend>>, key: Key| {
            let fingerprint = fingerprint.clone();
            async move {
                idempotency
                    .run(&key, &fingerprint, || async move {
                        if slow {
                            tokio::time::sleep(Duration::from_millis(900)).await;
                        }
                        Ok::<_, Infallible>(Response::new(status, "x"))
                    })
                    .await
            }
        };
        let (a, b) = tokio::join!(
            run(idempotency.clone(), key.clone()),
            run(idempotency.clone(), key.clone())
        );
        for outcome in [a, b] {
            match outcome {
                Ok(_) | Err(RunError::InProgress { .. }) => {}
                Err(other) => panic!("{other:?}"),
            }
        }
        let _ = idempotency
            .run(&key, &fingerprint, || async { Err::<Response, _>("fails") })
            .await;
    }
    // A claim left to lapse, then reclaimed; and one that is never finished.
    let Claim::New(_) = Backend::claim(&backend, "lapse", "fp", 1, Duration::from_millis(100))
        .await
        .unwrap()
    else {
        panic!()
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(matches!(
        Backend::claim(&backend, "lapse", "fp", 1, LEASE)
            .await
            .unwrap(),
        Claim::Reclaimed(_)
    ));
    let Claim::New(token) = Backend::claim(&backend, "renewed", "fp", 1, LEASE)
        .await
        .unwrap()
    else {
        panic!()
    };
    assert!(
        Backend::renew(&backend, "renewed", &token, Duration::MAX)
            .await
            .unwrap()
    );
    let Claim::New(token) = Backend::claim(&backend, "forever", "fp", 1, Duration::MAX)
        .await
        .unwrap()
    else {
        panic!()
    };
    assert!(
        Backend::complete(
            &backend,
            "forever",
            &token,
            Arc::new(Response::new(200, "x")),
            Duration::MAX
        )
        .await
        .unwrap()
    );
    // Garbage overwritten by a claim.
    let mut con = connection(&server);
    let () = con.set(backend.storage_key("garbage"), "x").unwrap();
    let _ = Backend::claim(&backend, "garbage", "fp", 1, LEASE)
        .await
        .unwrap();

    let keys: Vec<String> = con.keys("*").unwrap();
    assert!(keys.len() > 10, "the mix wrote keys: {keys:?}");
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut con).unwrap();
        assert!(ttl > 0 || ttl == -2, "{key} has no TTL ({ttl})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicting_policy_is_warned_about_or_refused() {
    if !redis_harness::available() {
        return;
    }
    let evicting = RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"], false).unwrap();
    let refused = builder(&evicting.url(), "evict")
        .eviction_check(EvictionCheck::Refuse)
        .build()
        .await;
    match refused {
        Err(BuildError::EvictingPolicy { policy }) => assert_eq!(policy, "allkeys-lru"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    builder(&evicting.url(), "evict")
        .build()
        .await
        .expect("the default only warns");
    builder(&evicting.url(), "evict")
        .eviction_check(EvictionCheck::Skip)
        .build()
        .await
        .unwrap();
    let Some(server) = redis_harness::shared() else {
        return;
    };
    builder(&server.url(), "noeviction")
        .eviction_check(EvictionCheck::Refuse)
        .build()
        .await
        .expect("noeviction passes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_and_unreachable_servers_are_build_errors() {
    let config = |result: Result<RedisBackend, BuildError>| match result {
        Err(BuildError::Config(why)) => why,
        other => panic!("expected a configuration error, got {other:?}"),
    };
    config(RedisBackend::builder().build().await);
    config(RedisBackend::builder().url("not a url").build().await);
    config(
        RedisBackend::builder()
            .cluster(Vec::<String>::new())
            .build()
            .await,
    );
    for namespace in ["", "a{b", "c}"] {
        config(
            RedisBackend::builder()
                .url("redis://127.0.0.1:1/")
                .namespace(namespace)
                .build()
                .await,
        );
    }
    config(
        RedisBackend::builder()
            .url("redis://127.0.0.1:1/")
            .command_timeout(Duration::ZERO)
            .build()
            .await,
    );
    if !redis_harness::available() {
        return;
    }
    // A port where nothing listens (a server started and stopped).
    let gone = RedisServer::start().unwrap();
    let url = gone.url();
    drop(gone);
    match builder(&url, "unreachable").build().await {
        Err(BuildError::Connect(error)) => assert_eq!(error.operation(), "connect"),
        other => panic!("expected a connect error, got {other:?}"),
    }
}

/// A refused connection and a refused password are reported at once and in their own
/// words, not as "no reply" once the connect timeout has run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_errors_say_why_at_once() {
    if !redis_harness::available() {
        return;
    }
    let connect_timeout = Duration::from_secs(20);
    let failing = |url: String| async move {
        let started = std::time::Instant::now();
        let built = RedisBackend::builder()
            .url(&url)
            .connect_timeout(connect_timeout)
            .build()
            .await;
        let elapsed = started.elapsed();
        match built {
            Err(BuildError::Connect(error)) => (error, elapsed),
            other => panic!("{url}: expected a connect error, got {other:?}"),
        }
    };

    let gone = RedisServer::start().unwrap();
    let refused_url = gone.url();
    drop(gone);
    let (refused, elapsed) = failing(refused_url).await;
    assert!(!refused.is_out_of_memory());
    let refused = refused.to_string();
    assert!(refused.contains("connection refused"), "{refused}");
    assert!(elapsed < connect_timeout / 2, "took {elapsed:?}: {refused}");

    let guarded = RedisServer::start().unwrap();
    guarded
        .cli(&["CONFIG", "SET", "requirepass", "right"])
        .unwrap();
    let wrong = format!("redis://:wrong@127.0.0.1:{}/", guarded.port());
    let (wrong_password, elapsed) = failing(wrong).await;
    let wrong_password = wrong_password.to_string();
    // The server's own words, not the client library's.
    assert!(
        wrong_password.contains("WRONGPASS invalid username-password pair"),
        "{wrong_password}"
    );
    assert!(
        elapsed < connect_timeout / 2,
        "took {elapsed:?}: {wrong_password}"
    );
    let right = format!("redis://:right@127.0.0.1:{}/", guarded.port());
    RedisBackend::builder()
        .url(&right)
        .build()
        .await
        .expect("the right password connects");

    // A server at its memory limit answers, but refuses the library's load: a write.
    let full = RedisServer::start().unwrap();
    full.cli(&["CONFIG", "SET", "maxmemory", "1"]).unwrap();
    let (out_of_memory, elapsed) = failing(full.url()).await;
    assert!(out_of_memory.is_out_of_memory(), "{out_of_memory}");
    assert!(out_of_memory.to_string().contains("OOM"), "{out_of_memory}");
    assert!(
        elapsed < connect_timeout / 2,
        "took {elapsed:?}: {out_of_memory}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_can_wait_for_replicas() {
    if !redis_harness::available() {
        return;
    }
    let primary = RedisServer::start().unwrap();
    let under = builder(&primary.url(), "wait-none")
        .wait_for_replicas(1, Duration::from_millis(200))
        .build()
        .await
        .unwrap();
    // No replica: the claim is applied, but reported as an under-replicated failure.
    let error = Backend::claim(&under, "k", "fp", 1, LEASE)
        .await
        .unwrap_err();
    let idemkit_core::Error::Storage(source) = &error else {
        panic!("{error}")
    };
    assert!(
        source
            .downcast_ref::<RedisError>()
            .unwrap()
            .is_under_replicated(),
        "{error}"
    );
    // It was applied all the same, under a token the caller never learned: the backend
    // gives that claim back instead of leaving the key in flight for a whole lease.
    let give_back = std::time::Instant::now() + support::HANG_GUARD;
    while Backend::get(&under, "k").await.unwrap().is_some() {
        assert!(
            std::time::Instant::now() < give_back,
            "the unreported claim still holds the key"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let port = primary.port().to_string();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port], false).unwrap();
    let give_up = std::time::Instant::now() + support::HANG_GUARD;
    while !replica
        .cli(&["INFO", "replication"])
        .unwrap()
        .contains("master_link_status:up")
    {
        assert!(
            std::time::Instant::now() < give_up,
            "the replica never synced"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let replicated = builder(&primary.url(), "wait-one")
        .wait_for_replicas(1, Duration::from_secs(5))
        .build()
        .await
        .unwrap();
    let Claim::New(token) = Backend::claim(&replicated, "k", "fp", 1, LEASE)
        .await
        .unwrap()
    else {
        panic!("not new");
    };
    let response = Arc::new(Response::new(200, "replicated"));
    assert!(
        Backend::complete(&replicated, "k", &token, response, LEASE)
            .await
            .unwrap()
    );
    let copy: Vec<u8> = connection(&replica)
        .get(replicated.storage_key("k"))
        .unwrap();
    assert!(
        copy.ends_with(b"replicated"),
        "the replica has the result once complete returns"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_of_the_previous_layout_are_read_completed_and_replayed() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let (backend, seen) = reporting(server, "layout-1").await;
    let mut raw = connection(server);
    let token_text = "0123456789abcdef0123456789abcdef";
    let token: idemkit_core::ClaimToken = token_text.parse().unwrap();

    // A claim in flight that a process of the previous version made: seen as in flight,
    // and its owner (that token) completes it.
    plant_layout_1(&mut raw, &backend.storage_key("claimed"), token_text, None);
    let Some(record) = Backend::get(&backend, "claimed").await.unwrap() else {
        panic!("a layout 1 claim was not read");
    };
    assert_eq!(record.claim_token(), &token);
    assert_eq!(
        (record.fingerprint(), record.fingerprint_version()),
        ("fp", 1)
    );
    assert!(matches!(
        Backend::claim(&backend, "claimed", "fp", 1, LEASE)
            .await
            .unwrap(),
        Claim::InFlight(_)
    ));
    let response = Arc::new(Response::new(201, "done").with_header("x-a", "1"));
    assert!(
        Backend::complete(&backend, "claimed", &token, response, LEASE)
            .await
            .unwrap()
    );
    let Claim::Completed(record) = Backend::claim(&backend, "claimed", "fp", 1, LEASE)
        .await
        .unwrap()
    else {
        panic!("not replayed");
    };
    let response = record.response();
    assert_eq!(
        (response.status, response.body.as_ref()),
        (201, &b"done"[..])
    );

    // A completed record of the previous version is replayed as it was stored.
    let headers = b"\0\0\0\x05x-old\0\0\0\x01v";
    plant_layout_1(
        &mut raw,
        &backend.storage_key("completed"),
        token_text,
        Some(("202", headers, "old body")),
    );
    let Claim::Completed(record) = Backend::claim(&backend, "completed", "fp", 1, LEASE)
        .await
        .unwrap()
    else {
        panic!("a layout 1 result was not replayed");
    };
    let response = record.response();
    assert_eq!(response.status, 202);
    assert_eq!(response.body.as_ref(), b"old body");
    assert_eq!(response.headers.len(), 1);
    assert_eq!(response.headers[0].0.as_str(), "x-old");
    assert_eq!(response.headers[0].1.as_ref(), b"v");
    assert!(Backend::get(&backend, "completed").await.unwrap().is_some());
    assert!(seen.lock().unwrap().is_empty(), "nothing was corrupt");
}

/// Fields the server leaves to the client (it trusts the layout and checks only what it
/// decides on): a record whose token, numbers or fingerprint do not decode is absent to a
/// read and replaced by the next claim, reported both times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_only_the_client_finds_corrupt_are_absent_and_replaced() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    for (what, at, with) in [
        ("a token that is not hex", 4, &b"XYZ"[..]),
        ("a fingerprint version that is not digits", 120, &b"x"[..]),
        ("a fingerprint that is not UTF-8", HEADER, &b"\xff"[..]),
    ] {
        let (backend, seen) = reporting(server, "client-corrupt").await;
        let Claim::New(_) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() else {
            panic!("{what}: not new");
        };
        let _: i64 = connection(server)
            .setrange(backend.storage_key("k"), at as isize, with)
            .unwrap();
        assert!(
            Backend::get(&backend, "k").await.unwrap().is_none(),
            "{what}: absent to a read"
        );
        let Claim::New(_) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() else {
            panic!("{what}: the claim did not replace it");
        };
        assert!(
            Backend::get(&backend, "k").await.unwrap().is_some(),
            "{what}"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "{what}: {seen:?}");
        assert!(!seen[0].overwritten && seen[1].overwritten, "{what}");
        assert_eq!(seen[0].reason, seen[1].reason, "{what}");
    }
}

/// Zeroes the server's counts of calls per command (`CONFIG RESETSTAT`).
fn reset_command_stats(raw: &mut redis::Connection) {
    let () = redis::cmd("CONFIG").arg("RESETSTAT").query(raw).unwrap();
}

/// The calls the server counted per command since the last `CONFIG RESETSTAT`
/// (`INFO commandstats`), e.g. `("set", 1)`.
fn command_calls(raw: &mut redis::Connection) -> Vec<(String, u64)> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(raw).unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

/// A free key is claimed by one plain `SET ... NX PX ... GET`, no function, and the
/// claim it writes (layout 3, its time the key's expiry less its time to live) is then
/// judged by the functions like any other: in flight for another claim, completed by its
/// token, replayed by a plain `SET` too. Only a claim that finds another claim asks a
/// function.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_free_key_and_a_replay_take_one_plain_set_and_no_function() {
    if !redis_harness::available() {
        return;
    }
    let server = RedisServer::start().unwrap();
    let backend = builder(&server.url(), "plain-set").build().await.unwrap();
    let mut raw = connection(&server);
    let storage_key = backend.storage_key("k");
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(&mut raw).unwrap();
    let before = seconds * 1_000_000 + micros;

    reset_command_stats(&mut raw);
    let token = support::claim_new(&backend, "k").await;
    let calls = command_calls(&mut raw);
    assert!(calls.contains(&("set".to_owned(), 1)), "{calls:?}");
    assert!(!calls.iter().any(|(name, _)| name == "fcall"), "{calls:?}");
    let stored: Vec<u8> = raw.get(&storage_key).unwrap();
    assert_eq!(&stored[..4], b"ik3c", "the client's own claim");
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&storage_key)
        .query(&mut raw)
        .unwrap();
    let lease_and_grace = (LEASE + backend.reclaim_grace()).as_millis() as i64;
    assert!(
        ttl > lease_and_grace - 10_000 && ttl <= lease_and_grace + 1,
        "{ttl}"
    );

    // The functions read its time from the key's expiry: claimed in the millisecond the
    // `SET` ran, its lease from then.
    let Some(record) = Backend::get(&backend, "k").await.unwrap() else {
        panic!("the client's claim was not read");
    };
    assert_eq!(record.claim_token(), &token);
    assert!(matches!(
        Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap(),
        Claim::InFlight(_)
    ));
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(&mut raw).unwrap();
    let after = seconds * 1_000_000 + micros;
    let mut read = redis::cmd("FCALL");
    read.arg("idemkit_read").arg(1).arg(&storage_key);
    let redis::Value::Array(reply) = read.query::<redis::Value>(&mut raw).unwrap() else {
        panic!("not an array");
    };
    let redis::Value::BulkString(converted) = &reply[3] else {
        panic!("no record");
    };
    assert_eq!(
        &converted[..4],
        b"ik2c",
        "converted to layout 2 as it is read"
    );
    let claimed_at: u64 = std::str::from_utf8(&converted[36..52])
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        before / 1000 * 1000 <= claimed_at && claimed_at <= after + 1000,
        "{before} <= {claimed_at} <= {after}"
    );
    assert_eq!(
        claimed_at % 1000,
        999,
        "the last microsecond of its millisecond"
    );
    let lease: u64 = std::str::from_utf8(&converted[52..68])
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(lease, LEASE.as_micros() as u64);
    // Its record is kept until its key expires: at least the reclaim grace past its lease.
    let kept: u64 = std::str::from_utf8(&converted[68..84])
        .unwrap()
        .parse()
        .unwrap();
    let expires: u64 = redis::cmd("PEXPIRETIME")
        .arg(&storage_key)
        .query(&mut raw)
        .unwrap();
    assert_eq!(claimed_at + lease + kept, expires * 1000);
    assert!(kept >= backend.reclaim_grace().as_micros() as u64);

    // Completed by its token (another is fenced out), in layout 2.
    let other: idemkit_core::ClaimToken = "0123456789abcdef0123456789abcdef".parse().unwrap();
    let response = Arc::new(Response::new(200, "ok"));
    assert!(
        !Backend::complete(&backend, "k", &other, response.clone(), LEASE)
            .await
            .unwrap()
    );
    assert!(
        Backend::complete(&backend, "k", &token, response, LEASE)
            .await
            .unwrap()
    );
    let stored: Vec<u8> = raw.get(&storage_key).unwrap();
    assert_eq!(&stored[..4], b"ik2d");
    let kept: u64 = std::str::from_utf8(&stored[36..52])
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(kept, claimed_at, "the claim's time is kept");

    // A replay: one plain `SET` again, which writes nothing over the record.
    reset_command_stats(&mut raw);
    let Claim::Completed(replay) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap()
    else {
        panic!("not replayed");
    };
    assert!(replay.same_request());
    assert_eq!(replay.response().body.as_ref(), b"ok");
    assert_eq!(replay.claim_token(), &token);
    let calls = command_calls(&mut raw);
    assert!(calls.contains(&("set".to_owned(), 1)), "{calls:?}");
    assert!(!calls.iter().any(|(name, _)| name == "fcall"), "{calls:?}");
    let Claim::Completed(other_request) = Backend::claim(&backend, "k", "other-fp", 1, LEASE)
        .await
        .unwrap()
    else {
        panic!("not found completed");
    };
    assert!(
        !other_request.same_request(),
        "another request is refused, not replayed"
    );
    let unchanged: Vec<u8> = raw.get(&storage_key).unwrap();
    assert_eq!(unchanged, stored);

    // A result with less than a second left is not replayed on this client's estimate of
    // the server's clock: the claim function judges it by the server's `TIME`.
    let token = support::claim_new(&backend, "short").await;
    let response = Arc::new(Response::new(200, "soon gone"));
    let completed = std::time::Instant::now();
    assert!(
        Backend::complete(&backend, "short", &token, response, Duration::from_secs(1))
            .await
            .unwrap()
    );
    reset_command_stats(&mut raw);
    let claim = Backend::claim(&backend, "short", "fp", 1, LEASE)
        .await
        .unwrap();
    if completed.elapsed() < Duration::from_millis(900) {
        assert!(matches!(claim, Claim::Completed(_)), "{claim:?}");
        let calls = command_calls(&mut raw);
        assert!(calls.contains(&("fcall".to_owned(), 1)), "{calls:?}");
    }
}

/// A client's claim whose key lost its expiry (`PERSIST` by hand) cannot be judged:
/// it is not a record, reported, and the next claim replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_claim_without_expiry_is_corrupt_and_replaced() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let (backend, seen) = reporting(server, "persisted").await;
    let mut raw = connection(server);
    let Claim::New(_) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() else {
        panic!("not new");
    };
    let _: bool = raw.persist(backend.storage_key("k")).unwrap();
    assert!(Backend::get(&backend, "k").await.unwrap().is_none());
    assert!(matches!(
        Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap(),
        Claim::New(_)
    ));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen.iter()
            .all(|record| record.reason.contains("lost its expiry"))
    );
    assert!(seen[1].overwritten);
    let ttl: i64 = redis::cmd("PTTL")
        .arg(backend.storage_key("k"))
        .query(&mut raw)
        .unwrap();
    assert!(ttl > 0, "the new claim expires");
}

/// The completion of a claim no one waits on sends no `PUBLISH`; a waiter's read marks
/// the claim watched, and its completion then wakes the waiter through the channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_publishes_only_for_a_claim_someone_waits_on() {
    if !redis_harness::available() {
        return;
    }
    let server = RedisServer::start().unwrap();
    let backend = builder(&server.url(), "watched").build().await.unwrap();
    let mut raw = connection(&server);
    let response = Arc::new(Response::new(200, "ok"));

    reset_command_stats(&mut raw);
    let token = support::claim_new(&backend, "alone").await;
    assert!(
        Backend::complete(&backend, "alone", &token, response.clone(), LEASE)
            .await
            .unwrap()
    );
    let calls = command_calls(&mut raw);
    assert!(
        !calls.iter().any(|(name, _)| name == "publish"),
        "{calls:?}"
    );

    let token = support::claim_new(&backend, "awaited").await;
    let waiter = support::spawn_waiter(&backend, "awaited", Duration::from_secs(60));
    let storage_key = backend.storage_key("awaited");
    let mut probe = connection(&server);
    let marked = async {
        loop {
            let value: Vec<u8> = probe.get(&storage_key).unwrap();
            if value.starts_with(b"ik3w") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(support::HANG_GUARD, marked)
        .await
        .expect("the waiter marks the claim watched");
    assert!(
        Backend::complete(&backend, "awaited", &token, response, LEASE)
            .await
            .unwrap()
    );
    let record = tokio::time::timeout(support::HANG_GUARD, waiter)
        .await
        .expect("the waiter is woken")
        .unwrap()
        .unwrap()
        .expect("the waiter gets the result");
    assert_eq!(record.response().unwrap().body.as_ref(), b"ok");
    let calls = command_calls(&mut raw);
    assert!(calls.contains(&("publish".to_owned(), 1)), "{calls:?}");
}

/// The functions the server ran, in order, since [`record_calls`]: `FCALL`'s function
/// names, read from `SLOWLOG` (which [`record_calls`] set to log every command).
fn functions_called(raw: &mut redis::Connection) -> Vec<String> {
    let redis::Value::Array(entries) = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query::<redis::Value>(raw)
        .unwrap()
    else {
        panic!("SLOWLOG GET is not an array");
    };
    let mut called: Vec<String> = entries
        .iter()
        .filter_map(|entry| {
            let redis::Value::Array(fields) = entry else {
                return None;
            };
            let redis::Value::Array(args) = fields.get(3)? else {
                return None;
            };
            let text = |value: &redis::Value| match value {
                redis::Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => String::new(),
            };
            (text(args.first()?).eq_ignore_ascii_case("fcall")).then(|| text(&args[1]))
        })
        .collect();
    // Newest first in the log.
    called.reverse();
    called
}

/// Makes `SLOWLOG` record every command from now on, for [`functions_called`].
fn record_calls(raw: &mut redis::Connection) {
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .query(raw)
        .unwrap();
    let () = redis::cmd("SLOWLOG").arg("RESET").query(raw).unwrap();
}

/// Completes `token`'s claim of `key` on `backend` with a 201 `text/plain` response of
/// `body`: whether it took effect.
async fn completes(
    backend: &RedisBackend,
    key: &str,
    token: &ClaimToken,
    body: &'static str,
) -> bool {
    let response = Response::new(201, body).with_header("content-type", "text/plain");
    Backend::complete(backend, key, token, Arc::new(response), LEASE)
        .await
        .unwrap()
}

/// A claim this backend wrote itself is completed by the function handed the parts it
/// wrote (`idemkit_complete_own_claim`), into the record the general completion writes;
/// a claim renewed, released, or written by another process takes the general one, and a
/// claim renewed by another process, which the first declines, is completed by the
/// general one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_this_backend_wrote_is_completed_with_the_parts_it_wrote() {
    if !redis_harness::available() {
        return;
    }
    let server = RedisServer::start().unwrap();
    let backend = builder(&server.url(), "own-claims").build().await.unwrap();
    let elsewhere = RedisBackend::builder()
        .url(&server.url())
        .namespace(backend.namespace())
        .build()
        .await
        .unwrap();
    let mut raw = connection(&server);
    let replayed = |claim: Claim| match claim {
        Claim::Completed(record) => {
            assert!(record.same_request());
            let response = record.response();
            (
                response.status,
                response.body.as_ref().to_vec(),
                response.headers.clone(),
            )
        }
        other => panic!("not replayed: {other:?}"),
    };
    let (own, general) = ("idemkit_complete_own_claim", "idemkit_complete");

    // Its own claim: one function, the parts handed over.
    let token = support::claim_new(&backend, "own").await;
    record_calls(&mut raw);
    assert!(completes(&backend, "own", &token, "own").await);
    assert_eq!(functions_called(&mut raw), [own]);
    let own_record = replayed(
        Backend::claim(&backend, "own", "fp", 1, LEASE)
            .await
            .unwrap(),
    );
    assert_eq!(own_record.0, 201);
    assert_eq!(own_record.1, b"own");

    // A claim another process wrote, completed here by its token: the general function,
    // the same record.
    let token = support::claim_new(&elsewhere, "general").await;
    record_calls(&mut raw);
    assert!(completes(&backend, "general", &token, "own").await);
    assert_eq!(functions_called(&mut raw), [general]);
    let general_record = replayed(
        Backend::claim(&backend, "general", "fp", 1, LEASE)
            .await
            .unwrap(),
    );
    assert_eq!(general_record, own_record);
    let values: Vec<Vec<u8>> = ["own", "general"]
        .iter()
        .map(|key| raw.get(backend.storage_key(key)).unwrap())
        .collect();
    // The same bytes but for the token and the two times.
    let fixed = |value: &[u8]| [&value[..4], &value[52..84], &value[100..]].concat();
    assert_eq!(fixed(&values[0]), fixed(&values[1]));

    // Renewed here: the general function at once (the renewal rewrote it in layout 2).
    let token = support::claim_new(&backend, "renewed").await;
    assert!(
        Backend::renew(&backend, "renewed", &token, LEASE)
            .await
            .unwrap()
    );
    record_calls(&mut raw);
    assert!(completes(&backend, "renewed", &token, "r").await);
    assert_eq!(functions_called(&mut raw), [general]);

    // Renewed by another process holding its token: declined, then completed by the
    // general function.
    let token = support::claim_new(&backend, "renewed-elsewhere").await;
    assert!(
        Backend::renew(&elsewhere, "renewed-elsewhere", &token, LEASE)
            .await
            .unwrap()
    );
    record_calls(&mut raw);
    assert!(completes(&backend, "renewed-elsewhere", &token, "e").await);
    assert_eq!(functions_called(&mut raw), [own, general]);
    let record = replayed(
        Backend::claim(&backend, "renewed-elsewhere", "fp", 1, LEASE)
            .await
            .unwrap(),
    );
    assert_eq!(record.1, b"e");

    // Won through the claim function (its lapsed claim reclaimed): not kept, so its
    // completion takes the general function.
    let lapsed = Duration::from_millis(1);
    assert!(matches!(
        Backend::claim(&backend, "reclaimed", "fp", 1, lapsed)
            .await
            .unwrap(),
        Claim::New(_)
    ));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let Claim::Reclaimed(token) = Backend::claim(&backend, "reclaimed", "fp", 1, LEASE)
        .await
        .unwrap()
    else {
        panic!("the lapsed claim was not reclaimed");
    };
    record_calls(&mut raw);
    assert!(completes(&backend, "reclaimed", &token, "r").await);
    assert_eq!(functions_called(&mut raw), [general]);

    // Released: forgotten, so a late completion is refused by the general function.
    let token = support::claim_new(&backend, "released").await;
    assert!(
        Backend::release(&backend, "released", &token)
            .await
            .unwrap()
    );
    let again = support::claim_new(&backend, "released").await;
    record_calls(&mut raw);
    assert!(!completes(&backend, "released", &token, "late").await);
    assert_eq!(functions_called(&mut raw), [general]);
    // And the new claim's own completion is not disturbed by it.
    assert!(completes(&backend, "released", &again, "new").await);
    assert_eq!(functions_called(&mut raw), [general, own]);
}
