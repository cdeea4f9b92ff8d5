//! `Store` rule by rule, with explicit instants: every test picks `t0` and moves time only
//! by adding durations to it, so nothing here sleeps or depends on the machine's speed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, Error, Record, Response, State, Store};

const LEASE: Duration = Duration::from_secs(30);
const TTL: Duration = Duration::from_secs(3600);
const NS: Duration = Duration::from_nanos(1);

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Claims `key` and insists the store hands out a fresh claim.
fn claim_new(store: &mut Store, key: &str, lease: Duration, now: Instant) -> ClaimToken {
    match store.claim(key, "fp", 1, lease, now) {
        Ok(Claim::New(token)) => token,
        other => panic!("expected New for {key:?}, got {other:?}"),
    }
}

fn ok(body: &str) -> Response {
    Response::new(200, body.to_owned())
}

/// A deadline that `Duration::MAX` saturated to: further out than any test could reach.
fn is_never(deadline: Instant, now: Instant) -> bool {
    deadline.saturating_duration_since(now) > secs(100 * 365 * 86_400)
}

// ---- rule 1: what a claim finds ----

#[test]
fn a_free_key_is_claimed_new_with_a_claimed_record() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);

    let record = store.get("k", t0).expect("claimed record");
    assert_eq!(record.key(), "k");
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.fingerprint(), "fp");
    assert_eq!(record.fingerprint_version(), 1);
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.claimed_at(), t0);
    assert_eq!(record.lease_until(), t0 + LEASE);
    assert_eq!(record.completed_at(), None);
    assert_eq!(record.expires_at(), None);
    assert!(record.response().is_none());
    assert!(record.shared_response().is_none());
    assert_eq!(store.len(), 1);
    assert!(!store.is_empty());
}

#[test]
fn a_live_claim_is_reported_in_flight_with_its_record() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);

    let claim = store
        .claim("k", "other-fp", 7, LEASE, t0 + secs(5))
        .unwrap();
    let Claim::InFlight(record) = claim else {
        panic!("expected InFlight, got {claim:?}");
    };
    // The record is the first claimer's, untouched by the second attempt.
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.fingerprint(), "fp");
    assert_eq!(record.fingerprint_version(), 1);
    assert_eq!(record.claimed_at(), t0);
    assert_eq!(record.lease_until(), t0 + LEASE);
    assert_eq!(store.len(), 1);
}

#[test]
fn a_completed_key_is_replayed() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    let response = Response::new(201, "created").with_header("location", "/orders/1");
    assert!(store.complete("k", &token, response.clone(), TTL, t0 + secs(2)));

    let claim = store.claim("k", "fp", 1, LEASE, t0 + secs(3)).unwrap();
    let Claim::Completed(record) = claim else {
        panic!("expected Completed, got {claim:?}");
    };
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.response(), Some(&response));
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.claimed_at(), t0);
    assert_eq!(record.completed_at(), Some(t0 + secs(2)));
    assert_eq!(record.expires_at(), Some(t0 + secs(2) + TTL));
}

#[test]
fn a_lapsed_claim_is_reclaimed_with_a_new_token_and_fresh_record() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let old = claim_new(&mut store, "k", LEASE, t0);
    let later = t0 + LEASE + secs(1);

    let claim = store.claim("k", "fp2", 2, secs(10), later).unwrap();
    let Claim::Reclaimed(new) = claim else {
        panic!("expected Reclaimed, got {claim:?}");
    };
    assert_ne!(new, old);
    let record = store.get("k", later).unwrap();
    assert_eq!(record.claim_token(), &new);
    assert_eq!(record.fingerprint(), "fp2");
    assert_eq!(record.fingerprint_version(), 2);
    assert_eq!(record.claimed_at(), later);
    assert_eq!(record.lease_until(), later + secs(10));
    assert_eq!(store.len(), 1, "reclaiming replaces, never adds");
}

#[test]
fn every_claim_gets_a_distinct_token() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let mut seen = std::collections::HashSet::new();
    for i in 0..1000 {
        let token = claim_new(&mut store, &format!("k{i}"), LEASE, t0);
        assert!(seen.insert(token), "token repeated at claim {i}");
    }
}

// ---- capacity ----

#[test]
fn a_full_store_refuses_a_new_key() {
    let t0 = Instant::now();
    let mut store = Store::new().with_max_size(2);
    assert_eq!(store.max_size(), 2);
    claim_new(&mut store, "a", LEASE, t0);
    claim_new(&mut store, "b", LEASE, t0);

    let refused = store.claim("c", "fp", 1, LEASE, t0);
    assert!(
        matches!(refused, Err(Error::Full { max_size: 2 })),
        "{refused:?}"
    );
    assert_eq!(store.len(), 2);
    assert!(store.get("c", t0).is_none());
}

