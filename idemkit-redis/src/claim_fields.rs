//! What a claim holds after its time (see the layout at the top of `scripts/library.lua`),
//! formatted once by the client: sent in the claim, and for a claim the client writes
//! itself (layout 3), kept until its completion, which hands the server the parts of the
//! completed record that come from the claim.

use std::ops::Range;

use crate::digits::{Padded, push_padded};
use crate::joined_arg::JoinedArg;
use crate::reply::layout;

/// The first bytes of a claim the client writes itself (layout 3).
const CLIENT_CLAIM: &str = "ik3c";

/// Where a field of a claim value sits in its [`ClaimFields`], which start at the lease.
const fn in_fields(field: Range<usize>) -> Range<usize> {
    field.start - layout::LEASE.start..field.end - layout::LEASE.start
}

/// A claim's completed at, time to live and status: none yet.
const NO_RESULT: &str = "00000000000000000000000000000000000";

/// A claim's headers length: none.
const NO_HEADERS: &str = "0000000000";

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
        fields.push_str(NO_RESULT);
        push_padded(&mut fields, u64::from(fingerprint_version), 10);
        push_padded(&mut fields, fingerprint.len() as u64, 10);
        fields.push_str(NO_HEADERS);
        fields.push_str(fingerprint);
        ClaimFields(fields)
    }

    /// The fields as sent.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The whole value of a claim the client writes itself (layout 3) with these fields,
    /// as one command argument: [`CLIENT_CLAIM`], `token` (32 hex digits), and where
    /// layout 2 holds the claim's time, the `PX` the claim is sent with (`expires_ms`,
    /// 16 digits: [`Padded::new`]`(expires_ms, 16)`).
    pub(crate) fn client_claim<'a>(
        &'a self,
        token: &'a str,
        expires_ms: &'a Padded,
    ) -> JoinedArg<'a, 4> {
        debug_assert_eq!(expires_ms.as_bytes().len(), 16);
        JoinedArg([
            CLIENT_CLAIM.as_bytes(),
            token.as_bytes(),
            expires_ms.as_bytes(),
            self.0.as_bytes(),
        ])
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
    /// before its headers, as one command argument: `ttl` (the time to live, 16 digits),
    /// `status` (3), the fingerprint's version and length, `headers_len` (10 digits) and
    /// the fingerprint. `idemkit_complete_own_claim` joins it after the two times.
    pub(crate) fn result_fields<'a>(
        &'a self,
        ttl: &'a Padded,
        status: &'a Padded,
        headers_len: &'a Padded,
    ) -> JoinedArg<'a, 5> {
        JoinedArg([
            ttl.as_bytes(),
            status.as_bytes(),
            self.fingerprint_version_and_len().as_bytes(),
            headers_len.as_bytes(),
            self.fingerprint().as_bytes(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use redis::ToRedisArgs;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    /// The one argument `arg` writes, as text.
    fn text(arg: &impl ToRedisArgs) -> String {
        let [arg] = <[Vec<u8>; 1]>::try_from(arg.to_redis_args()).expect("one argument");
        String::from_utf8(arg).expect("text")
    }

    #[test]
    fn a_client_claim_is_layout_3_and_its_parts_are_where_the_layout_puts_them() {
        let fields = ClaimFields::new(30_000_000, 61_000_001, "a fingerprint", 7);
        let expires = Padded::new(91_002, 16);
        let claim = fields.client_claim(TOKEN, &expires);
        let value = text(&claim);
        assert_eq!(value.len(), claim.len());
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
        let result = text(&fields.result_fields(
            &Padded::new(1_000_000, 16),
            &Padded::new(201, 3),
            &Padded::new(headers.len() as u64, 10),
        ));
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
        assert_eq!(
            fields.client_claim(TOKEN, &Padded::new(1, 16)).len(),
            layout::HEADER
        );
    }
}
