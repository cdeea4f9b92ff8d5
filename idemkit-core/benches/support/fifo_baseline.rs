//! The baseline of the steady-state figures: the plain store of `baseline.rs` plus the
//! least correct expiry there is.
//!
//! One `parking_lot::Mutex` around a std `HashMap<String, Record>` and a FIFO of
//! (deadline, key) pairs, pushed by each completion. Each claim, under the lock, first
//! pops the FIFO's front while it is due and removes that key from the map (without
//! checking that the record there is the one the deadline was written for: that is what
//! makes it the *least* correct expiry; with one TTL per store it is also exact), then
//! inserts the new record. The FIFO holds its own copy of each key, as the map owns the
//! other.
//!
//! A claim draws its 16-byte token with one `getrandom::fill` call ([`Tokens::PerClaim`],
//! the baseline proper), or from a private 4 KiB buffer of OS randomness
//! ([`Tokens::Buffered`], what `idemkit` does; the machine's ceiling uses it so that it
//! does the same work as the backend it is compared with).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use idemkit_core::Response;
use parking_lot::Mutex;

use super::baseline::{Claim, Record, insert_claim, store_response};

/// How a claim draws its token's 16 bytes from the OS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tokens {
    /// One `getrandom::fill` of 16 bytes per claim.
    PerClaim,
    /// Out of a 4 KiB buffer filled by one `getrandom::fill` every 256 claims.
    Buffered,
    /// Given by the caller with each claim ([`FifoBaseline::claim_complete_now_given`]),
    /// drawn from a [`ThreadTokens`] of the calling thread's own: for a store shared by
    /// threads, whose buffer inside would be a line both threads write.
    Given,
}

/// A thread's own 4 KiB buffer of OS randomness, as the backend keeps one per thread.
pub struct ThreadTokens {
    buffer: Box<[u8; 4096]>,
    used: usize,
}

impl ThreadTokens {
    pub fn new() -> ThreadTokens {
        ThreadTokens {
            buffer: Box::new([0; 4096]),
            used: 4096,
        }
    }

    /// The next 16 bytes, refilling the buffer with one `getrandom::fill` every 256.
    pub fn next(&mut self) -> [u8; 16] {
        if self.used == self.buffer.len() {
            getrandom::fill(&mut self.buffer[..]).expect("the OS random source");
            self.used = 0;
        }
        let mut token = [0; 16];
        token.copy_from_slice(&self.buffer[self.used..self.used + 16]);
        self.used += 16;
        token
    }
}

struct Inner {
    records: HashMap<String, Record>,
    deadlines: VecDeque<(Instant, String)>,
    buffer: Box<[u8; 4096]>,
    used: usize,
}

/// The steady-state baseline store.
pub struct FifoBaseline {
    tokens: Tokens,
    inner: Mutex<Inner>,
}

impl FifoBaseline {
    pub fn new(tokens: Tokens) -> FifoBaseline {
        FifoBaseline {
            tokens,
            inner: Mutex::new(Inner {
                records: HashMap::new(),
                deadlines: VecDeque::new(),
                buffer: Box::new([0; 4096]),
                used: 4096,
            }),
        }
    }

    /// Drops every record whose deadline is before `now` (FIFO order), then claims an
    /// absent key and returns its token; `None` if the key is present.
    pub fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
        now: Instant,
    ) -> Option<[u8; 16]> {
        self.claim_with(
            key,
            fingerprint,
            fingerprint_version,
            lease_ttl,
            now,
            [0; 16],
        )
    }

    /// [`FifoBaseline::claim`], with `token` as the token if this store's tokens are
    /// [`Tokens::Given`] (ignored otherwise).
    fn claim_with(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
        now: Instant,
        given: [u8; 16],
    ) -> Option<[u8; 16]> {
        let mut token = given;
        if self.tokens == Tokens::PerClaim {
            getrandom::fill(&mut token).expect("the OS random source");
        }
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        while let Some((deadline, _)) = inner.deadlines.front() {
            if *deadline >= now {
                break;
            }
            let (_, due) = inner.deadlines.pop_front().expect("a front");
            inner.records.remove(&due);
        }
        if self.tokens == Tokens::Buffered {
            if inner.used == inner.buffer.len() {
                getrandom::fill(&mut inner.buffer[..]).expect("the OS random source");
                inner.used = 0;
            }
            token.copy_from_slice(&inner.buffer[inner.used..inner.used + 16]);
            inner.used += 16;
        }
        let claim = Claim {
            fingerprint,
            fingerprint_version,
            token,
            lease_ttl,
            now,
        };
        insert_claim(&mut inner.records, key, claim)
    }

    /// Stores the response if `token` holds the claimed key, and queues its expiry.
    pub fn complete(
        &self,
        key: &str,
        token: &[u8; 16],
        response: Response,
        expires_after: Duration,
        now: Instant,
    ) -> bool {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        match store_response(&mut inner.records, key, token, response, expires_after, now) {
            Some(expires_at) => {
                inner.deadlines.push_back((expires_at, key.to_owned()));
                true
            }
            None => false,
        }
    }

    /// Records held, expired ones not dropped yet included.
    pub fn len(&self) -> usize {
        self.inner.lock().records.len()
    }

    /// One claim+complete of a fresh key at `now`, its record replayed for `ttl`.
    pub fn claim_complete(&self, key: &str, ttl: Duration, now: Instant) {
        let token = self
            .claim(key, super::FINGERPRINT, 1, super::LEASE, now)
            .expect("key is new");
        let response = Response::new(200, super::BODY);
        assert!(self.complete(key, &token, response, ttl, now));
    }

    /// The same on the system clock, read for the claim and again for the complete, as
    /// a backend does.
    pub fn claim_complete_now(&self, key: &str, ttl: Duration) {
        let token = self
            .claim(key, super::FINGERPRINT, 1, super::LEASE, Instant::now())
            .expect("key is new");
        let response = Response::new(200, super::BODY);
        assert!(self.complete(key, &token, response, ttl, Instant::now()));
    }

    /// [`FifoBaseline::claim_complete_now`] with the claim's token given by the caller
    /// (for a store whose tokens are [`Tokens::Given`]).
    pub fn claim_complete_now_given(&self, key: &str, ttl: Duration, token: [u8; 16]) {
        let token = self
            .claim_with(
                key,
                super::FINGERPRINT,
                1,
                super::LEASE,
                Instant::now(),
                token,
            )
            .expect("key is new");
        let response = Response::new(200, super::BODY);
        assert!(self.complete(key, &token, response, ttl, Instant::now()));
    }
}
