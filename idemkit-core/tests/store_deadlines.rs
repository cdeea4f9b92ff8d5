//! `Store` rule by rule, part of them: time: inclusive deadlines, saturation, the TTL from completion, purging and next_expiry, and each store's own timeline. Every test picks `t0`
//! and moves time only by adding durations to it, so nothing sleeps or depends on the
//! machine's speed.

#[path = "support/store.rs"]
mod support;

use std::time::{Duration, Instant};

use idemkit_core::{Claim, Store};
use support::*;

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
    let mut store = Store::builder()
        .reclaim_grace(Duration::MAX)
        .build()
        .unwrap();
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
    let mut store = Store::builder()
        .reclaim_grace(Duration::MAX)
        .build()
        .unwrap();
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

// ---- rule 8: purge_expired, len and next_expiry ----

#[test]
fn purge_expired_drops_exactly_what_expired_and_counts_it() {
    let t0 = Instant::now();
    let mut store = Store::builder().reclaim_grace(secs(5)).build().unwrap();
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
    let mut store = Store::builder().reclaim_grace(grace).build().unwrap();
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
    let mut store = Store::builder().reclaim_grace(grace).build().unwrap();
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

// ---- time: each store reads instants on its own timeline ----

const YEAR: Duration = Duration::from_secs(365 * 86_400);

#[test]
fn instants_beyond_292_years_of_the_first_one_are_clamped_to_that_limit() {
    let t0 = Instant::now();
    let mut store = Store::builder()
        .reclaim_grace(Duration::ZERO)
        .build()
        .unwrap();
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
