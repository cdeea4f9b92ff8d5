//! The reference's thirteen backend vectors: claim, complete, release, renew, reclaim
//! and fencing, concurrent claims, and waiting for a result.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Claim, Clock, State};

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::support::{
    FINGERPRINT, LONG, PATIENT, StartGate, eventually, expect_completed, expect_in_flight,
    expect_new, expect_reclaimed, forged_token, manual, real, response,
};
use crate::target::{Settings, Target};

const NANO: Duration = Duration::from_nanos(1);

/// A free key is claimed: `New` with a token, and a CLAIMED record carrying that token,
/// the fingerprint and a lease counted from the claim.
pub async fn atomic_claim<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(30);
    let token = expect_new(
        backend
            .claim("order-1", FINGERPRINT, 3, lease)
            .await
            .unwrap(),
    );

    let record = backend
        .get("order-1")
        .expect("the claimed record is visible");
    assert_eq!(record.key(), "order-1");
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.fingerprint(), FINGERPRINT);
    assert_eq!(record.fingerprint_version(), 3);
    assert_eq!(record.claimed_at(), clock.now());
    assert_eq!(record.lease_until(), clock.now() + lease);
    assert_eq!(record.response(), None);
    assert_eq!(record.completed_at(), None);
    assert_eq!(backend.len(), 1);

    // Another key is another claim, with a token of its own.
    let other = expect_new(
        backend
            .claim("order-2", FINGERPRINT, 3, lease)
            .await
            .unwrap(),
    );
    assert_ne!(other, token);
    assert_eq!(backend.len(), 2);
}

/// A second claim of a key in flight gets `InFlight`, carrying the first claim's record
/// and token (even with another fingerprint), and takes nothing over.
pub async fn duplicate_claim_is_in_flight_with_first_token<T: Target>() {
    let (backend, _clock) = manual::<T>(Settings::default());
    let first = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());

    let record = expect_in_flight(backend.claim("k", "other-fp", 2, LONG).await.unwrap());
    assert_eq!(record.claim_token(), &first);
    assert_eq!(record.fingerprint(), FINGERPRINT);
    assert_eq!(record.fingerprint_version(), 1);
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(backend.len(), 1);

    // The first claim still holds the key.
    assert!(backend.complete("k", &first, response("done"), LONG).await);
}

/// `complete` with the claim's token stores the response; every later claim and `get`
/// replays it (sharing one allocation), and a second `complete` is refused.
pub async fn complete_then_replay<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let ttl = Duration::from_secs(600);
    assert!(
        backend
            .complete("k", &token, response("receipt-1"), ttl)
            .await
    );

    let replay = expect_completed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_eq!(replay.state(), State::Completed);
    assert_eq!(replay.response(), Some(&response("receipt-1")));
    assert_eq!(replay.claim_token(), &token);
    assert_eq!(replay.completed_at(), Some(clock.now()));
    assert_eq!(replay.expires_at(), Some(clock.now() + ttl));

    let read = backend.get("k").expect("the completed record is visible");
    assert!(
        Arc::ptr_eq(
            replay.shared_response().unwrap(),
            read.shared_response().unwrap()
        ),
        "replays share the stored response instead of copying it"
    );

    // COMPLETED is final.
    assert!(
        !backend
            .complete("k", &token, response("receipt-2"), ttl)
            .await
    );
    let again = expect_completed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_eq!(again.response(), Some(&response("receipt-1")));
}

/// `complete` with a token that does not hold the key is refused and changes nothing; the
/// holder's token still completes it.
pub async fn complete_with_wrong_token_is_refused<T: Target>() {
    let (backend, _clock) = manual::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let other = expect_new(backend.claim("other", FINGERPRINT, 1, LONG).await.unwrap());

    assert!(
        !backend
            .complete("k", &forged_token(), response("forged"), LONG)
            .await
    );
    // A real token, but of another key.
    assert!(
        !backend
            .complete("k", &other, response("crossed"), LONG)
            .await
    );
    assert!(
        !backend
            .complete("absent", &token, response("absent"), LONG)
            .await
    );

    let record = backend.get("k").unwrap();
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.response(), None);
    assert_eq!(backend.get("absent").map(|r| r.state()), None);

    assert!(backend.complete("k", &token, response("real"), LONG).await);
    assert_eq!(
        backend.get("k").unwrap().response(),
        Some(&response("real"))
    );
}

