//! The real-time vectors: leases, results and the reclaim grace lapse on the backend's
//! own clock, for every backend (a networked one judges them by its server's clock).
//!
//! Lifetimes are a second or two, and each check sits half a second or more from the
//! instant that changes its answer, so a loaded machine does not flip it.

use std::time::Duration;

use idemkit_core::State;

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::support::{
    FINGERPRINT, LONG, assert_len, expect_completed, expect_in_flight, expect_new,
    expect_reclaimed, real, response,
};
use crate::target::{Settings, Target};

const SECOND: Duration = Duration::from_secs(1);

/// A lease lapses on the backend's clock: in flight while it runs, then reclaimed with a
/// new token; the old owner's late `complete`, `renew` and `release` are refused, and
/// the new owner's result is what replays.
pub async fn a_lapsed_lease_is_reclaimed_and_its_owner_fenced_out<T: Target>() {
    let backend = real::<T>(Settings::default());
    let lease = 2 * SECOND;
    let stale = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    let record = expect_in_flight(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_eq!(record.claim_token(), &stale);

    T::Runtime::sleep(lease + SECOND / 2).await;
    let current = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_ne!(current, stale);
    assert!(!backend.complete("k", &stale, response("stale"), LONG).await);
    assert!(!backend.renew("k", &stale, LONG).await);
    assert!(!backend.release("k", &stale).await);
    assert_eq!(
        backend.get("k").await.unwrap().claim_token(),
        &current,
        "the fenced-out writes changed nothing"
    );

    assert!(
        backend
            .complete("k", &current, response("current"), LONG)
            .await
    );
    let replay = expect_completed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_eq!(replay.claim_token(), &current);
    assert_eq!(replay.response(), &response("current"));
}

/// A result replays while its TTL runs and is gone after it: `get` finds nothing and the
/// next claim is `New`.
pub async fn a_result_expires_after_its_ttl<T: Target>() {
    let backend = real::<T>(Settings::default());
    let first = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let ttl = 2 * SECOND;
    assert!(backend.complete("k", &first, response("brief"), ttl).await);
    expect_completed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());

    T::Runtime::sleep(ttl + SECOND / 2).await;
    assert!(
        backend.get("k").await.is_none(),
        "an expired result is gone"
    );
    let second = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_ne!(second, first);
    assert_eq!(backend.get("k").await.unwrap().state(), State::Claimed);
}

/// A lapsed claim is kept through the reclaim grace (its next claim is `Reclaimed`, a
/// late completion with its token still lands), then dropped (its next claim is `New`,
/// its token fenced out).
pub async fn a_lapsed_claim_is_kept_for_the_grace_then_dropped<T: Target>() {
    let grace = 2 * SECOND;
    let backend = real::<T>(Settings::default().reclaim_grace(grace));
    let lease = SECOND;
    expect_new(backend.claim("kept", FINGERPRINT, 1, lease).await.unwrap());
    let late = expect_new(backend.claim("late", FINGERPRINT, 1, lease).await.unwrap());
    let gone = expect_new(backend.claim("gone", FINGERPRINT, 1, lease).await.unwrap());

    // Lapsed by half a second, within the grace by a second and a half.
    T::Runtime::sleep(lease + SECOND / 2).await;
    expect_reclaimed(backend.claim("kept", FINGERPRINT, 1, LONG).await.unwrap());
    assert!(
        backend
            .complete("late", &late, response("late"), LONG)
            .await,
        "nobody reclaimed it: a late completion within the grace lands"
    );
    assert!(
        backend.get("gone").await.is_some(),
        "kept through the grace"
    );

    // Past the grace by more than half a second.
    T::Runtime::sleep(grace).await;
    assert!(backend.get("gone").await.is_none());
    assert!(
        !backend
            .complete("gone", &gone, response("too late"), LONG)
            .await
    );
    let fresh = expect_new(backend.claim("gone", FINGERPRINT, 1, LONG).await.unwrap());
    assert_ne!(fresh, gone);
    assert_len(&backend, 3);
}
