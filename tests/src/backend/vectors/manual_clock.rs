//! The manual-clock vectors, for targets that can run on a `ManualClock`: it alone drives
//! lease lapse, the reclaim grace and TTL expiry, to the nanosecond, with no sleeping.

use std::time::{Duration, Instant};

use idemkit_core::{Clock, State};

use crate::backend::vectors::waits::{PROMPT, settle, spawn_waiters};

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::support::{
    FINGERPRINT, LONG, PATIENT, assert_len, assert_watched, expect_completed, expect_in_flight,
    expect_new, expect_reclaimed, forged_token, frozen_on, manual, manual_on, response,
    until_watched,
};
use crate::target::{ManualTime, Settings};

const NANO: Duration = Duration::from_nanos(1);

/// A claim's record carries the instants of the backend's clock exactly: claimed now,
/// its lease until now plus the lease; a completion's, completed now and expiring
/// `expires_after` later.
pub async fn records_carry_the_clocks_instants_exactly<T: ManualTime>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(30);
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    let record = backend.get("k").await.unwrap();
    assert_eq!(record.claimed_at(), clock.now());
    assert_eq!(record.lease_until(), clock.now() + lease);

    clock.advance(Duration::from_secs(2));
    let ttl = Duration::from_secs(600);
    assert!(backend.complete("k", &token, response("r"), ttl).await);
    let record = backend.get("k").await.unwrap();
    assert_eq!(record.completed_at(), Some(clock.now()));
    assert_eq!(record.expires_at(), Some(clock.now() + ttl));
}

/// A lease is live through its last instant; one nanosecond later the next claim takes
/// the key over with a new token: `Reclaimed`, with a fresh record and lease.
pub async fn expired_lease_is_reclaimed_with_new_token<T: ManualTime>() {
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
    let record = backend.get("k").await.unwrap();
    assert_eq!(record.claim_token(), &second);
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claimed_at(), clock.now());
    assert_eq!(record.lease_until(), clock.now() + lease);
    assert_len(&backend, 1);
}

/// Once a key is reclaimed, the old owner's late `complete`, `renew` and `release` are
/// all refused (fencing); the new owner keeps the key and its result is what replays.
pub async fn reclaimed_owner_late_completion_is_refused<T: ManualTime>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(5);
    let stale = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    clock.advance(lease + NANO);
    let current = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());

    assert!(!backend.complete("k", &stale, response("stale"), LONG).await);
    assert!(!backend.renew("k", &stale, LONG).await);
    assert!(!backend.release("k", &stale).await);
    let record = backend.get("k").await.unwrap();
    assert_eq!(record.claim_token(), &current);
    assert_eq!(record.state(), State::Claimed);

    assert!(
        backend
            .complete("k", &current, response("current"), LONG)
            .await
    );
    let replay = expect_completed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_eq!(replay.claim_token(), &current);
    assert_eq!(replay.response(), &response("current"));
}

/// A COMPLETED record replays through its expiry instant; one nanosecond later it is gone
/// and the key claims fresh, `New` with a new token.
pub async fn completed_record_past_its_ttl_claims_fresh<T: ManualTime>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let first = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let ttl = Duration::from_secs(5);
    assert!(backend.complete("k", &first, response("old"), ttl).await);

    clock.advance(ttl);
    expect_completed(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());

    clock.advance(NANO);
    assert!(
        backend.get("k").await.is_none(),
        "an expired result is invisible"
    );
    let second = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    assert_ne!(second, first);
    let record = backend.get("k").await.unwrap();
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.response(), None);
    assert_len(&backend, 1);
}

/// `renew` pushes a short lease out from now, so the key stays in flight past the
/// original lease; only once the renewed lease lapses is it reclaimed.
pub async fn renew_keeps_a_short_lease_from_being_reclaimed<T: ManualTime>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(1);
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());

    clock.advance(Duration::from_millis(800));
    assert!(backend.renew("k", &token, lease).await);
    assert_eq!(
        backend.get("k").await.unwrap().lease_until(),
        clock.now() + lease
    );

    clock.advance(Duration::from_millis(800)); // past the original lease
    let record = expect_in_flight(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_eq!(record.claim_token(), &token);

    clock.advance(Duration::from_millis(200) + NANO); // past the renewed lease
    let next = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_ne!(next, token);
}

/// `renew` with a token that does not hold the key is refused and extends nothing; a
/// COMPLETED record is never renewed.
pub async fn renew_with_wrong_token_is_refused<T: ManualTime>() {
    let (backend, clock) = manual::<T>(Settings::default());
    let lease = Duration::from_secs(1);
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    let lease_until = backend.get("k").await.unwrap().lease_until();

    assert!(!backend.renew("k", &forged_token(), LONG).await);
    assert!(!backend.renew("absent", &token, LONG).await);
    assert_eq!(backend.get("k").await.unwrap().lease_until(), lease_until);

    clock.advance(lease + NANO);
    let current = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());

    let ttl = Duration::from_secs(60);
    assert!(backend.complete("k", &current, response("done"), ttl).await);
    let expires_at = backend.get("k").await.unwrap().expires_at();
    assert!(
        !backend.renew("k", &current, LONG).await,
        "a completed record is final"
    );
    let record = backend.get("k").await.unwrap();
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.expires_at(), expires_at);
}

