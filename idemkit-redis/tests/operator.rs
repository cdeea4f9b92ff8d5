//! The operator side of the Redis backend: counts by state over its namespace, by the
//! server's clock, and a purge that deletes only records that are gone but whose keys
//! are still there (Redis expires the others by itself).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Backend, Claim, Operator, Response};
use redis::Commands;
use redis_harness::RedisServer;
use support::{LEASE, builder};

fn connection(server: &RedisServer) -> redis::Connection {
    redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap()
}

/// The server's clock in microseconds.
fn server_micros(connection: &mut redis::Connection) -> u64 {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(connection).unwrap();
    seconds * 1_000_000 + micros
}

/// Writes, by hand, a completed record of this format that is gone (its `ga` passed an
/// hour ago) and whose key has no TTL: what a `PERSIST` by hand leaves behind.
fn write_gone_record(connection: &mut redis::Connection, storage_key: &str) {
    let now = server_micros(connection);
    let hour = 3_600_000_000u64;
    let ago = |micros: u64| (now - micros).to_string();
    let () = connection
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

/// The same in layout 2, the one string this version writes (see the crate's
/// `scripts/library.lua`), its TTL removed.
fn write_gone_record_layout_2(connection: &mut redis::Connection, storage_key: &str) {
    let now = server_micros(connection);
    let hour = 3_600_000_000u64;
    // Claimed two hours ago for an hour, completed then for an hour.
    let value = format!(
        "ik2d0123456789abcdef0123456789abcdef{:016}{hour:016}{:016}{:016}{hour:016}200{:010}{:010}{:010}fpold",
        now - 2 * hour,
        0,
        now - 2 * hour,
        1,
        2,
        0
    );
    let () = connection.set(storage_key, value).unwrap();
}

fn claimed(claim: Claim) -> idemkit_core::ClaimToken {
    match claim {
        Claim::New(token) | Claim::Reclaimed(token) => token,
        other => panic!("expected a new claim, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_each_state_of_the_namespace_only() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let backend = builder(&server.url(), "stats").build().await.unwrap();
    let neighbour = builder(&server.url(), "stats-neighbour")
        .build()
        .await
        .unwrap();
    let mut raw = connection(server);

    let empty = backend.stats().await.unwrap();
    assert_eq!(
        (
            empty.in_flight,
            empty.lapsed,
            empty.completed,
            empty.purgeable
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(empty.oldest_claim, None);
    assert_eq!(empty.nearest_expiry, None);

    let started = Instant::now();
    claimed(backend.claim("running", "fp", 1, LEASE).await.unwrap());
    claimed(
        backend
            .claim("lapsing", "fp", 1, Duration::from_millis(50))
            .await
            .unwrap(),
    );
    let done = claimed(backend.claim("done", "fp", 1, LEASE).await.unwrap());
    let ttl = Duration::from_secs(3600);
    assert!(
        backend
            .complete("done", &done, Arc::new(Response::new(201, "made")), ttl)
            .await
            .unwrap()
    );
    write_gone_record(&mut raw, &backend.storage_key("stale"));
    write_gone_record_layout_2(&mut raw, &backend.storage_key("stale-2"));
    // Not records: another namespace's claim, and a string at a record's key.
    claimed(neighbour.claim("running", "fp", 1, LEASE).await.unwrap());
    let () = raw.set(backend.storage_key("garbage"), "text").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The claims are the client's own (layout 3): their time is their key's expiry less
    // their time to live.
    let running: Vec<u8> = raw.get(backend.storage_key("running")).unwrap();
    assert_eq!(&running[..4], b"ik3c");

    let stats = backend.stats().await.unwrap();
    assert_eq!(stats.in_flight, 1, "{stats:?}");
    assert_eq!(stats.lapsed, 1, "{stats:?}");
    assert_eq!(stats.completed, 1, "{stats:?}");
    assert_eq!(stats.purgeable, 2, "one of each layout: {stats:?}");
    let oldest = stats.oldest_claim.expect("a claim in flight has an age");
    assert!(
        oldest >= Duration::from_millis(250)
            && oldest <= started.elapsed() + Duration::from_secs(1),
        "{oldest:?}"
    );
    let nearest = stats.nearest_expiry.expect("a completed record expires");
    assert!(
        nearest <= ttl && nearest >= ttl - Duration::from_secs(60),
        "{nearest:?}"
    );
    assert!(stats.size_bytes.is_some_and(|bytes| bytes > 0), "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_deletes_gone_records_in_batches_and_nothing_else() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let backend = builder(&server.url(), "purge").build().await.unwrap();
    let mut raw = connection(server);
    for index in 0..5 {
        let storage_key = backend.storage_key(&format!("stale-{index}"));
        if index % 2 == 0 {
            write_gone_record(&mut raw, &storage_key);
        } else {
            write_gone_record_layout_2(&mut raw, &storage_key);
        }
    }
    claimed(backend.claim("running", "fp", 1, LEASE).await.unwrap());
    // A client's claim (layout 3) whose key lost its expiry: its time cannot be told, so
    // it is gone.
    claimed(backend.claim("persisted", "fp", 1, LEASE).await.unwrap());
    let _: bool = raw.persist(backend.storage_key("persisted")).unwrap();
    let () = raw.set(backend.storage_key("garbage"), "text").unwrap();
    assert_eq!(backend.stats().await.unwrap().purgeable, 6);

    assert_eq!(backend.purge_batch(0).await.unwrap(), 0);
    assert_eq!(backend.purge_batch(2).await.unwrap(), 2, "a full batch");
    assert_eq!(backend.stats().await.unwrap().purgeable, 4);
    assert_eq!(
        backend.purge_batch(10).await.unwrap(),
        4,
        "fewer than the limit: none left"
    );
    assert_eq!(backend.purge_batch(10).await.unwrap(), 0);

    let stats = backend.stats().await.unwrap();
    assert_eq!((stats.purgeable, stats.in_flight), (0, 1));
    assert!(backend.get("running").await.unwrap().is_some());
    let garbage: String = raw.get(backend.storage_key("garbage")).unwrap();
    assert_eq!(
        garbage, "text",
        "a value that is not a record is never touched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_forgot_the_library_is_sent_it_again() {
    let Some(_) = redis_harness::shared() else {
        return;
    };
    // A server of its own: flushing the shared one's functions would disturb other tests.
    let server = RedisServer::start().unwrap();
    let backend = builder(&server.url(), "forgot").build().await.unwrap();
    let mut raw = connection(&server);
    claimed(backend.claim("running", "fp", 1, LEASE).await.unwrap());
    write_gone_record_layout_2(&mut raw, &backend.storage_key("stale"));

    // Each walk's first read finds no library, loads it and reads again.
    let () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut raw).unwrap();
    assert_eq!(backend.purge_batch(10).await.unwrap(), 1);
    let stale: bool = raw.exists(backend.storage_key("stale")).unwrap();
    assert!(!stale);
    let () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut raw).unwrap();
    let stats = backend.stats().await.unwrap();
    assert_eq!((stats.in_flight, stats.purgeable), (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_is_a_storage_error_not_a_hang() {
    let Some(_) = redis_harness::shared() else {
        return;
    };
    let server = RedisServer::start().unwrap();
    let backend = builder(&server.url(), "down").build().await.unwrap();
    server.kill();
    let started = Instant::now();
    assert!(matches!(
        backend.stats().await,
        Err(idemkit_core::Error::Storage(_))
    ));
    assert!(matches!(
        backend.purge_batch(10).await,
        Err(idemkit_core::Error::Storage(_))
    ));
    assert!(started.elapsed() < support::HANG_GUARD);
}