#[test]
fn a_full_store_never_refuses_a_key_it_holds() {
    let t0 = Instant::now();
    let mut store = Store::new().with_max_size(2);
    let a = claim_new(&mut store, "a", LEASE, t0);
    claim_new(&mut store, "b", LEASE, t0);

    // In flight, completed, and reclaimed all still work at capacity.
    assert!(matches!(
        store.claim("b", "fp", 1, LEASE, t0),
        Ok(Claim::InFlight(_))
    ));
    assert!(store.complete("a", &a, ok("done"), TTL, t0));
    assert!(matches!(
        store.claim("a", "fp", 1, LEASE, t0),
        Ok(Claim::Completed(_))
    ));
    let lapsed = t0 + LEASE + secs(1);
    assert!(matches!(
        store.claim("b", "fp", 1, LEASE, lapsed),
        Ok(Claim::Reclaimed(_))
    ));
    assert_eq!(store.len(), 2);
}

#[test]
fn an_expired_completed_record_frees_its_slot() {
    let t0 = Instant::now();
    let mut store = Store::new().with_max_size(2);
    let a = claim_new(&mut store, "a", LEASE, t0);
    claim_new(&mut store, "b", Duration::MAX, t0);
    assert!(store.complete("a", &a, ok("a"), secs(10), t0));

    // At the expiry instant the record still counts.
    let at_expiry = t0 + secs(10);
    assert!(matches!(
        store.claim("c", "fp", 1, LEASE, at_expiry),
        Err(Error::Full { max_size: 2 })
    ));
    // Just past it, "a" is dropped and "c" takes its place.
    claim_new(&mut store, "c", LEASE, at_expiry + NS);
    assert_eq!(store.len(), 2);
    assert!(store.get("a", at_expiry + NS).is_none());
}

#[test]
fn a_lapsed_claim_frees_its_slot_only_after_the_grace() {
    let t0 = Instant::now();
    let grace = secs(5);
    let mut store = Store::new().with_max_size(2).with_reclaim_grace(grace);
    claim_new(&mut store, "a", secs(10), t0);
    claim_new(&mut store, "b", Duration::MAX, t0);

    // Lapsed but within the grace: kept, so its slot is still taken.
    for now in [t0 + secs(10) + NS, t0 + secs(10) + grace] {
        assert!(
            matches!(
                store.claim("c", "fp", 1, LEASE, now),
                Err(Error::Full { max_size: 2 })
            ),
            "slot freed too early"
        );
    }
    let past_grace = t0 + secs(10) + grace + NS;
    claim_new(&mut store, "c", LEASE, past_grace);
    assert_eq!(store.len(), 2);
    assert!(store.get("a", past_grace).is_none());
}

#[test]
fn a_claim_within_its_lease_never_frees_its_slot() {
    let t0 = Instant::now();
    let mut store = Store::new()
        .with_max_size(2)
        .with_reclaim_grace(Duration::ZERO);
    let a = claim_new(&mut store, "a", secs(10), t0);
    claim_new(&mut store, "b", Duration::MAX, t0);

    let mut now = t0;
    for step in 0..5 {
        now += secs(8);
        // Renewed before it lapses, so it is never due, however long it runs.
        assert!(store.renew("a", &a, secs(10), now), "renew {step}");
        assert!(matches!(
            store.claim("c", "fp", 1, LEASE, now),
            Err(Error::Full { max_size: 2 })
        ));
        assert_eq!(store.purge_expired(now), 0);
    }
    // Never-lapsing "b" holds its slot even far in the future.
    let far = t0 + secs(1_000_000);
    assert!(store.release("a", &a, now));
    claim_new(&mut store, "c", LEASE, far);
    assert!(matches!(
        store.claim("d", "fp", 1, LEASE, far),
        Err(Error::Full { max_size: 2 })
    ));
}

#[test]
fn a_release_frees_its_slot() {
    let t0 = Instant::now();
    let mut store = Store::new().with_max_size(1);
    let a = claim_new(&mut store, "a", LEASE, t0);
    assert!(matches!(
        store.claim("b", "fp", 1, LEASE, t0),
        Err(Error::Full { max_size: 1 })
    ));
    assert!(store.release("a", &a, t0));
    assert_eq!(store.len(), 0);
    claim_new(&mut store, "b", LEASE, t0);
}

#[test]
fn a_zero_capacity_store_refuses_everything() {
    let t0 = Instant::now();
    let mut store = Store::new().with_max_size(0);
    assert!(matches!(
        store.claim("a", "fp", 1, LEASE, t0),
        Err(Error::Full { max_size: 0 })
    ));
    assert!(store.is_empty());
}

// ---- rule 2: inclusive deadlines and saturation ----

