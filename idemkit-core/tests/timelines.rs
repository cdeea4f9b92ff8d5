//! Each store reads instants on a timeline of its own: an out-of-range instant given to
//! one store never changes how another reads time.
//!
//! One test in its own binary, so that its far instant is surely the first instant the
//! process hands to any store (a process-wide origin would be set by it).

use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, Response, Store};

const LEASE: Duration = Duration::from_secs(30);
const NS: Duration = Duration::from_nanos(1);
const YEAR: Duration = Duration::from_secs(365 * 86_400);

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ok(body: &str) -> Response {
    Response::new(200, body.to_owned())
}

fn claim_new(store: &mut Store, key: &str, lease: Duration, now: Instant) -> ClaimToken {
    match store.claim(key, "fp", 1, lease, now) {
        Ok(Claim::New(token)) => token,
        other => panic!("expected New for {key:?}, got {other:?}"),
    }
}

#[test]
fn a_far_instant_given_to_one_store_never_changes_another_stores_time() {
    let t0 = Instant::now();
    let Some(far) = t0.checked_add(300 * YEAR) else {
        return; // the platform cannot hold an instant 300 years ahead
    };
    // The first instant this process's first store sees is 300 years ahead.
    let mut future = Store::new();
    claim_new(&mut future, "edge-case", LEASE, far);

    // A store of the present is unaffected: its leases lapse and results expire.
    let mut store = Store::new();
    let token = claim_new(&mut store, "k", secs(10), t0);
    match store.claim("k", "fp", 1, LEASE, t0 + secs(11)) {
        Ok(Claim::Reclaimed(new)) => assert_ne!(new, token),
        other => panic!("the lease should have lapsed, got {other:?}"),
    }
    let done = claim_new(&mut store, "done", LEASE, t0);
    assert!(store.complete("done", &done, ok("r"), secs(5), t0));
    assert!(store.get("done", t0 + secs(5)).is_some());
    assert!(store.get("done", t0 + secs(5) + NS).is_none());
    let record = store.get("k", t0 + secs(11)).unwrap();
    assert_eq!(record.claimed_at(), t0 + secs(11), "instants are exact");
}
