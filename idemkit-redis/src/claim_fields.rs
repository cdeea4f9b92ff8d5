//! What a claim holds after its time (see the layout at the top of `scripts/library.lua`),
//! formatted once by the client: sent in the claim, and for a claim the client writes
//! itself (layout 3), kept until its completion, which hands the server the parts of the
//! completed record that come from the claim.

use std::ops::Range;

use crate::digits::push_padded;
use crate::reply::layout;

/// The first bytes of a claim the client writes itself (layout 3).
const CLIENT_CLAIM: &str = "ik3c";

/// Where a field of a claim value sits in its [`ClaimFields`], which start at the lease.
const fn in_fields(field: Range<usize>) -> Range<usize> {
    field.start - layout::LEASE.start..field.end - layout::LEASE.start
}

/// A claim's fields after its time: the lease and the time its record is kept past it, in
/// microseconds, no result yet, the fingerprint's version and length, no headers, the
/// fingerprint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClaimFields(String);

impl ClaimFields {
    /// The fields of a claim leased for `lease` and kept `kept` past it (microseconds,
    /// below 10^16), made by a request with `fingerprint` of `fingerprint_version`.
    pub(crate) fn new(lease: u64, kept: u64, fingerprint: &str, fingerprint_version: u32) -> Self {
        // A wider number would shift every field after it (the backend's `micros` keeps
        // durations below 10^16; a fingerprint's length and a version fit in 10 digits).
        debug_assert!(lease < 10_u64.pow(16) && kept < 10_u64.pow(16));
        debug_assert!((fingerprint.len() as u64) < 10_u64.pow(10));
        let mut fields =
            String::with_capacity(layout::HEADER - layout::LEASE.start + fingerprint.len());
        push_padded(&mut fields, lease, 16);
        push_padded(&mut fields, kept, 16);
        // No result yet: completed at, time to live, status.
        push_padded(&mut fields, 0, 35);
        push_padded(&mut fields, u64::from(fingerprint_version), 10);
        push_padded(&mut fields, fingerprint.len() as u64, 10);
        // No headers.
        push_padded(&mut fields, 0, 10);
        fields.push_str(fingerprint);
        ClaimFields(fields)
    }

    /// The fields as sent.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The whole value of a claim the client writes itself (layout 3) with these fields:
    /// [`CLIENT_CLAIM`], `token` (32 hex digits), and where layout 2 holds the claim's
    /// time, the `PX` the claim is sent with (`expires_ms`, 16 digits).
    pub(crate) fn client_claim(&self, token: &str, expires_ms: u64) -> String {
        let mut value = String::with_capacity(self.client_claim_len());
        value.push_str(CLIENT_CLAIM);
        value.push_str(token);
        push_padded(&mut value, expires_ms, 16);
        value.push_str(&self.0);
        value
    }

    /// The length of [`client_claim`](Self::client_claim)'s value.
    fn client_claim_len(&self) -> usize {
        layout::LEASE.start + self.0.len()
    }

    /// The lease and the time the record is kept past it: the 32 digits a completed
    /// record keeps from its claim, in the same place.
    pub(crate) fn lease_and_kept(&self) -> &str {
        &self.0[in_fields(layout::LEASE.start..layout::GRACE.end)]
    }

    /// The fingerprint's version and length (10 digits each), which a completed record
    /// keeps.
    fn fingerprint_version_and_len(&self) -> &str {
        &self.0[in_fields(layout::FINGERPRINT_VERSION.start..layout::FINGERPRINT_LEN.end)]
    }

    /// The fingerprint.
    fn fingerprint(&self) -> &str {
        &self.0[layout::HEADER - layout::LEASE.start..]
    }

