//! The conformance suite against `idemkit_tokio::InMemoryBackend`, on a multi-thread
//! tokio runtime; and tokio's paused time driving it.

use std::time::{Duration, Instant};

use idemkit_tokio::{Claim, InMemoryBackend, Response};

idemkit_conformance::backend_tests!(idemkit_conformance::targets::Tokio);
idemkit_conformance::async_backend_tests!(idemkit_conformance::targets::Tokio);

/// With tokio's clock paused, `tokio::time::advance` lapses a lease and expires a result
/// through the default `TokioClock`, and a 10 s wait times out on the paused timer
/// without 10 s of real time passing.
#[tokio::test(start_paused = true)]
async fn paused_time_drives_leases_ttls_and_wait_timeouts() {
    let real_start = Instant::now();
    let backend = InMemoryBackend::new();
    let lease = Duration::from_secs(30);

    let Claim::New(first) = backend.claim("lease", "fp", 1, lease).await.unwrap() else {
        panic!("a free key claims New");
    };
    tokio::time::advance(lease).await;
    assert!(matches!(
        backend.claim("lease", "fp", 1, lease).await.unwrap(),
        Claim::InFlight(_)
    ));
    tokio::time::advance(Duration::from_millis(1)).await;
    match backend.claim("lease", "fp", 1, lease).await.unwrap() {
        Claim::Reclaimed(next) => assert_ne!(next, first),
        other => panic!("expected Reclaimed after the lease, got {other:?}"),
    }

    let Claim::New(token) = backend.claim("ttl", "fp", 1, lease).await.unwrap() else {
        panic!("a free key claims New");
    };
    let ttl = Duration::from_secs(60);
    assert!(
        backend
            .complete("ttl", &token, Response::new(200, "ok"), ttl)
            .await
    );
    tokio::time::advance(ttl).await;
    assert!(
        backend.get("ttl").is_some(),
        "a result lives through its TTL"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(backend.get("ttl").is_none(), "and is gone after it");

    let Claim::New(_held) = backend
        .claim("held", "fp", 1, Duration::from_secs(3600))
        .await
        .unwrap()
    else {
        panic!("a free key claims New");
    };
    let paused_start = tokio::time::Instant::now();
    let wait = Duration::from_secs(10);
    assert!(backend.wait_for_completion("held", wait).await.is_none());
    assert!(
        paused_start.elapsed() >= wait,
        "the wait ran its 10 s of tokio time"
    );
    let real = real_start.elapsed();
    assert!(real < Duration::from_secs(1), "took {real:?} of real time");
}
