//! `Store` rule by rule, part of them: what a claim finds, the accessors of what it returns, and replays sharing the stored body. Every test picks `t0`
//! and moves time only by adding durations to it, so nothing sleeps or depends on the
//! machine's speed.

#[path = "support/store.rs"]
mod support;

use std::sync::Arc;
use std::time::Instant;

use idemkit_core::{Claim, Completed, Error, Response, State, Store};
use support::*;

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
    let Claim::Completed(replay) = claim else {
        panic!("expected Completed, got {claim:?}");
    };
    assert!(replay.same_request());
    assert_eq!(replay.response(), &response);
    assert_eq!(replay.claim_token(), &token);
    assert_eq!(replay.completed_at(), t0 + secs(2));
    assert_eq!(replay.expires_at(), t0 + secs(2) + TTL);
    let record = store.get("k", t0 + secs(3)).unwrap();
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.claimed_at(), t0);
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

// ---- rule 10: replay shares the stored body ----

#[test]
fn every_replay_shares_the_one_stored_response() {
    let t0 = Instant::now();
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", LEASE, t0);
    let body = vec![0xa5; 1 << 20];
    assert!(store.complete("k", &token, Response::new(200, body.clone()), TTL, t0));

    let replay = |store: &mut Store| -> Completed {
        match store.claim("k", "fp", 1, LEASE, t0 + secs(1)) {
            Ok(Claim::Completed(replay)) => replay,
            other => panic!("expected a replay, got {other:?}"),
        }
    };
    let first = replay(&mut store);
    let second = replay(&mut store);
    let got = store.get("k", t0 + secs(1)).unwrap().clone();

    let shared = first.shared_response();
    assert!(Arc::ptr_eq(shared, second.shared_response()));
    assert!(Arc::ptr_eq(shared, got.shared_response().unwrap()));
    assert!(std::ptr::eq(
        first.response(),
        Arc::as_ptr(second.shared_response())
    ));
    assert_eq!(shared.body, body);
}

// ---- accessors ----

#[test]
fn claim_accessors_give_the_token_the_record_or_the_replay() {
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
    assert!(completed.record().is_none());
    assert_eq!(completed.completed().unwrap().claim_token(), &token);
    assert!(in_flight.completed().is_none() && new.completed().is_none());
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