/// Moving a `ManualClock` past a lease ends waits on it: a wait started after the lapse
/// returns `None` at once, and a waiter parked before it returns `None` soon after, both
/// far inside their 30 s timeouts.
pub async fn manual_clock_lapses_a_lease_for_waiters<T: ManualTime>() {
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
    until_watched::<T::Runtime, _>(&backend, 1).await;

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
    assert_watched(&backend, 0);
}

/// A lapsed claim is kept through the reclaim grace, its last instant included, so its
/// next claim is `Reclaimed`; past the grace it is gone: `get` is `None`, the next claim
/// is `New`, and the old token is fenced out.
pub async fn manual_clock_ends_the_reclaim_grace<T: ManualTime>() {
    let grace = Duration::from_secs(30);
    let (backend, clock) = manual::<T>(Settings::default().reclaim_grace(grace));
    let lease = Duration::from_secs(10);
    expect_new(backend.claim("kept", FINGERPRINT, 1, lease).await.unwrap());
    let gone = expect_new(backend.claim("gone", FINGERPRINT, 1, lease).await.unwrap());

    clock.advance(lease + grace);
    expect_reclaimed(backend.claim("kept", FINGERPRINT, 1, lease).await.unwrap());

    clock.advance(NANO);
    assert!(backend.get("gone").await.is_none());
    assert!(
        !backend
            .complete("gone", &gone, response("late"), lease)
            .await
    );
    let fresh = expect_new(backend.claim("gone", FINGERPRINT, 1, lease).await.unwrap());
    assert_ne!(fresh, gone);
    assert_len(&backend, 2);
}

/// A result's TTL counts from its completion, not its claim, and reads do not extend it:
/// it replays through `completed_at + ttl` and is gone one nanosecond later.
pub async fn manual_clock_expires_a_result_from_its_completion<T: ManualTime>() {
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
    let record = backend.get("k").await.unwrap();
    assert_eq!(record.completed_at(), Some(clock.now()));
    assert_eq!(record.expires_at(), Some(clock.now() + ttl));

    clock.advance(Duration::from_secs(9));
    assert!(backend.get("k").await.is_some());
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        expect_completed(backend.claim("k", FINGERPRINT, 1, ttl).await.unwrap()).response(),
        &response("r")
    );
    clock.advance(NANO);
    assert!(backend.get("k").await.is_none());
    expect_new(backend.claim("k", FINGERPRINT, 1, ttl).await.unwrap());
}

/// `Duration::MAX` means never: such a lease and such a TTL outlive a century of manual
/// time, and computing them does not overflow.
pub async fn manual_clock_never_expires_duration_max<T: ManualTime>() {
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
    let replay = expect_completed(
        backend
            .claim("done", FINGERPRINT, 1, Duration::MAX)
            .await
            .unwrap(),
    );
    assert!(replay.same_request());
    assert_eq!(replay.response(), &response("kept"));
}

/// A waiter follows a reclaim: its owner's lease lapses (by a `ManualClock`), another
/// claim reclaims the key and completes it, and the waiter returns that new claim's
/// result, promptly after the completion, rather than `None` for the lapse.
///
/// A re-read landing between the lapse and the reclaim would see a lapsed lease and
/// rightly return `None`; so the backend's timers are frozen where the target can, and
/// its waiter re-reads only when woken (else the waiter first settles, its next re-read
/// then far off), and the lapse and the reclaim happen back to back, leaving the
/// reclaim's wake-up to find a live claim again.
pub async fn a_waiter_follows_a_reclaim_to_the_new_claims_result<T: ManualTime>() {
    let clock = idemkit_core::ManualClock::new();
    let (backend, frozen) = match frozen_on::<T>(Settings::default(), clock.clone()) {
        Some(backend) => (backend, true),
        None => (manual_on::<T>(Settings::default(), clock.clone()), false),
    };
    let lease = Duration::from_secs(10);
    let crashed = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    let waiters = spawn_waiters::<T, _>(&backend, "k", 1).await;
    settle::<T>(frozen).await;

    clock.advance(lease + Duration::from_secs(1));
    let token = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_ne!(token, crashed);
    let completed = Instant::now();
    assert!(
        backend
            .complete("k", &token, response("second try"), LONG)
            .await
    );
    for waiter in waiters {
        let (record, returned) = waiter.await;
        let record = record.expect("the waiter gets the new claim's result");
        assert_eq!(record.state(), State::Completed);
        assert_eq!(record.claim_token(), &token);
        assert_eq!(record.response(), Some(&response("second try")));
        let elapsed = returned.saturating_duration_since(completed);
        assert!(
            elapsed < PROMPT,
            "the waiter woke {elapsed:?} after the completion"
        );
    }
    assert_watched(&backend, 0);
}
