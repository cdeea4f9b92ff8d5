//! The capacity vectors: a full store refuses new keys, never existing ones, and expired
//! records give their slots back. There is no LRU.

use std::time::Duration;

use idemkit_core::{Error, State};

use crate::backend::ConformanceBackend;
use crate::support::{
    FINGERPRINT, LONG, assert_len, expect_completed, expect_in_flight, expect_new, manual, response,
};
use crate::target::{ExactCapacity, ManualTime, Settings};

const NANO: Duration = Duration::from_nanos(1);

#[track_caller]
fn assert_full<T>(result: Result<T, Error>, max_size: usize) {
    match result {
        Err(Error::Full { max_size: reported }) => assert_eq!(reported, max_size),
        Err(other) => panic!("expected Error::Full, got {other:?}"),
        Ok(_) => panic!("expected Error::Full, but the claim was granted"),
    }
}

/// At `max_size` records a new key is refused with `Full`, while the keys already held
/// still claim, complete, replay and renew; a release makes room again.
pub async fn full_store_refuses_new_keys_but_not_existing_ones<T: ManualTime + ExactCapacity>() {
    let (backend, _clock) = manual::<T>(Settings::default().max_size(2));
    let a = expect_new(backend.claim("a", FINGERPRINT, 1, LONG).await.unwrap());
    let b = expect_new(backend.claim("b", FINGERPRINT, 1, LONG).await.unwrap());

    assert_full(backend.claim("c", FINGERPRINT, 1, LONG).await, 2);
    assert!(backend.get("c").await.is_none());

    let record = expect_in_flight(backend.claim("a", FINGERPRINT, 1, LONG).await.unwrap());
    assert_eq!(record.claim_token(), &a);
    assert!(backend.complete("a", &a, response("a"), LONG).await);
    expect_completed(backend.claim("a", FINGERPRINT, 1, LONG).await.unwrap());
    assert!(backend.renew("b", &b, LONG).await);
    assert_len(&backend, 2);
    assert_full(backend.claim("c", FINGERPRINT, 1, LONG).await, 2);

    // Nothing was evicted to make room.
    assert_eq!(backend.get("a").await.unwrap().state(), State::Completed);
    assert_eq!(backend.get("b").await.unwrap().claim_token(), &b);

    assert!(backend.release("b", &b).await);
    expect_new(backend.claim("c", FINGERPRINT, 1, LONG).await.unwrap());
    assert_len(&backend, 2);
}

/// An expired COMPLETED record frees its slot for a new key the moment it expires; a
/// crashed claim frees its slot once its reclaim grace is over, not before.
pub async fn an_expired_record_frees_its_slot<T: ManualTime + ExactCapacity>() {
    let grace = Duration::from_secs(5);
    let settings = Settings::default().max_size(1).reclaim_grace(grace);
    let (backend, clock) = manual::<T>(settings);

    let a = expect_new(backend.claim("a", FINGERPRINT, 1, LONG).await.unwrap());
    let ttl = Duration::from_secs(1);
    assert!(backend.complete("a", &a, response("a"), ttl).await);
    assert_full(backend.claim("b", FINGERPRINT, 1, LONG).await, 1);
    clock.advance(ttl);
    assert_full(backend.claim("b", FINGERPRINT, 1, LONG).await, 1);
    clock.advance(NANO);
    let lease = Duration::from_secs(1);
    expect_new(backend.claim("b", FINGERPRINT, 1, lease).await.unwrap());
    assert!(backend.get("a").await.is_none());
    assert_len(&backend, 1);

    // "b" crashes: its lapsed claim keeps the slot through the grace (so a retry of "b"
    // would report Reclaimed), then lets it go.
    clock.advance(lease + NANO);
    assert_full(backend.claim("c", FINGERPRINT, 1, LONG).await, 1);
    clock.advance(grace);
    expect_new(backend.claim("c", FINGERPRINT, 1, LONG).await.unwrap());
    assert!(backend.get("b").await.is_none());
    assert_len(&backend, 1);
}
