//! Stored records, as the core's [`Record`]s: server instants mapped to local ones,
//! headers decoded.

use idemkit_core::{ClaimToken, Record, Response};

use crate::headers;
use crate::reply::Stored;
use crate::server_clock::ServerNow;

/// A completed record whose stored headers do not decode; its token names it, so a claim
/// can replace exactly it.
#[derive(Debug)]
pub(crate) struct Undecodable {
    pub(crate) token: ClaimToken,
}

/// `stored`, the record of `key` read in a reply that carried `now`.
pub(crate) fn to_record(key: &str, stored: Stored, now: &ServerNow) -> Result<Record, Undecodable> {
    let record = Record::claimed(
        key,
        &stored.fingerprint,
        stored.fingerprint_version,
        stored.token.clone(),
        now.instant(stored.claimed_at),
        now.instant(stored.lease_until),
    );
    let Some(result) = stored.result else {
        return Ok(record);
    };
    let Ok(headers) = headers::decode(&result.headers) else {
        return Err(Undecodable {
            token: stored.token,
        });
    };
    let response = Response {
        status: result.status,
        headers,
        body: result.body,
    };
    Ok(record.into_completed(
        now.instant(result.completed_at),
        now.instant(stored.gone_at),
        response,
    ))
}
