//! [`StoredRecord`]: the compact form in which a store keeps one key's record.

use std::sync::Arc;
use std::time::Duration;

use crate::record::Record;
use crate::response::Response;
use crate::store::stamp::{Span, Stamp, Timeline};
use crate::token::ClaimToken;

/// One key's record inside a store: the public [`Record`] with 8-byte stamps instead of
/// instants, and the key and fingerprint in one allocation.
pub(crate) struct StoredRecord {
    /// The key followed by the fingerprint.
    names: Box<str>,
    key_len: u32,
    fingerprint_version: u32,
    claim_token: ClaimToken,
    claimed_at: Stamp,
    /// `lease_until` while claimed; the expiry once completed.
    deadline: Stamp,
    completed_at: Stamp,
    /// Present exactly when the record is completed.
    response: Option<Arc<Response>>,
}

impl StoredRecord {
    /// A fresh claim. The caller checked that `key.len()` fits in a `u32`.
    pub(crate) fn claimed(
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        claim_token: ClaimToken,
        now: Stamp,
        lease_ttl: Duration,
    ) -> StoredRecord {
        let mut names = String::with_capacity(key.len() + fingerprint.len());
        names.push_str(key);
        names.push_str(fingerprint);
        StoredRecord {
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

    pub(crate) fn key(&self) -> &str {
        &self.names[..self.key_len as usize]
    }

    pub(crate) fn claim_token(&self) -> &ClaimToken {
        &self.claim_token
    }

    /// The lease's end while claimed, the expiry once completed.
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

    pub(crate) fn complete(
        &mut self,
        now: Stamp,
        response: Arc<Response>,
        expires_after: Duration,
    ) {
        self.completed_at = now;
        self.deadline = now.saturating_add(expires_after);
        self.response = Some(response);
    }

    /// The record as a caller sees it, its stamps read on `timeline`.
    pub(crate) fn to_record(&self, timeline: Timeline) -> Record {
        let record = Record::from_names(
            self.names.clone(),
            self.key_len as usize,
            self.fingerprint_version,
            self.claim_token.clone(),
            timeline.instant(self.claimed_at),
            timeline.instant(self.deadline),
        );
        match &self.response {
            Some(response) => record.into_completed(
                timeline.instant(self.completed_at),
                timeline.instant(self.deadline),
                Arc::clone(response),
            ),
            None => record,
        }
    }
}
