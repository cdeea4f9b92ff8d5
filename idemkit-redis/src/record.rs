//! Stored records, as the core's [`Record`]s: server instants mapped to local ones,
//! headers decoded.

use idemkit_core::{Record, Response};

use crate::headers;
use crate::reply::{Stored, Undecodable};
use crate::responses::SharedResponses;
use crate::server_clock::ServerNow;

/// `stored`, the record of `key` (at `storage_key`) read in a reply that carried `now`;
/// its response shared through `responses`.
pub(crate) fn to_record(
    key: &str,
    storage_key: &str,
    stored: Stored,
    now: &ServerNow,
    responses: &SharedResponses,
) -> Result<Record, Undecodable> {
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
            token: stored.token.to_string().into(),
            reason: "a stored response whose headers do not decode".to_owned(),
        });
    };
    let response = Response {
        status: result.status,
        headers,
        body: result.body.into(),
    };
    let response = responses.share(storage_key, &stored.token, response);
    Ok(record.into_completed(
        now.instant(result.completed_at),
        now.instant(stored.gone_at),
        response,
    ))
}