#[test]
fn a_lease_is_live_at_its_deadline_and_lapsed_one_nanosecond_later() {
    let t0 = Instant::now();
    let mut store = Store::new();
    claim_new(&mut store, "k", LEASE, t0);
    let deadline = t0 + LEASE;

    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, deadline),
        Ok(Claim::InFlight(_))
    ));
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, deadline + NS),
        Ok(Claim::Reclaimed(_))
    ));
}

#[test]
fn a_result_is_replayed_at_its_expiry_and_gone_one_nanosecond_later() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    assert!(store.complete("k", &token, ok("x"), secs(10), t0));
    let expiry = t0 + secs(10);

    assert!(store.get("k", expiry).is_some());
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, expiry),
        Ok(Claim::Completed(_))
    ));
    assert!(store.get("k", expiry + NS).is_none());
    claim_new(&mut store, "k", LEASE, expiry + NS);
}

#[test]
fn a_zero_lease_is_live_only_at_its_instant() {
    let t0 = Instant::now();
    let mut store = Store::new();
    claim_new(&mut store, "k", Duration::ZERO, t0);
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, t0),
        Ok(Claim::InFlight(_))
    ));
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, t0 + NS),
        Ok(Claim::Reclaimed(_))
    ));
}

#[test]
fn durations_saturate_to_never() {
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(Duration::MAX);
    let lease_forever = claim_new(&mut store, "lease", Duration::MAX, t0);
    let done = claim_new(&mut store, "done", LEASE, t0);
    assert!(store.complete("done", &done, ok("kept"), Duration::MAX, t0));
    assert!(store.renew("lease", &lease_forever, Duration::MAX, t0 + secs(1)));

    let record = store.get("lease", t0).unwrap();
    assert!(is_never(record.lease_until(), t0), "{record:?}");
    let record = store.get("done", t0).unwrap();
    assert!(is_never(record.expires_at().unwrap(), t0), "{record:?}");
    assert_eq!(record.lease_until(), record.expires_at().unwrap());

    assert_eq!(store.next_expiry(), None);
    let far = t0 + secs(200 * 365 * 86_400);
    assert_eq!(store.purge_expired(far), 0);
    assert!(matches!(
        store.claim("lease", "fp", 1, LEASE, far),
        Ok(Claim::InFlight(_))
    ));
    assert!(matches!(
        store.claim("done", "fp", 1, LEASE, far),
        Ok(Claim::Completed(_))
    ));
}

#[test]
fn a_huge_grace_saturates_without_panicking() {
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(Duration::MAX);
    let old = claim_new(&mut store, "k", secs(1), t0);
    // Lapsed, kept forever, so it is reclaimed however late the next claim comes.
    let far = t0 + secs(100 * 365 * 86_400);
    assert_eq!(store.next_expiry(), None);
    assert!(store.get("k", far).is_some());
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, far),
        Ok(Claim::Reclaimed(_))
    ));
    assert!(!store.complete("k", &old, ok("late"), TTL, far));
}

// ---- rule 3: complete and fencing ----

#[test]
fn complete_refuses_a_wrong_token() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    let forged = ClaimToken::from_bytes([7; 16]);
    assert_ne!(forged, token);

    assert!(!store.complete("k", &forged, ok("forged"), TTL, t0));
    assert_eq!(store.get("k", t0).unwrap().state(), State::Claimed);
    assert!(!store.complete("missing", &token, ok("x"), TTL, t0));
    assert!(store.get("missing", t0).is_none());
}

#[test]
fn complete_refuses_the_stale_token_after_a_reclaim() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let old = claim_new(&mut store, "k", LEASE, t0);
    let later = t0 + LEASE + secs(1);
    let Ok(Claim::Reclaimed(new)) = store.claim("k", "fp", 1, LEASE, later) else {
        panic!("expected a reclaim");
    };

    assert!(!store.complete("k", &old, ok("late"), TTL, later));
    assert!(!store.release("k", &old, later));
    assert!(!store.renew("k", &old, LEASE, later));
    let record = store.get("k", later).unwrap();
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &new);

    assert!(store.complete("k", &new, ok("fresh"), TTL, later));
    assert_eq!(
        store.get("k", later).unwrap().response().unwrap().body,
        "fresh"
    );
}

#[test]
fn a_second_complete_is_refused_and_changes_nothing() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    assert!(store.complete("k", &token, ok("first"), secs(10), t0));

    assert!(!store.complete("k", &token, ok("second"), TTL, t0 + secs(1)));
    let record = store.get("k", t0 + secs(1)).unwrap();
    assert_eq!(record.response().unwrap().body, "first");
    assert_eq!(record.completed_at(), Some(t0));
    assert_eq!(record.expires_at(), Some(t0 + secs(10)));
}

#[test]
fn complete_after_the_lease_lapsed_succeeds_while_nobody_reclaimed() {
    let t0 = Instant::now();
    let grace = secs(60);
    let mut store = Store::new().with_reclaim_grace(grace);
    let token = claim_new(&mut store, "k", LEASE, t0);
    // At the last instant of the grace.
    let late = t0 + LEASE + grace;

    assert!(store.complete("k", &token, ok("late but fine"), secs(5), late));
    let record = store.get("k", late).unwrap();
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.completed_at(), Some(late));
    assert_eq!(record.expires_at(), Some(late + secs(5)));
}

