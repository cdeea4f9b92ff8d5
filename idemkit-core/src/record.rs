//! What the store keeps per key: [`Record`], its [`State`] and the stored [`Response`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stamp::{Span, Stamp};
use crate::token::ClaimToken;

/// Where a record is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// An executor holds the key and is running the operation.
    Claimed,
    /// The operation finished; its response is replayed until the record expires.
    Completed,
}

/// The result of an operation, as stored and replayed.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Response {
    /// A status code, HTTP-style (the executor caches 2xx by default).
    pub status: u16,
    /// Header name and value pairs, in order.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with this status and body and no headers.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// This response with one more header.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// One key's record: who claimed it, until when, and once completed, the response.
///
/// Records handed out by a store or backend are snapshots; they share the stored
/// response (an [`Arc`]) instead of copying its body.
#[derive(Clone)]
pub struct Record {
    /// The key followed by the fingerprint: one allocation for both.
    names: Box<str>,
    key_len: u32,
    fingerprint_version: u32,
    claim_token: ClaimToken,
    claimed_at: Stamp,
    /// `lease_until` while claimed; `expires_at` once completed (as the reference does).
    deadline: Stamp,
    completed_at: Stamp,
    /// Present exactly when the record is completed.
    response: Option<Arc<Response>>,
}

impl Record {
    /// A fresh claim. The caller checked `key.len()` fits in a `u32`.
    pub(crate) fn claimed(
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        claim_token: ClaimToken,
        now: Stamp,
        lease_ttl: Duration,
    ) -> Record {
        let mut names = String::with_capacity(key.len() + fingerprint.len());
        names.push_str(key);
        names.push_str(fingerprint);
        Record {
            names: names.into_boxed_str(),
            key_len: key.len() as u32,
            fingerprint_version,
            claim_token,
            claimed_at: now,
            deadline: now.saturating_add(lease_ttl),
            completed_at: Stamp::UNSET,
            response: None,
        }
    }

    /// The key this record belongs to.
    pub fn key(&self) -> &str {
        &self.names[..self.key_len as usize]
    }

    /// Claimed or completed.
    pub fn state(&self) -> State {
        if self.response.is_some() {
            State::Completed
        } else {
            State::Claimed
        }
    }

    /// The fingerprint of the request that claimed the key.
    pub fn fingerprint(&self) -> &str {
        &self.names[self.key_len as usize..]
    }

    /// The version of the fingerprint scheme that produced [`Record::fingerprint`].
    pub fn fingerprint_version(&self) -> u32 {
        self.fingerprint_version
    }

    /// The token of the claim that wrote this record.
    pub fn claim_token(&self) -> &ClaimToken {
        &self.claim_token
    }

    /// When the key was claimed.
    pub fn claimed_at(&self) -> Instant {
        self.claimed_at.to_instant()
    }

    /// While claimed, the end of the lease: live while `now <= lease_until`. Once
    /// completed, the same instant as [`Record::expires_at`], as in the reference.
    pub fn lease_until(&self) -> Instant {
        self.deadline.to_instant()
    }

    /// When the operation completed; `None` while claimed.
    pub fn completed_at(&self) -> Option<Instant> {
        self.response
            .as_ref()
            .map(|_| self.completed_at.to_instant())
    }

    /// Until when a completed record is replayed (inclusive); `None` while claimed.
    pub fn expires_at(&self) -> Option<Instant> {
        self.response.as_ref().map(|_| self.deadline.to_instant())
    }

    /// The stored response; `None` while claimed.
    pub fn response(&self) -> Option<&Response> {
        self.response.as_deref()
    }

    /// The stored response as the shared allocation every replay hands out.
    pub fn shared_response(&self) -> Option<&Arc<Response>> {
        self.response.as_ref()
    }

    pub(crate) fn deadline(&self) -> Stamp {
        self.deadline
    }

    pub(crate) fn is_completed(&self) -> bool {
        self.response.is_some()
    }

    /// The instant after which the record is gone: its expiry once completed, or its
    /// lease plus the reclaim grace while claimed.
    pub(crate) fn removal_deadline(&self, reclaim_grace: Span) -> Stamp {
        if self.is_completed() {
            self.deadline
        } else {
            self.deadline.saturating_add_span(reclaim_grace)
        }
    }

    pub(crate) fn renew(&mut self, now: Stamp, lease_ttl: Duration) {
        self.deadline = now.saturating_add(lease_ttl);
    }

    pub(crate) fn complete(&mut self, now: Stamp, response: Response, expires_after: Duration) {
        self.completed_at = now;
        self.deadline = now.saturating_add(expires_after);
        self.response = Some(Arc::new(response));
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
            .field("claimed_at", &self.claimed_at())
            .field("lease_until", &self.lease_until())
            .field("completed_at", &self.completed_at())
            .field("response", &self.response)
            .finish()
    }
}
