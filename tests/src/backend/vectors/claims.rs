//! The claim vectors every backend must pass, on real time: claim, complete, release and
//! renew with their fencing, racing claims, and a waiter receiving the result.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Claim, State};

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::support::{
    FINGERPRINT, LONG, PATIENT, StartGate, assert_len, assert_watched, expect_completed,
    expect_in_flight, expect_new, forged_token, real, response, until_watched,
};
use crate::target::{Settings, Target};

/// How far a record's instants may stand from the backend's clock read around the call:
/// a networked backend stamps them with its server's clock, which its `now` only
/// estimates.
const SKEW: Duration = Duration::from_secs(1);

/// Whether `instant` lies within [`SKEW`] of the span `from..=to`.
fn near(instant: Instant, from: Instant, to: Instant) -> bool {
    from.checked_sub(SKEW).is_none_or(|early| early <= instant) && instant <= to + SKEW
}

/// A free key is claimed: `New` with a token, and a CLAIMED record carrying that token,
/// the fingerprint and a lease of exactly `lease_ttl`, counted from the claim.
pub async fn atomic_claim<T: Target>() {
    let backend = real::<T>(Settings::default());
    let lease = Duration::from_secs(30);
    let before = backend.now();
    let token = expect_new(
        backend
            .claim("order-1", FINGERPRINT, 3, lease)
            .await
            .unwrap(),
    );
    let after = backend.now();

    let record = backend
        .get("order-1")
        .await
        .expect("the claimed record is visible");
    assert_eq!(record.key(), "order-1");
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.fingerprint(), FINGERPRINT);
    assert_eq!(record.fingerprint_version(), 3);
    assert!(
        near(record.claimed_at(), before, after),
        "claimed at {:?}, the claim ran from {before:?} to {after:?}",
        record.claimed_at()
    );
    assert_eq!(record.lease_until() - record.claimed_at(), lease);
    assert_eq!(record.response(), None);
    assert_eq!(record.completed_at(), None);
    assert_len(&backend, 1);

    // Another key is another claim, with a token of its own.
    let other = expect_new(
        backend
            .claim("order-2", FINGERPRINT, 3, lease)
            .await
            .unwrap(),
    );
    assert_ne!(other, token);
    assert_len(&backend, 2);
}

/// A second claim of a key in flight gets `InFlight`, carrying the first claim's record
/// and token (even with another fingerprint), and takes nothing over.
pub async fn duplicate_claim_is_in_flight_with_first_token<T: Target>() {
    let backend = real::<T>(Settings::default());
    let first = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());

    let record = expect_in_flight(backend.claim("k", "other-fp", 2, LONG).await.unwrap());
    assert_eq!(record.claim_token(), &first);
    assert_eq!(record.fingerprint(), FINGERPRINT);
    assert_eq!(record.fingerprint_version(), 1);
    assert_eq!(record.state(), State::Claimed);
    assert_len(&backend, 1);

    // The first claim still holds the key.
    assert!(backend.complete("k", &first, response("done"), LONG).await);
}

/// `complete` with the claim's token stores the response; every later claim and `get`
/// replays it (sharing one allocation), its expiry is exactly `expires_after` after its
/// completion, and a second `complete` is refused. A claim by the same fingerprint and
/// version is told the replay is its own (`same_request`); another fingerprint, or the
/// same one under another version, is told it is not.
pub async fn complete_then_replay<T: Target>() {
    let backend = real::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let ttl = Duration::from_secs(600);
    let before = backend.now();
    assert!(
        backend
            .complete("k", &token, response("receipt-1"), ttl)
            .await
    );
    let after = backend.now();

    let replay = expect_completed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert!(replay.same_request(), "the claiming request's own result");
    assert_eq!(replay.response(), &response("receipt-1"));
    assert_eq!(replay.claim_token(), &token);
    let completed_at = replay.completed_at();
    assert!(near(completed_at, before, after));
    assert_eq!(replay.expires_at(), completed_at + ttl);
    for (fingerprint, version) in [("another request", 1), (FINGERPRINT, 2)] {
        let other = expect_completed(
            backend
                .claim("k", fingerprint, version, LONG)
                .await
                .unwrap(),
        );
        assert!(
            !other.same_request(),
            "fingerprint {fingerprint:?} version {version}: not the request that stored it"
        );
    }

    let read = backend
        .get("k")
        .await
        .expect("the completed record is visible");
    assert_eq!(read.response(), Some(&response("receipt-1")));

    // COMPLETED is final.
    assert!(
        !backend
            .complete("k", &token, response("receipt-2"), ttl)
            .await
    );
    let again = expect_completed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_eq!(again.response(), &response("receipt-1"));
}

/// `complete` with a token that does not hold the key is refused and changes nothing; the
/// holder's token still completes it.
pub async fn complete_with_wrong_token_is_refused<T: Target>() {
    let backend = real::<T>(Settings::default());
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

    let record = backend.get("k").await.unwrap();
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.response(), None);
    assert_eq!(backend.get("absent").await.map(|r| r.state()), None);

    assert!(backend.complete("k", &token, response("real"), LONG).await);
    assert_eq!(
        backend.get("k").await.unwrap().response(),
        Some(&response("real"))
    );
}

/// `release` with the holder's token removes the claim, so the next claim is `New` with a
/// new token and the old token is fenced out; a wrong token releases nothing.
pub async fn release_frees_the_key<T: Target>() {
    let backend = real::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());

    assert!(!backend.release("k", &forged_token()).await);
    assert!(backend.get("k").await.is_some());

    assert!(backend.release("k", &token).await);
    assert!(backend.get("k").await.is_none());
    assert_len(&backend, 0);
    assert!(
        !backend.release("k", &token).await,
        "a release is not repeated"
    );

    let next = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_ne!(next, token);
    assert!(!backend.complete("k", &token, response("late"), LONG).await);
    assert!(!backend.release("k", &token).await);
    assert_eq!(backend.get("k").await.unwrap().claim_token(), &next);
}

/// `renew` with a token that does not hold the key is refused and extends nothing; the
/// holder's renewal pushes the lease out; a COMPLETED record is never renewed.
pub async fn renew_extends_only_the_holders_lease<T: Target>() {
    let backend = real::<T>(Settings::default());
    let lease = Duration::from_secs(20);
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    let lease_until = backend.get("k").await.unwrap().lease_until();

    assert!(!backend.renew("k", &forged_token(), LONG).await);
    assert!(!backend.renew("absent", &token, LONG).await);
    assert_eq!(backend.get("k").await.unwrap().lease_until(), lease_until);

    assert!(backend.renew("k", &token, LONG).await);
    let renewed = backend.get("k").await.unwrap().lease_until();
    assert!(renewed > lease_until + Duration::from_secs(60));

    let ttl = Duration::from_secs(60);
    assert!(backend.complete("k", &token, response("done"), ttl).await);
    let expires_at = backend.get("k").await.unwrap().expires_at();
    assert!(
        !backend.renew("k", &token, LONG).await,
        "a completed record is final"
    );
    let record = backend.get("k").await.unwrap();
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.expires_at(), expires_at);
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
    assert_len(&backend, 1);
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
    until_watched::<T::Runtime, _>(&backend, 1).await;
    assert!(
        backend
            .complete("k", &token, response("receipt"), LONG)
            .await
    );

    let record = waiter.await.expect("the waiter receives the record");
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.response(), Some(&response("receipt")));
    let stored = backend.get("k").await.unwrap();
    assert_eq!(record.response(), stored.response());
    assert_watched(&backend, 0);
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

    let record = backend.get("k").await.unwrap();
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &token);
    assert_watched(&backend, 0);
}