#[test]
fn complete_after_the_grace_fails() {
    let t0 = Instant::now();
    let grace = secs(60);
    let mut store = Store::new().with_reclaim_grace(grace);
    let token = claim_new(&mut store, "k", LEASE, t0);
    let too_late = t0 + LEASE + grace + NS;

    assert!(!store.complete("k", &token, ok("too late"), TTL, too_late));
    assert!(store.get("k", too_late).is_none());
    // The key is simply free now: a new claim, not a reclaim.
    claim_new(&mut store, "k", LEASE, too_late);
}

// ---- rules 4 and 5: release and renew ----

#[test]
fn release_removes_only_a_claim_held_by_its_token() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);

    assert!(!store.release("k", &ClaimToken::from_bytes([1; 16]), t0));
    assert!(!store.release("other", &token, t0));
    assert_eq!(store.len(), 1);
    assert!(store.release("k", &token, t0));
    assert_eq!(store.len(), 0);
    assert!(store.get("k", t0).is_none());
    assert!(
        !store.release("k", &token, t0),
        "a second release finds nothing"
    );
    assert!(!store.complete("k", &token, ok("x"), TTL, t0));
    claim_new(&mut store, "k", LEASE, t0);
}

#[test]
fn release_never_removes_a_completed_record() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    assert!(store.complete("k", &token, ok("kept"), TTL, t0));

    assert!(!store.release("k", &token, t0));
    assert_eq!(store.get("k", t0).unwrap().response().unwrap().body, "kept");
}

#[test]
fn release_judges_the_grace_by_its_own_instant() {
    let t0 = Instant::now();
    let grace = secs(10);
    let mut store = Store::new().with_reclaim_grace(grace);

    // Lapsed at t0 + 5 s; at the grace's final instant it is still releasable.
    let token = claim_new(&mut store, "k", secs(5), t0);
    let grace_end = t0 + secs(15);
    assert!(store.release("k", &token, grace_end));

    // Claimed again; one nanosecond past the grace it is gone, even though nothing
    // purged it yet.
    let token = claim_new(&mut store, "k", secs(5), grace_end);
    let past_grace = grace_end + secs(15) + NS;
    assert!(
        !store.release("k", &token, past_grace),
        "a claim past its grace is gone"
    );
    assert_eq!(
        store.len(),
        1,
        "the lapsed claim is not purged by a refused release"
    );
    assert!(store.get("k", past_grace).is_none());
}

#[test]
fn release_of_a_lapsed_claim_within_the_grace_succeeds() {
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(secs(10));
    let token = claim_new(&mut store, "k", secs(5), t0);
    assert!(store.release("k", &token, t0 + secs(7)));
    assert!(store.is_empty());
}

#[test]
fn renew_extends_a_lease_past_its_old_end() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", secs(10), t0);

    assert!(store.renew("k", &token, secs(10), t0 + secs(8)));
    let record = store.get("k", t0).unwrap();
    assert_eq!(record.lease_until(), t0 + secs(18));
    assert_eq!(record.claimed_at(), t0, "renew keeps the claim's start");

    // Past the old end, within the new one: still in flight.
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, t0 + secs(15)),
        Ok(Claim::InFlight(_))
    ));
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, t0 + secs(18) + NS),
        Ok(Claim::Reclaimed(_))
    ));
}

#[test]
fn renew_can_shorten_a_lease() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", secs(100), t0);
    assert!(store.renew("k", &token, secs(1), t0));
    assert_eq!(store.get("k", t0).unwrap().lease_until(), t0 + secs(1));
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, t0 + secs(2)),
        Ok(Claim::Reclaimed(_))
    ));
}

#[test]
fn renew_refuses_wrong_tokens_and_never_touches_a_completed_record() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    assert!(!store.renew("k", &ClaimToken::from_bytes([3; 16]), TTL, t0));
    assert!(!store.renew("missing", &token, TTL, t0));
    assert_eq!(store.get("k", t0).unwrap().lease_until(), t0 + LEASE);

    assert!(store.complete("k", &token, ok("done"), secs(10), t0));
    assert!(!store.renew("k", &token, TTL, t0 + secs(1)));
    let record = store.get("k", t0 + secs(1)).unwrap();
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.expires_at(), Some(t0 + secs(10)));
    assert_eq!(record.lease_until(), t0 + secs(10));
}

#[test]
fn renew_after_the_grace_fails() {
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(secs(2));
    let token = claim_new(&mut store, "k", secs(1), t0);
    // Within the grace the claim is still the caller's, so renewing revives it.
    assert!(store.renew("k", &token, secs(1), t0 + secs(3)));
    assert!(!store.renew("k", &token, secs(1), t0 + secs(6) + NS));
}

