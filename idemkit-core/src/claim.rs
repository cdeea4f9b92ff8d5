//! [`Claim`]: what an attempt to claim a key found, and [`Completed`], what a completed
//! key hands a claim.

use std::sync::Arc;
use std::time::Instant;

use crate::record::Record;
use crate::response::Response;
use crate::token::ClaimToken;

/// What an attempt to claim a key found, and so what the caller should do next.
///
/// Every variant is public, so a backend written outside this crate builds its answers
/// directly (see [`Record::claimed`] for the records it carries, and [`Claim::found`]
/// for the answer to a claim that found a record).
#[must_use = "a claim either grants the right to run or carries a record to act on"]
#[derive(Clone, Debug)]
pub enum Claim {
    /// The key was free: the caller now holds it and should run the operation.
    New(ClaimToken),
    /// The previous holder's lease had lapsed: the caller took the key over with a new
    /// token, and the old token is fenced out.
    Reclaimed(ClaimToken),
    /// Another executor holds a live lease: wait for it, or tell the client to retry.
    InFlight(Record),
    /// The operation already ran: replay its response if it ran for this request
    /// ([`Completed::same_request`]), refuse otherwise.
    Completed(Completed),
}

impl Claim {
    /// What a claim by `fingerprint` (scheme `fingerprint_version`) answers when it finds
    /// `record` live: [`Claim::Completed`] if it is completed (its response shared, the
    /// fingerprints compared), [`Claim::InFlight`] if it is still claimed. For a backend
    /// that reads whole records.
    pub fn found(record: Record, fingerprint: &str, fingerprint_version: u32) -> Claim {
        match Completed::from_record(&record, fingerprint, fingerprint_version) {
            Some(completed) => Claim::Completed(completed),
            None => Claim::InFlight(record),
        }
    }

    /// The caller's token, for [`Claim::New`] and [`Claim::Reclaimed`].
    pub fn token(&self) -> Option<&ClaimToken> {
        match self {
            Claim::New(token) | Claim::Reclaimed(token) => Some(token),
            Claim::InFlight(_) | Claim::Completed(_) => None,
        }
    }

    /// The record of the claim in flight, for [`Claim::InFlight`].
    pub fn record(&self) -> Option<&Record> {
        match self {
            Claim::InFlight(record) => Some(record),
            Claim::New(_) | Claim::Reclaimed(_) | Claim::Completed(_) => None,
        }
    }

    /// What the completed key handed back, for [`Claim::Completed`].
    pub fn completed(&self) -> Option<&Completed> {
        match self {
            Claim::Completed(completed) => Some(completed),
            Claim::New(_) | Claim::Reclaimed(_) | Claim::InFlight(_) => None,
        }
    }
}

/// What a completed key hands a claim: the stored response, shared, and whether it was
/// stored for the claiming request.
///
/// Why not the whole [`Record`]: a replay is the commonest answer a store gives, and a
/// `Record` owns copies of the key and the fingerprint (an allocation) that the claimer
/// already has. The backend compares the stored fingerprint with the claim's instead, and
/// hands back the stored response itself (an `Arc`, a reference count), so an in-memory
/// replay allocates nothing. The key's other particulars that cost no allocation (the
/// token that completed it, when, and until when it is replayed) come along.
///
/// A backend that reads whole records builds one with [`Completed::from_record`]; one
/// that keeps its records otherwise, with [`Completed::new`]:
///
/// ```
/// use std::time::{Duration, Instant};
/// use idemkit_core::{Claim, ClaimToken, Completed, Record, Response};
///
/// let now = Instant::now();
/// let token = ClaimToken::from_bytes([7; 16]);
/// let record = Record::claimed("order-17", "fp", 1, token, now, now + Duration::from_secs(30))
///     .into_completed(now, now + Duration::from_secs(3600), Response::new(201, "created"));
///
/// // A claim of "order-17" with the fingerprint "fp", scheme 1:
/// let claim = Claim::Completed(Completed::from_record(&record, "fp", 1).unwrap());
/// let completed = claim.completed().unwrap();
/// assert!(completed.same_request());
/// assert_eq!(completed.response().body, "created");
///
/// // The same key claimed for another request: never replayed to it.
/// assert!(!Completed::from_record(&record, "other", 1).unwrap().same_request());
/// ```
#[derive(Clone, Debug)]
pub struct Completed {
    response: Arc<Response>,
    same_request: bool,
    claim_token: ClaimToken,
    completed_at: Instant,
    expires_at: Instant,
}

impl Completed {
    /// A completed key's answer: `response` as stored, `same_request` whether the stored
    /// fingerprint and its scheme's version are the claim's, `claim_token` the token that
    /// completed it, at `completed_at`, to be replayed until `expires_at` (inclusive).
    pub fn new(
        response: impl Into<Arc<Response>>,
        same_request: bool,
        claim_token: ClaimToken,
        completed_at: Instant,
        expires_at: Instant,
    ) -> Completed {
        Completed {
            response: response.into(),
            same_request,
            claim_token,
            completed_at,
            expires_at,
        }
    }

    /// A completed `record`'s answer to a claim by `fingerprint` (scheme
    /// `fingerprint_version`), sharing its response; `None` if `record` is still claimed.
    pub fn from_record(
        record: &Record,
        fingerprint: &str,
        fingerprint_version: u32,
    ) -> Option<Completed> {
        let response = record.shared_response()?;
        Some(Completed {
            response: Arc::clone(response),
            same_request: record.fingerprint() == fingerprint
                && record.fingerprint_version() == fingerprint_version,
            claim_token: record.claim_token().clone(),
            completed_at: record.completed_at()?,
            expires_at: record.expires_at()?,
        })
    }

    /// Whether the response was stored for the claiming request (same fingerprint, same
    /// version): only then is it replayed; another request with the key is refused.
    pub fn same_request(&self) -> bool {
        self.same_request
    }

    /// The stored response.
    pub fn response(&self) -> &Response {
        &self.response
    }

    /// The stored response as the shared allocation every replay hands out.
    pub fn shared_response(&self) -> &Arc<Response> {
        &self.response
    }

    /// The stored response as the shared allocation, taken out.
    pub fn into_shared_response(self) -> Arc<Response> {
        self.response
    }

    /// The token of the claim that completed the key.
    pub fn claim_token(&self) -> &ClaimToken {
        &self.claim_token
    }

    /// When the operation completed.
    pub fn completed_at(&self) -> Instant {
        self.completed_at
    }

    /// Until when the response is replayed (inclusive).
    pub fn expires_at(&self) -> Instant {
        self.expires_at
    }
}
