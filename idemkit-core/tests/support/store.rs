//! What the `Store` rule tests share: durations and the helpers every part uses. Each
//! part (`store_*.rs`) uses some of them.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, Response, Store};

pub const LEASE: Duration = Duration::from_secs(30);
pub const TTL: Duration = Duration::from_secs(3600);
pub const NS: Duration = Duration::from_nanos(1);

pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Claims `key` and insists the store hands out a fresh claim.
pub fn claim_new(store: &mut Store, key: &str, lease: Duration, now: Instant) -> ClaimToken {
    match store.claim(key, "fp", 1, lease, now) {
        Ok(Claim::New(token)) => token,
        other => panic!("expected New for {key:?}, got {other:?}"),
    }
}

pub fn ok(body: &str) -> Response {
    Response::new(200, body.to_owned())
}

/// A deadline that `Duration::MAX` saturated to: further out than any test could reach.
pub fn is_never(deadline: Instant, now: Instant) -> bool {
    deadline.saturating_duration_since(now) > secs(100 * 365 * 86_400)
}