// ---- rule 3 and 6: TTL from completion, never reset by reads ----

#[test]
fn the_ttl_counts_from_completion_and_reads_do_not_reset_it() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    let done = t0 + secs(20);
    assert!(store.complete("k", &token, ok("x"), secs(10), done));

    // Read it over and over, right up to the expiry.
    for offset in [0, 1, 5, 9, 10] {
        let now = done + secs(offset);
        assert!(store.get("k", now).is_some());
        assert!(matches!(
            store.claim("k", "fp", 1, LEASE, now),
            Ok(Claim::Completed(_))
        ));
    }
    assert_eq!(
        store.get("k", done).unwrap().expires_at(),
        Some(done + secs(10))
    );
    assert!(store.get("k", done + secs(10) + NS).is_none());
    assert_eq!(store.purge_expired(done + secs(10) + NS), 1);
}

// ---- rule 7: the reclaim grace ----

#[test]
fn a_lapsed_claim_is_kept_for_the_grace_and_then_dropped() {
    let t0 = Instant::now();
    let grace = secs(5);
    let mut store = Store::new().with_reclaim_grace(grace);
    assert_eq!(store.reclaim_grace(), grace);
    claim_new(&mut store, "k", secs(10), t0);
    let lapsed = t0 + secs(10) + NS;
    let grace_end = t0 + secs(10) + grace;

    assert!(store.get("k", lapsed).is_some());
    assert!(store.get("k", grace_end).is_some());
    assert_eq!(store.purge_expired(grace_end), 0);
    assert_eq!(store.len(), 1);
    // Past the grace it is invisible before being purged, then purged.
    assert!(store.get("k", grace_end + NS).is_none());
    assert_eq!(store.len(), 1, "len counts records not purged yet");
    assert_eq!(store.purge_expired(grace_end + NS), 1);
    assert!(store.is_empty());
}

#[test]
fn a_claim_past_the_grace_is_new_not_reclaimed() {
    let t0 = Instant::now();
    let grace = secs(5);
    let mut store = Store::new().with_reclaim_grace(grace);
    let old = claim_new(&mut store, "k", secs(10), t0);
    let grace_end = t0 + secs(10) + grace;

    let mut within = Store::new().with_reclaim_grace(grace);
    claim_new(&mut within, "k", secs(10), t0);
    assert!(matches!(
        within.claim("k", "fp", 1, LEASE, grace_end),
        Ok(Claim::Reclaimed(_))
    ));

    let new = claim_new(&mut store, "k", LEASE, grace_end + NS);
    assert_ne!(new, old);
    assert_eq!(store.len(), 1);
}

/// Fills the store with `n` completed records that expire at `t0 + 1 s`, before anything
/// a test cares about: a claim purges only a couple of due records on its way, so these
/// keep the records under test in the store, expired but not yet purged.
fn bury_under_expired(store: &mut Store, n: usize, t0: Instant) {
    for i in 0..n {
        let key = format!("filler-{i}");
        let token = claim_new(store, &key, LEASE, t0);
        assert!(store.complete(&key, &token, ok("filler"), secs(1), t0));
    }
}

#[test]
fn a_lapsed_claim_past_the_grace_is_absent_before_it_is_purged() {
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(secs(5));
    bury_under_expired(&mut store, 6, t0);
    let old = claim_new(&mut store, "k", secs(10), t0);
    let gone = t0 + secs(15) + NS;

    assert!(store.get("k", gone).is_none());
    assert!(!store.complete("k", &old, ok("late"), TTL, gone));
    assert!(!store.renew("k", &old, LEASE, gone));
    assert!(!store.release("k", &old, gone));
    let new = claim_new(&mut store, "k", LEASE, gone);
    assert_ne!(new, old);
    assert_eq!(store.get("k", gone).unwrap().claimed_at(), gone);
}

#[test]
fn an_expired_result_is_absent_before_it_is_purged() {
    let t0 = Instant::now();
    let mut store = Store::new();
    bury_under_expired(&mut store, 6, t0);
    let token = claim_new(&mut store, "k", LEASE, t0);
    assert!(store.complete("k", &token, ok("old"), secs(10), t0));
    let expired = t0 + secs(10) + NS;

    assert!(store.get("k", expired).is_none());
    assert!(store.len() > 1, "the expired records are still held");
    assert!(!store.complete("k", &token, ok("again"), TTL, expired));
    claim_new(&mut store, "k", LEASE, expired);
    assert_eq!(store.get("k", expired).unwrap().state(), State::Claimed);
}

