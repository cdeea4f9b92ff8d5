//! The baseline of the first-round figures (BENCHMARKS.md): the least any correct in-memory
//! claim/complete can do.
//!
//! One `parking_lot::Mutex` around a std `HashMap<String, Record>`. A claim of an absent
//! key inserts a record carrying a fresh 16-byte token from one `getrandom::fill` call; a
//! complete checks the token and stores the response in place. There is no expiry index,
//! no capacity accounting and no waiter bookkeeping: the benchmarks remove each record
//! explicitly to keep the number held steady.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::{Duration, Instant};

use idemkit_core::Response;
use parking_lot::Mutex;

/// One key's record, as plainly as it can be kept.
pub struct Record {
    pub fingerprint: String,
    pub fingerprint_version: u32,
    pub token: [u8; 16],
    pub claimed_at: Instant,
    pub lease_until: Instant,
    pub completed_at: Option<Instant>,
    pub response: Option<Response>,
}

/// A claim's fields, as both baselines insert them.
pub struct Claim<'a> {
    pub fingerprint: &'a str,
    pub fingerprint_version: u32,
    pub token: [u8; 16],
    pub lease_ttl: Duration,
    pub now: Instant,
}

/// Inserts `claim` for `key` unless the key is present, and returns its token.
pub fn insert_claim(
    records: &mut HashMap<String, Record>,
    key: &str,
    claim: Claim<'_>,
) -> Option<[u8; 16]> {
    match records.entry(key.to_owned()) {
        Entry::Occupied(_) => None,
        Entry::Vacant(vacant) => {
            vacant.insert(Record {
                fingerprint: claim.fingerprint.to_owned(),
                fingerprint_version: claim.fingerprint_version,
                token: claim.token,
                claimed_at: claim.now,
                lease_until: claim.now + claim.lease_ttl,
                completed_at: None,
                response: None,
            });
            Some(claim.token)
        }
    }
}

/// Stores `response` in `key`'s record if `token` holds its claim, and returns when the
/// record expires; `None` if the token does not hold the key.
pub fn store_response(
    records: &mut HashMap<String, Record>,
    key: &str,
    token: &[u8; 16],
    response: Response,
    expires_after: Duration,
    now: Instant,
) -> Option<Instant> {
    match records.get_mut(key) {
        Some(record) if record.response.is_none() && record.token == *token => {
            let expires_at = now + expires_after;
            record.completed_at = Some(now);
            record.lease_until = expires_at;
            record.response = Some(response);
            Some(expires_at)
        }
        _ => None,
    }
}

/// The baseline store.
#[derive(Default)]
pub struct Baseline {
    records: Mutex<HashMap<String, Record>>,
}

impl Baseline {
    /// Claims an absent key and returns its token; `None` if the key is present (the
    /// benchmarks never claim a present key).
    pub fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
        now: Instant,
    ) -> Option<[u8; 16]> {
        let mut token = [0u8; 16];
        getrandom::fill(&mut token).expect("the OS random source");
        let claim = Claim {
            fingerprint,
            fingerprint_version,
            token,
            lease_ttl,
            now,
        };
        insert_claim(&mut self.records.lock(), key, claim)
    }

    /// Stores the response if `token` holds the claimed key.
    pub fn complete(
        &self,
        key: &str,
        token: &[u8; 16],
        response: Response,
        expires_after: Duration,
        now: Instant,
    ) -> bool {
        store_response(
            &mut self.records.lock(),
            key,
            token,
            response,
            expires_after,
            now,
        )
        .is_some()
    }

    /// Drops the key's record: what the idemkit stores do by expiry.
    pub fn remove(&self, key: &str) -> bool {
        self.records.lock().remove(key).is_some()
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.records.lock().len()
    }

    /// Fills the baseline with `count` completed records (keys as [`super::fill_store`]).
    pub fn fill(&self, count: usize, now: Instant) {
        let mut keys = super::Keys::new("h-", 0);
        for _ in 0..count {
            let key = keys.next_key();
            let token = self
                .claim(key, super::FINGERPRINT, 1, super::LEASE, now)
                .expect("held key is new");
            let body = Response::new(200, super::BODY);
            assert!(self.complete(key, &token, body, super::HELD_TTL, now));
        }
    }

    /// One claim+complete of a fresh key, then its removal, keeping the count steady.
    pub fn claim_complete_remove(&self, key: &str, now: Instant) {
        let token = self
            .claim(key, super::FINGERPRINT, 1, super::LEASE, now)
            .expect("key is new");
        let body = Response::new(200, super::BODY);
        assert!(self.complete(key, &token, body, Duration::ZERO, now));
        assert!(self.remove(key));
    }
}
