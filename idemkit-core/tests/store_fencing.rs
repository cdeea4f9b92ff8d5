//! `Store` rule by rule, part of them: fencing: complete, release and renew act only for the token that holds the claim. Every test picks `t0`
//! and moves time only by adding durations to it, so nothing sleeps or depends on the
//! machine's speed.

#[path = "support/store.rs"]
mod support;

use std::time::Instant;

use idemkit_core::{Claim, ClaimToken, State, Store};
use support::*;

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
    let mut store = Store::builder().reclaim_grace(grace).build().unwrap();
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
    let mut store = Store::builder().reclaim_grace(grace).build().unwrap();
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
    let mut store = Store::builder().reclaim_grace(grace).build().unwrap();

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
    let mut store = Store::builder().reclaim_grace(secs(10)).build().unwrap();
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
    let mut store = Store::builder().reclaim_grace(secs(2)).build().unwrap();
    let token = claim_new(&mut store, "k", secs(1), t0);
    // Within the grace the claim is still the caller's, so renewing revives it.
    assert!(store.renew("k", &token, secs(1), t0 + secs(3)));
    assert!(!store.renew("k", &token, secs(1), t0 + secs(6) + NS));
}