#[test]
fn release_judges_by_the_instant_it_is_given_even_an_earlier_one() {
    // A caller may hand in an instant older than one it handed in before (another
    // thread's reading of the clock): the release is judged at the instant given.
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(secs(10));
    let token = claim_new(&mut store, "k", secs(5), t0);
    let stranger = ClaimToken::from_bytes([9; 16]);
    assert!(!store.renew("unrelated", &stranger, LEASE, t0 + secs(15) + NS));
    assert!(store.release("k", &token, t0 + secs(1)));
}

#[test]
fn the_default_grace_is_sixty_seconds() {
    let t0 = Instant::now();
    let mut store = Store::new();
    assert_eq!(store.reclaim_grace(), secs(60));
    assert_eq!(Store::DEFAULT_RECLAIM_GRACE, secs(60));
    claim_new(&mut store, "k", secs(1), t0);
    assert!(store.get("k", t0 + secs(61)).is_some());
    assert!(store.get("k", t0 + secs(61) + NS).is_none());
}

#[test]
fn a_zero_grace_drops_a_claim_as_soon_as_it_lapses() {
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(Duration::ZERO);
    claim_new(&mut store, "k", secs(1), t0);
    // At the lease's end it is live; one nanosecond later it is gone, not reclaimable.
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, t0 + secs(1)),
        Ok(Claim::InFlight(_))
    ));
    claim_new(&mut store, "k", LEASE, t0 + secs(1) + NS);
}

#[test]
fn a_grace_set_on_a_store_holding_claims_applies_to_them_and_they_are_purged() {
    let t0 = Instant::now();
    let mut store = Store::new();
    claim_new(&mut store, "short", secs(1), t0);
    claim_new(&mut store, "long", secs(100), t0);
    // Shortened from the default 60 s to none, and lengthened to 500 s.
    let mut store = store.with_reclaim_grace(Duration::ZERO);
    assert_eq!(store.next_expiry(), Some(t0 + secs(1) + NS));
    assert_eq!(store.purge_expired(t0 + secs(2)), 1);
    let mut store = store.with_reclaim_grace(secs(500));
    assert_eq!(store.next_expiry(), Some(t0 + secs(600) + NS));
    assert_eq!(store.purge_expired(t0 + secs(599)), 0);
    assert_eq!(store.purge_expired(t0 + secs(601)), 1);
    assert!(store.is_empty());
}

// ---- rule 8: purge_expired, len and next_expiry ----

#[test]
fn purge_expired_drops_exactly_what_expired_and_counts_it() {
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(secs(5));
    for (key, ttl) in [("a", 1), ("b", 2), ("c", 3)] {
        let token = claim_new(&mut store, key, LEASE, t0);
        assert!(store.complete(key, &token, ok(key), secs(ttl), t0));
    }
    claim_new(&mut store, "lease", secs(1), t0); // gone after 1 s + 5 s of grace
    claim_new(&mut store, "forever", Duration::MAX, t0);
    assert_eq!(store.len(), 5);

    assert_eq!(store.purge_expired(t0 + secs(1)), 0);
    assert_eq!(store.purge_expired(t0 + secs(2)), 1);
    assert_eq!(store.len(), 4);
    assert_eq!(store.purge_expired(t0 + secs(4)), 2);
    assert_eq!(store.len(), 2);
    assert!(store.get("lease", t0 + secs(4)).is_some());
    assert_eq!(store.purge_expired(t0 + secs(6) + NS), 1);
    assert_eq!(store.len(), 1);
    assert_eq!(store.purge_expired(t0 + secs(1_000_000)), 0);
    assert_eq!(store.len(), 1);
    assert!(store.get("forever", t0 + secs(1_000_000)).is_some());
}

#[test]
fn len_counts_expired_records_until_they_are_purged() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    assert!(store.complete("k", &token, ok("x"), secs(1), t0));
    let later = t0 + secs(5);
    assert!(store.get("k", later).is_none());
    assert_eq!(store.len(), 1);
    assert!(!store.is_empty());
    assert_eq!(store.purge_expired(later), 1);
    assert_eq!(store.len(), 0);
    assert!(store.is_empty());
}

#[test]
fn next_expiry_is_one_nanosecond_past_the_earliest_deadline() {
    let t0 = Instant::now();
    let grace = secs(7);
    let mut store = Store::new().with_reclaim_grace(grace);
    assert_eq!(
        store.next_expiry(),
        None,
        "an empty store has nothing to do"
    );

    let a = claim_new(&mut store, "a", secs(100), t0);
    assert_eq!(store.next_expiry(), Some(t0 + secs(100) + grace + NS));

    let b = claim_new(&mut store, "b", LEASE, t0);
    assert!(store.complete("b", &b, ok("b"), secs(20), t0 + secs(1)));
    assert_eq!(store.next_expiry(), Some(t0 + secs(21) + NS));

    // Nothing is dropped at next_expiry - 1ns; something is at next_expiry.
    let next = store.next_expiry().unwrap();
    assert_eq!(store.purge_expired(next - NS), 0);
    assert_eq!(store.purge_expired(next), 1);
    assert_eq!(store.next_expiry(), Some(t0 + secs(100) + grace + NS));

    // Completing "a" moves its deadline to its expiry.
    assert!(store.complete("a", &a, ok("a"), secs(500), t0 + secs(30)));
    assert_eq!(store.next_expiry(), Some(t0 + secs(530) + NS));
    assert!(!store.renew("a", &a, TTL, t0 + secs(31)));
    assert_eq!(store.purge_expired(t0 + secs(530) + NS), 1);
    assert_eq!(store.next_expiry(), None);
}

