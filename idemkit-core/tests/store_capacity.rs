//! `Store` rule by rule, part of them: the capacity: a full store refuses new keys, never the ones it holds, and frees slots as records leave. Every test picks `t0`
//! and moves time only by adding durations to it, so nothing sleeps or depends on the
//! machine's speed.

#[path = "support/store.rs"]
mod support;

use std::time::{Duration, Instant};

use idemkit_core::{Claim, Error, Store};
use support::*;

// ---- capacity ----

#[test]
fn a_full_store_refuses_a_new_key() {
    let t0 = Instant::now();
    let mut store = Store::builder().max_size(2).build().unwrap();
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
    let mut store = Store::builder().max_size(2).build().unwrap();
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
    let mut store = Store::builder().max_size(2).build().unwrap();
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
    let mut store = Store::builder()
        .max_size(2)
        .reclaim_grace(grace)
        .build()
        .unwrap();
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
    let mut store = Store::builder()
        .max_size(2)
        .reclaim_grace(Duration::ZERO)
        .build()
        .unwrap();
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
    let mut store = Store::builder().max_size(1).build().unwrap();
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
    let mut store = Store::builder().max_size(0).build().unwrap();
    assert!(matches!(
        store.claim("a", "fp", 1, LEASE, t0),
        Err(Error::Full { max_size: 0 })
    ));
    assert!(store.is_empty());
}
