//! [`StoredRecord`]: the compact form in which a store keeps one key's record.

use std::sync::Arc;
use std::time::Duration;

use crate::claim::Completed;
use crate::record::Record;
use crate::response::Response;
use crate::store::keyhash::KeyHash;
use crate::store::names::Names;
use crate::store::stamp::{Span, Stamp, Timeline};
use crate::token::ClaimToken;

/// One key's record inside a store: the public [`Record`] with 8-byte stamps instead of
/// instants, the key and fingerprint together (inside the record when short, as digests
/// when an executor's), and the key's hash.
pub(crate) struct StoredRecord {
    /// The key followed by the fingerprint.
    names: Names,
    fingerprint_version: u32,
    /// The key's hash in its store's table, kept in what would otherwise be padding: a
    /// record that expires, or a table that grows or is compacted, never hashes its key
    /// again.
    hash: KeyHash,
    claim_token: ClaimToken,
    claimed_at: Stamp,
    /// `lease_until` while claimed; the expiry once completed.
    deadline: Stamp,
    completed_at: Stamp,
    /// Present exactly when the record is completed.
    response: Option<Arc<Response>>,
}

impl StoredRecord {
    /// A fresh claim of `key`, whose hash is `hash`. The caller checked that `key.len()`
    /// fits in a `u32`.
    pub(crate) fn claimed(
        key: &str,
        hash: KeyHash,
        fingerprint: &str,
        fingerprint_version: u32,
        claim_token: ClaimToken,
        now: Stamp,
        lease_ttl: Duration,
    ) -> StoredRecord {
        StoredRecord {
            names: Names::new(key, fingerprint),
            fingerprint_version,
            hash,
            claim_token,
            claimed_at: now,
            deadline: now.saturating_add(lease_ttl),
            completed_at: Stamp::UNSET,
            response: None,
        }
    }

    /// Whether the record is `key`'s.
    pub(crate) fn key_is(&self, key: &str) -> bool {
        self.names.key_is(key.as_bytes())
    }

    /// The record's key, written out.
    #[cfg(test)]
    pub(crate) fn key(&self) -> String {
        let (names, key_len) = self.names.to_boxed();
        names[..key_len].to_owned()
    }

    /// The key's hash in its store's table.
    pub(crate) fn hash(&self) -> KeyHash {
        self.hash
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

    /// A completed record's answer to a claim by `fingerprint` (scheme
    /// `fingerprint_version`), its stamps read on `timeline`: the shared response and
    /// whether it was stored for that request, with no `Record` (no key or fingerprint
    /// string) built. `None` while claimed.
    pub(crate) fn to_completed(
        &self,
        fingerprint: &str,
        fingerprint_version: u32,
        timeline: Timeline,
    ) -> Option<Completed> {
        let response = self.response.as_ref()?;
        let same_request = self.fingerprint_version == fingerprint_version
            && self.names.fingerprint_is(fingerprint.as_bytes());
        Some(Completed::new(
            Arc::clone(response),
            same_request,
            self.claim_token.clone(),
            timeline.instant(self.completed_at),
            timeline.instant(self.deadline),
        ))
    }

    /// The record as a caller sees it, its stamps read on `timeline`.
    pub(crate) fn to_record(&self, timeline: Timeline) -> Record {
        let (names, key_len) = self.names.to_boxed();
        let record = Record::from_names(
            names,
            key_len,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_takes_80_bytes() {
        // Names (24), the version and the hash (8), the token (16), three stamps (24)
        // and the response pointer (8); an empty slot costs no more.
        assert_eq!(std::mem::size_of::<Option<StoredRecord>>(), 80);
    }
}
