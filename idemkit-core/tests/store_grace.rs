//! `Store` rule by rule, part of them: the reclaim grace: how long a lapsed claim is kept, and what it is once gone. Every test picks `t0`
//! and moves time only by adding durations to it, so nothing sleeps or depends on the
//! machine's speed.

#[path = "support/store.rs"]
mod support;

use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, State, Store};
use support::*;

// ---- rule 7: the reclaim grace ----

#[test]
fn a_lapsed_claim_is_kept_for_the_grace_and_then_dropped() {
    let t0 = Instant::now();
    let grace = secs(5);
    let mut store = Store::builder().reclaim_grace(grace).build().unwrap();
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
    let mut store = Store::builder().reclaim_grace(grace).build().unwrap();
    let old = claim_new(&mut store, "k", secs(10), t0);
    let grace_end = t0 + secs(10) + grace;

    let mut within = Store::builder().reclaim_grace(grace).build().unwrap();
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
    let mut store = Store::builder().reclaim_grace(secs(5)).build().unwrap();
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
    let mut store = Store::builder().reclaim_grace(secs(10)).build().unwrap();
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
    let mut store = Store::builder()
        .reclaim_grace(Duration::ZERO)
        .build()
        .unwrap();
    claim_new(&mut store, "k", secs(1), t0);
    // At the lease's end it is live; one nanosecond later it is gone, not reclaimable.
    assert!(matches!(
        store.claim("k", "fp", 1, LEASE, t0 + secs(1)),
        Ok(Claim::InFlight(_))
    ));
    claim_new(&mut store, "k", LEASE, t0 + secs(1) + NS);
}
