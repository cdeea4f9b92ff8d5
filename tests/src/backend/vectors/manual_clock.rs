//! The manual-clock vectors: a `ManualClock` alone drives lease lapse, the reclaim grace
//! and TTL expiry, with no sleeping.

use std::time::{Duration, Instant};

use idemkit_core::{Clock, State};

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::support::{
    FINGERPRINT, PATIENT, eventually, expect_completed, expect_in_flight, expect_new,
    expect_reclaimed, manual, response,
};
use crate::target::{Settings, Target};

const NANO: Duration = Duration::from_nanos(1);

/// Moving a `ManualClock` past a lease ends waits on it: a wait started after the lapse
/// returns `None` at once, and a waiter parked before it returns `None` soon after, both
/// far inside their 30 s timeouts.
pub async fn manual_clock_lapses_a_lease_for_waiters<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(10);
    expect_new(
        backend
            .claim("parked", FINGERPRINT, 1, lease)
            .await
            .unwrap(),
    );
    expect_new(backend.claim("late", FINGERPRINT, 1, lease).await.unwrap());

    let parked = {
        let backend = backend.clone();
        T::Runtime::spawn(async move {
            let start = Instant::now();
            let record = backend.wait_for_completion("parked", PATIENT).await;
            (record, start.elapsed())
        })
    };
    eventually::<T::Runtime>("the waiter is parked", PATIENT, || {
        backend.watched_keys() == 1
    })
    .await;

    clock.advance(lease + NANO);
    let start = Instant::now();
    assert!(backend.wait_for_completion("late", PATIENT).await.is_none());
    let late = start.elapsed();
    assert!(
        late < Duration::from_secs(5),
        "a wait on a lapsed lease took {late:?}"
    );

    let (record, waited) = parked.await;
    assert!(record.is_none(), "the lease lapsed; nothing completed");
    assert!(
        waited < Duration::from_secs(10),
        "the parked waiter took {waited:?}"
    );
    assert_eq!(backend.watched_keys(), 0);
}

/// A lapsed claim is kept through the reclaim grace, its last instant included, so its
/// next claim is `Reclaimed`; past the grace it is gone: `get` is `None`, the next claim
/// is `New`, and the old token is fenced out.
pub async fn manual_clock_ends_the_reclaim_grace<T: Target>() {
    let grace = Duration::from_secs(30);
    let (backend, clock) = manual::<T>(Settings::default().reclaim_grace(grace));
    let lease = Duration::from_secs(10);
    expect_new(backend.claim("kept", FINGERPRINT, 1, lease).await.unwrap());
    let gone = expect_new(backend.claim("gone", FINGERPRINT, 1, lease).await.unwrap());

    clock.advance(lease + grace);
    expect_reclaimed(backend.claim("kept", FINGERPRINT, 1, lease).await.unwrap());

    clock.advance(NANO);
    assert!(backend.get("gone").is_none());
    assert!(
        !backend
            .complete("gone", &gone, response("late"), lease)
            .await
    );
    let fresh = expect_new(backend.claim("gone", FINGERPRINT, 1, lease).await.unwrap());
    assert_ne!(fresh, gone);
    assert_eq!(backend.len(), 2);
}

/// A result's TTL counts from its completion, not its claim, and reads do not extend it:
/// it replays through `completed_at + ttl` and is gone one nanosecond later.
pub async fn manual_clock_expires_a_result_from_its_completion<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let token = expect_new(
        backend
            .claim("k", FINGERPRINT, 1, Duration::from_secs(100))
            .await
            .unwrap(),
    );
    clock.advance(Duration::from_secs(50));
    let ttl = Duration::from_secs(10);
    assert!(backend.complete("k", &token, response("r"), ttl).await);
    let record = backend.get("k").unwrap();
    assert_eq!(record.completed_at(), Some(clock.now()));
    assert_eq!(record.expires_at(), Some(clock.now() + ttl));

    clock.advance(Duration::from_secs(9));
    assert!(backend.get("k").is_some());
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        expect_completed(backend.claim("k", FINGERPRINT, 1, ttl).await.unwrap()).response(),
        Some(&response("r"))
    );
    clock.advance(NANO);
    assert!(backend.get("k").is_none());
    expect_new(backend.claim("k", FINGERPRINT, 1, ttl).await.unwrap());
}

/// `Duration::MAX` means never: such a lease and such a TTL outlive a century of manual
/// time, and computing them does not overflow.
pub async fn manual_clock_never_expires_duration_max<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let century = Duration::from_secs(100 * 366 * 24 * 3600);
    let held = expect_new(
        backend
            .claim("held", FINGERPRINT, 1, Duration::MAX)
            .await
            .unwrap(),
    );
    let done = expect_new(
        backend
            .claim("done", FINGERPRINT, 1, Duration::MAX)
            .await
            .unwrap(),
    );
    assert!(
        backend
            .complete("done", &done, response("kept"), Duration::MAX)
            .await
    );

    clock.advance(century);
    let record = expect_in_flight(
        backend
            .claim("held", FINGERPRINT, 1, Duration::MAX)
            .await
            .unwrap(),
    );
    assert_eq!(record.claim_token(), &held);
    let record = expect_completed(
        backend
            .claim("done", FINGERPRINT, 1, Duration::MAX)
            .await
            .unwrap(),
    );
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.response(), Some(&response("kept")));
}