#[test]
fn next_expiry_follows_renewals_and_releases() {
    let t0 = Instant::now();
    let grace = secs(2);
    let mut store = Store::new().with_reclaim_grace(grace);
    let a = claim_new(&mut store, "a", secs(10), t0);
    let b = claim_new(&mut store, "b", secs(20), t0);
    assert_eq!(store.next_expiry(), Some(t0 + secs(12) + NS));

    assert!(store.renew("a", &a, secs(30), t0 + secs(5)));
    assert_eq!(store.next_expiry(), Some(t0 + secs(22) + NS));
    assert!(store.release("b", &b, t0 + secs(5)));
    assert_eq!(store.next_expiry(), Some(t0 + secs(37) + NS));
    assert!(store.release("a", &a, t0 + secs(5)));
    assert_eq!(store.next_expiry(), None);
}

#[test]
fn a_claim_drops_expired_records_on_its_way() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "old", LEASE, t0);
    assert!(store.complete("old", &token, ok("x"), secs(1), t0));
    claim_new(&mut store, "new", LEASE, t0 + secs(2));
    assert_eq!(store.len(), 1, "the claim purged the expired record");
    assert_eq!(
        store.next_expiry(),
        Some(t0 + secs(2) + LEASE + secs(60) + NS)
    );
}

// ---- rule 10: replay shares the stored body ----

#[test]
fn every_replay_shares_the_one_stored_response() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    let body = vec![0xa5; 1 << 20];
    assert!(store.complete("k", &token, Response::new(200, body.clone()), TTL, t0));

    let replay = |store: &mut Store| -> Record {
        match store.claim("k", "fp", 1, LEASE, t0 + secs(1)) {
            Ok(Claim::Completed(record)) => record,
            other => panic!("expected a replay, got {other:?}"),
        }
    };
    let first = replay(&mut store);
    let second = replay(&mut store);
    let got = store.get("k", t0 + secs(1)).unwrap().clone();

    let shared = first.shared_response().unwrap();
    assert!(Arc::ptr_eq(shared, second.shared_response().unwrap()));
    assert!(Arc::ptr_eq(shared, got.shared_response().unwrap()));
    assert!(std::ptr::eq(
        first.response().unwrap(),
        Arc::as_ptr(second.shared_response().unwrap())
    ));
    assert_eq!(shared.body, body);
}

// ---- accessors ----

#[test]
fn claim_accessors_give_the_token_or_the_record() {
    let t0 = Instant::now();
    let mut store = Store::new();

    let new = store.claim("k", "fp", 1, LEASE, t0).unwrap();
    let token = new.token().expect("New has a token").clone();
    assert!(new.record().is_none());

    let in_flight = store.claim("k", "fp", 1, LEASE, t0).unwrap();
    assert!(in_flight.token().is_none());
    assert_eq!(in_flight.record().unwrap().claim_token(), &token);

    let reclaimed = store.claim("k", "fp", 1, LEASE, t0 + LEASE + NS).unwrap();
    assert!(matches!(reclaimed, Claim::Reclaimed(_)));
    assert!(reclaimed.record().is_none());
    let token = reclaimed.token().expect("Reclaimed has a token").clone();

    assert!(store.complete("k", &token, ok("x"), TTL, t0 + LEASE + NS));
    let completed = store.claim("k", "fp", 1, LEASE, t0 + LEASE + NS).unwrap();
    assert!(completed.token().is_none());
    assert_eq!(completed.record().unwrap().state(), State::Completed);
    assert_eq!(completed.record().unwrap().claim_token(), &token);
}

#[test]
fn record_accessors_while_claimed_and_once_completed() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "key-1", LEASE, t0);
    {
        let claimed = store.get("key-1", t0).unwrap();
        assert_eq!(claimed.completed_at(), None);
        assert_eq!(claimed.expires_at(), None);
        assert!(claimed.response().is_none());
    }
    let done = t0 + secs(4);
    assert!(store.complete("key-1", &token, ok("x"), secs(9), done));
    let completed = store.get("key-1", done).unwrap();
    assert_eq!(completed.key(), "key-1");
    assert_eq!(completed.state(), State::Completed);
    assert_eq!(completed.claimed_at(), t0);
    assert_eq!(completed.completed_at(), Some(done));
    assert_eq!(completed.expires_at(), Some(done + secs(9)));
    assert_eq!(Some(completed.lease_until()), completed.expires_at());
    assert_eq!(completed.response().unwrap(), &ok("x"));
}