    /// What the record of this claim, completed, holds after its completion's time and
    /// before its headers: `ttl_and_status` (the time to live, 16 digits, and the status,
    /// 3), the fingerprint's version and length, `headers_len` (10 digits) and the
    /// fingerprint. `idemkit_complete_own_claim` joins it after the two times.
    pub(crate) fn result_fields(&self, ttl_and_status: &str, headers_len: &str) -> String {
        [
            ttl_and_status,
            self.fingerprint_version_and_len(),
            headers_len,
            self.fingerprint(),
        ]
        .concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_client_claim_is_layout_3_and_its_parts_are_where_the_layout_puts_them() {
        let fields = ClaimFields::new(30_000_000, 61_000_001, "a fingerprint", 7);
        let value = fields.client_claim(TOKEN, 91_002);
        assert_eq!(value.len(), fields.client_claim_len());
        assert_eq!(value.len(), layout::HEADER + "a fingerprint".len());
        assert_eq!(&value[..4], CLIENT_CLAIM);
        assert_eq!(&value[layout::TOKEN], TOKEN);
        assert_eq!(&value[layout::CLAIMED_AT], "0000000000091002");
        assert_eq!(&value[layout::LEASE], "0000000030000000");
        assert_eq!(&value[layout::GRACE], "0000000061000001");
        assert_eq!(
            &value[layout::COMPLETED_AT.start..layout::STATUS.end],
            "0".repeat(35)
        );
        assert_eq!(&value[layout::FINGERPRINT_VERSION], "0000000007");
        assert_eq!(&value[layout::FINGERPRINT_LEN], "0000000013");
        assert_eq!(&value[layout::HEADERS_LEN], "0000000000");
        assert_eq!(&value[layout::HEADER..], "a fingerprint");
        assert_eq!(
            &value[layout::LEASE.start..layout::GRACE.end],
            fields.lease_and_kept()
        );
        assert_eq!(
            &value[layout::FINGERPRINT_VERSION.start..layout::FINGERPRINT_LEN.end],
            fields.fingerprint_version_and_len()
        );
        assert_eq!(fields.fingerprint(), "a fingerprint");
        assert_eq!(&value[layout::LEASE.start..], fields.as_str());
    }

    /// The completed record `idemkit_complete_own_claim` joins from these parts is one
    /// the client reads back whole.
    #[test]
    fn the_parts_a_completion_is_handed_join_into_the_completed_record() {
        let fields = ClaimFields::new(30_000_000, 61_000_001, "a fingerprint", 7);
        let headers = crate::headers::encode([("content-type", &b"text/plain"[..])]);
        let result = fields.result_fields("0000000001000000201", &format!("{:010}", headers.len()));
        let claimed_at = "0001700000000999";
        let completed_at = "0001700000500000";
        let mut value = format!(
            "ik2d{TOKEN}{claimed_at}{}{completed_at}{result}",
            fields.lease_and_kept()
        )
        .into_bytes();
        value.extend_from_slice(&headers);
        value.extend_from_slice(b"the body");
        let stored = crate::reply::decode(bytes::Bytes::from(value), true)
            .expect("a completed record")
            .expect("decodable");
        assert_eq!(stored.token.to_string(), TOKEN);
        assert_eq!(stored.claimed_at, 1_700_000_000_999);
        assert_eq!(stored.lease_until, 1_700_000_000_999 + 30_000_000);
        assert_eq!(stored.gone_at, 1_700_000_500_000 + 1_000_000);
        assert_eq!(
            (stored.fingerprint.as_str(), stored.fingerprint_version),
            ("a fingerprint", 7)
        );
        let result = stored.result.expect("completed");
        assert_eq!(result.completed_at, 1_700_000_500_000);
        assert_eq!(result.status, 201);
        assert_eq!(&result.body[..], b"the body");
        assert_eq!(result.headers, headers);
    }

    #[test]
    fn an_empty_fingerprint_is_an_empty_tail() {
        let fields = ClaimFields::new(1, 2, "", 0);
        assert_eq!(fields.fingerprint(), "");
        assert_eq!(fields.fingerprint_version_and_len(), "00000000000000000000");
        assert_eq!(fields.client_claim_len(), layout::HEADER);
    }
}