/// `release` with the holder's token removes the claim, so the next claim is `New` with a
/// new token and the old token is fenced out; a wrong token releases nothing.
pub async fn release_frees_the_key<T: Target>() {
    let (backend, _clock) = manual::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());

    assert!(!backend.release("k", &forged_token()).await);
    assert!(backend.get("k").is_some());

    assert!(backend.release("k", &token).await);
    assert!(backend.get("k").is_none());
    assert_eq!(backend.len(), 0);
    assert!(
        !backend.release("k", &token).await,
        "a release is not repeated"
    );

    let next = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_ne!(next, token);
    assert!(!backend.complete("k", &token, response("late"), LONG).await);
    assert!(!backend.release("k", &token).await);
    assert_eq!(backend.get("k").unwrap().claim_token(), &next);
}

/// A lease is live through its last instant; one nanosecond later the next claim takes
/// the key over with a new token: `Reclaimed`, with a fresh record and lease.
pub async fn expired_lease_is_reclaimed_with_new_token<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(10);
    let first = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());

    clock.advance(lease);
    let record = expect_in_flight(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_eq!(
        record.claim_token(),
        &first,
        "the lease is live at its deadline"
    );

    clock.advance(NANO);
    let second = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_ne!(second, first);
    let record = backend.get("k").unwrap();
    assert_eq!(record.claim_token(), &second);
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claimed_at(), clock.now());
    assert_eq!(record.lease_until(), clock.now() + lease);
    assert_eq!(backend.len(), 1);
}

/// Once a key is reclaimed, the old owner's late `complete`, `renew` and `release` are
/// all refused (fencing); the new owner keeps the key and its result is what replays.
pub async fn reclaimed_owner_late_completion_is_refused<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(5);
    let stale = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    clock.advance(lease + NANO);
    let current = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());

    assert!(!backend.complete("k", &stale, response("stale"), LONG).await);
    assert!(!backend.renew("k", &stale, LONG).await);
    assert!(!backend.release("k", &stale).await);
    let record = backend.get("k").unwrap();
    assert_eq!(record.claim_token(), &current);
    assert_eq!(record.state(), State::Claimed);

    assert!(
        backend
            .complete("k", &current, response("current"), LONG)
            .await
    );
    let replay = expect_completed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_eq!(replay.claim_token(), &current);
    assert_eq!(replay.response(), Some(&response("current")));
}