#[test]
fn keys_and_fingerprints_are_kept_apart_exactly() {
    // The record stores key and fingerprint together; their boundary must survive.
    let t0 = Instant::now();
    let mut store = Store::new();
    claim_new(&mut store, "ab", LEASE, t0);
    let claim = store.claim("a", "bfp", 3, LEASE, t0).unwrap();
    assert!(matches!(claim, Claim::New(_)), "{claim:?}");
    let record = store.get("a", t0).unwrap();
    assert_eq!(record.key(), "a");
    assert_eq!(record.fingerprint(), "bfp");
    assert_eq!(store.get("ab", t0).unwrap().fingerprint(), "fp");
    claim_new(&mut store, "", LEASE, t0);
    assert_eq!(store.get("", t0).unwrap().key(), "");
    claim_new(&mut store, "ключ-🔑", LEASE, t0);
    assert_eq!(store.get("ключ-🔑", t0).unwrap().key(), "ключ-🔑");
}

#[test]
fn instants_before_the_first_one_seen_work_too() {
    // A store counts from the first instant it is given; earlier ones are exact.
    let t0 = Instant::now();
    let mut store = Store::new();
    let Some(earlier) = t0.checked_sub(secs(3600)) else {
        return; // the platform's clock starts too recently to go an hour back
    };
    let token = claim_new(&mut store, "k", LEASE, earlier);
    let record = store.get("k", earlier).unwrap();
    assert_eq!(record.claimed_at(), earlier);
    assert_eq!(record.lease_until(), earlier + LEASE);
    // Its lease and grace ended long before t0: the key is free again.
    let new = claim_new(&mut store, "k", LEASE, t0);
    assert_ne!(new, token);
    assert!(!store.complete("k", &token, ok("x"), TTL, t0));
}

#[test]
fn a_store_is_send_and_default() {
    fn send<T: Send>() {}
    send::<Store>();
    let store = Store::default();
    assert!(store.is_empty());
    assert_eq!(store.max_size(), Store::DEFAULT_MAX_SIZE);
    assert_eq!(Store::DEFAULT_MAX_SIZE, 10_000);
    assert_eq!(store.reclaim_grace(), Store::DEFAULT_RECLAIM_GRACE);
    assert_eq!(store.next_expiry(), None);
}

#[test]
fn a_store_filled_to_the_default_capacity_refuses_the_next_key() {
    let t0 = Instant::now();
    let mut store = Store::new();
    for i in 0..Store::DEFAULT_MAX_SIZE {
        claim_new(&mut store, &format!("k{i}"), LEASE, t0);
    }
    assert_eq!(store.len(), 10_000);
    assert!(matches!(
        store.claim("one-more", "fp", 1, LEASE, t0),
        Err(Error::Full { max_size: 10_000 })
    ));
}

// ---- time: each store reads instants on its own timeline ----

const YEAR: Duration = Duration::from_secs(365 * 86_400);

#[test]
fn instants_beyond_292_years_of_the_first_one_are_clamped_to_that_limit() {
    let t0 = Instant::now();
    let mut store = Store::new().with_reclaim_grace(Duration::ZERO);
    let token = claim_new(&mut store, "k", LEASE, t0);
    let done = claim_new(&mut store, "done", LEASE, t0);
    assert!(store.complete("done", &done, ok("r"), TTL, t0));
    let Some(far) = t0.checked_add(300 * YEAR) else {
        return;
    };
    // 300 years on acts as 292: every lease and result of the present is long gone.
    assert!(store.get("k", far).is_none());
    assert!(store.get("done", far).is_none());
    let new = claim_new(&mut store, "k", LEASE, far);
    assert_ne!(new, token);
    assert!(!store.complete("k", &token, ok("late"), TTL, far));
    // A never-ending lease taken there still never ends.
    let held = claim_new(&mut store, "held", Duration::MAX, far);
    assert!(matches!(
        store.claim("held", "fp", 1, LEASE, far + YEAR),
        Ok(Claim::InFlight(_))
    ));
    assert!(store.renew("held", &held, Duration::MAX, far + YEAR));
}

#[test]
fn instants_far_behind_the_first_one_see_the_present_as_live() {
    let t0 = Instant::now();
    let mut store = Store::new();
    claim_new(&mut store, "k", LEASE, t0);
    let Some(long_ago) = t0.checked_sub(300 * YEAR) else {
        return; // the platform's clock does not reach that far back
    };
    // Clamped to 292 years back: the lease taken at t0 is live then.
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, long_ago),
        Ok(Claim::InFlight(_))
    ));
    assert!(store.get("k", long_ago).is_some());
}
