//! [`Record`]: one key's record as a backend hands it out, and its [`State`].

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::response::Response;
use crate::token::ClaimToken;

/// Where a record is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// An executor holds the key and is running the operation.
    Claimed,
    /// The operation finished; its response is replayed until the record expires.
    Completed,
}

/// One key's record: who claimed it, until when, and once completed, the response.
///
/// A `Record` is a plain value, a snapshot of what a store held when it answered. A
/// completed record shares the stored response (an [`Arc`]) instead of copying it.
/// Backends written outside this crate build records with [`Record::claimed`] and
/// [`Record::into_completed`]:
///
/// ```
/// use std::time::{Duration, Instant};
/// use idemkit_core::{ClaimToken, Record, Response, State};
///
/// let token = ClaimToken::from_bytes([7; 16]);
/// let claimed_at = Instant::now();
/// let record = Record::claimed("order-17", "fp", 1, token, claimed_at, claimed_at + Duration::from_secs(30));
/// assert_eq!(record.state(), State::Claimed);
///
/// let done = claimed_at + Duration::from_secs(2);
/// let record = record.into_completed(done, done + Duration::from_secs(3600), Response::new(201, "created"));
/// assert_eq!(record.state(), State::Completed);
/// assert_eq!(record.lease_until(), done + Duration::from_secs(3600));
/// assert_eq!(record.response().unwrap().status, 201);
/// ```
#[derive(Clone)]
pub struct Record {
    /// The key followed by the fingerprint: one allocation for both.
    names: Box<str>,
    key_len: usize,
    fingerprint_version: u32,
    claim_token: ClaimToken,
    claimed_at: Instant,
    /// The end of the lease while claimed; the expiry once completed.
    lease_until: Instant,
    completion: Option<Completion>,
}

/// What a completed record adds.
#[derive(Clone)]
struct Completion {
    completed_at: Instant,
    response: Arc<Response>,
}

impl Record {
    /// A claimed record: `claim_token` holds `key` for the request `fingerprint`
    /// (scheme `fingerprint_version`), claimed at `claimed_at`, its lease live while
    /// `now <= lease_until`.
    pub fn claimed(
        key: impl Into<String>,
        fingerprint: impl AsRef<str>,
        fingerprint_version: u32,
        claim_token: ClaimToken,
        claimed_at: Instant,
        lease_until: Instant,
    ) -> Record {
        let mut names = key.into();
        let key_len = names.len();
        names.push_str(fingerprint.as_ref());
        Record::from_names(
            names.into_boxed_str(),
            key_len,
            fingerprint_version,
            claim_token,
            claimed_at,
            lease_until,
        )
    }

    /// A claimed record whose key and fingerprint are `names`, split at `key_len`.
    pub(crate) fn from_names(
        names: Box<str>,
        key_len: usize,
        fingerprint_version: u32,
        claim_token: ClaimToken,
        claimed_at: Instant,
        lease_until: Instant,
    ) -> Record {
        Record {
            names,
            key_len,
            fingerprint_version,
            claim_token,
            claimed_at,
            lease_until,
            completion: None,
        }
    }

    /// This record, completed at `completed_at` with `response`, replayed until
    /// `expires_at` (inclusive). [`Record::lease_until`] becomes `expires_at`, as a
    /// completed record has no lease.
    #[must_use]
    pub fn into_completed(
        mut self,
        completed_at: Instant,
        expires_at: Instant,
        response: impl Into<Arc<Response>>,
    ) -> Record {
        self.lease_until = expires_at;
        self.completion = Some(Completion {
            completed_at,
            response: response.into(),
        });
        self
    }

    /// The key this record belongs to.
    pub fn key(&self) -> &str {
        &self.names[..self.key_len]
    }

    /// The fingerprint of the request that claimed the key.
    pub fn fingerprint(&self) -> &str {
        &self.names[self.key_len..]
    }

    /// The version of the fingerprint scheme that produced [`Record::fingerprint`].
    pub fn fingerprint_version(&self) -> u32 {
        self.fingerprint_version
    }

    /// The token of the claim that wrote this record.
    pub fn claim_token(&self) -> &ClaimToken {
        &self.claim_token
    }

    /// Claimed or completed.
    pub fn state(&self) -> State {
        if self.completion.is_some() {
            State::Completed
        } else {
            State::Claimed
        }
    }

    /// When the key was claimed.
    pub fn claimed_at(&self) -> Instant {
        self.claimed_at
    }

    /// While claimed, the end of the lease: live while `now <= lease_until`. Once
    /// completed, the same instant as [`Record::expires_at`].
    pub fn lease_until(&self) -> Instant {
        self.lease_until
    }

    /// When the operation completed; `None` while claimed.
    pub fn completed_at(&self) -> Option<Instant> {
        self.completion.as_ref().map(|done| done.completed_at)
    }

    /// Until when a completed record is replayed (inclusive); `None` while claimed.
    pub fn expires_at(&self) -> Option<Instant> {
        self.completion.as_ref().map(|_| self.lease_until)
    }

    /// The stored response; `None` while claimed.
    pub fn response(&self) -> Option<&Response> {
        self.shared_response().map(Arc::as_ref)
    }

    /// The stored response as the shared allocation every replay hands out.
    pub fn shared_response(&self) -> Option<&Arc<Response>> {
        self.completion.as_ref().map(|done| &done.response)
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("key", &self.key())
            .field("state", &self.state())
            .field("fingerprint", &self.fingerprint())
            .field("fingerprint_version", &self.fingerprint_version)
            .field("claim_token", &self.claim_token)
            .field("claimed_at", &self.claimed_at)
            .field("lease_until", &self.lease_until)
            .field("completed_at", &self.completed_at())
            .field("response", &self.response())
            .finish()
    }
}