/// 25 concurrent claims of one key: exactly one `New`; the other 24 are `InFlight` and
/// carry the winner's token.
pub async fn concurrent_claims_give_exactly_one_new<T: Target>() {
    let backend = real::<T>(Settings::default());
    let gate = Arc::new(StartGate::default());
    let tasks: Vec<_> = (0..25)
        .map(|_| {
            let backend = backend.clone();
            let gate = gate.clone();
            T::Runtime::spawn(async move {
                gate.pass().await;
                backend.claim("k", FINGERPRINT, 1, LONG).await
            })
        })
        .collect();
    gate.open_when::<T::Runtime>(25).await;
    let mut claims = Vec::new();
    for task in tasks {
        claims.push(task.await.unwrap());
    }

    let winners: Vec<_> = claims
        .iter()
        .filter_map(|c| match c {
            Claim::New(token) => Some(token.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(winners.len(), 1, "exactly one claim wins: {claims:?}");
    let in_flight: Vec<_> = claims.iter().filter_map(Claim::record).collect();
    assert_eq!(in_flight.len(), 24);
    for record in in_flight {
        assert_eq!(record.state(), State::Claimed);
        assert_eq!(record.claim_token(), &winners[0]);
    }
    assert_eq!(backend.len(), 1);
}

/// A waiter parked on an in-flight key receives the completed record, sharing the stored
/// response, and leaves no waiter entry behind.
pub async fn waiter_receives_the_completed_record<T: Target>() {
    let backend = real::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());

    let waiter = {
        let backend = backend.clone();
        T::Runtime::spawn(async move { backend.wait_for_completion("k", PATIENT).await })
    };
    eventually::<T::Runtime>("the waiter is parked", PATIENT, || {
        backend.watched_keys() == 1
    })
    .await;
    assert!(
        backend
            .complete("k", &token, response("receipt"), LONG)
            .await
    );

    let record = waiter.await.expect("the waiter receives the record");
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.response(), Some(&response("receipt")));
    let stored = backend.get("k").unwrap();
    assert!(Arc::ptr_eq(
        record.shared_response().unwrap(),
        stored.shared_response().unwrap()
    ));
    assert_eq!(backend.watched_keys(), 0);
}

/// A wait on a claim that never completes returns `None` once its timeout has passed,
/// not before, and leaves the claim and no waiter entry behind.
pub async fn wait_times_out_on_a_claim_that_never_completes<T: Target>() {
    let backend = real::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let timeout = Duration::from_millis(200);

    let start = Instant::now();
    assert!(backend.wait_for_completion("k", timeout).await.is_none());
    let elapsed = start.elapsed();
    assert!(
        elapsed >= timeout,
        "returned after {elapsed:?}, before the timeout"
    );
    assert!(
        elapsed < Duration::from_secs(10),
        "returned only after {elapsed:?}"
    );

    let record = backend.get("k").unwrap();
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &token);
    assert_eq!(backend.watched_keys(), 0);
}

/// A COMPLETED record replays through its expiry instant; one nanosecond later it is gone
/// and the key claims fresh, `New` with a new token.
pub async fn completed_record_past_its_ttl_claims_fresh<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let first = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let ttl = Duration::from_secs(5);
    assert!(backend.complete("k", &first, response("old"), ttl).await);

    clock.advance(ttl);
    expect_completed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());

    clock.advance(NANO);
    assert!(backend.get("k").is_none(), "an expired result is invisible");
    let second = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_ne!(second, first);
    let record = backend.get("k").unwrap();
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.response(), None);
    assert_eq!(backend.len(), 1);
}

/// `renew` pushes a short lease out from now, so the key stays in flight past the
/// original lease; only once the renewed lease lapses is it reclaimed.
pub async fn renew_keeps_a_short_lease_from_being_reclaimed<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(1);
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());

    clock.advance(Duration::from_millis(800));
    assert!(backend.renew("k", &token, lease).await);
    assert_eq!(backend.get("k").unwrap().lease_until(), clock.now() + lease);

    clock.advance(Duration::from_millis(800)); // past the original lease
    let record = expect_in_flight(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_eq!(record.claim_token(), &token);

    clock.advance(Duration::from_millis(200) + NANO); // past the renewed lease
    let next = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_ne!(next, token);
}

/// `renew` with a token that does not hold the key is refused and extends nothing; a
/// COMPLETED record is never renewed.
pub async fn renew_with_wrong_token_is_refused<T: Target>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(1);
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    let lease_until = backend.get("k").unwrap().lease_until();

    assert!(!backend.renew("k", &forged_token(), LONG).await);
    assert!(!backend.renew("absent", &token, LONG).await);
    assert_eq!(backend.get("k").unwrap().lease_until(), lease_until);

    clock.advance(lease + NANO);
    let current = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());

    let ttl = Duration::from_secs(60);
    assert!(backend.complete("k", &current, response("done"), ttl).await);
    let expires_at = backend.get("k").unwrap().expires_at();
    assert!(
        !backend.renew("k", &current, LONG).await,
        "a completed record is final"
    );
    let record = backend.get("k").unwrap();
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.expires_at(), expires_at);
}
