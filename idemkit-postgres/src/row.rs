//! Reading a row of the table into a [`Record`], and a [`Response`] into the columns it
//! is stored in (repeated header names kept, in order).

use std::time::Instant;

use bytes::Bytes;
use idemkit_core::{ClaimToken, Record, Response};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::error::{Cause, PostgresError};
use crate::responses::SharedResponses;
use crate::time::{ServerClock, ServerNow};

/// One row as stored, with the statement's `now`.
pub(crate) struct Stored {
    pub(crate) token: ClaimToken,
    pub(crate) completed: bool,
    pub(crate) reclaimed: bool,
    pub(crate) lease_until: i64,
    pub(crate) purge_after: i64,
    pub(crate) now: ServerNow,
    record: Record,
}

impl Stored {
    /// Whether the record is gone at the statement's `now` (an expired result, or a claim
    /// abandoned past the grace): to every reader, as if there were no row.
    pub(crate) fn gone(&self) -> bool {
        self.purge_after < self.now.micros()
    }

    /// Whether this is a claim whose lease has lapsed at the statement's `now`.
    pub(crate) fn lapsed(&self) -> bool {
        !self.completed && self.lease_until < self.now.micros()
    }

    pub(crate) fn into_record(self) -> Record {
        self.record
    }
}

fn invalid(operation: &'static str, why: impl Into<String>) -> PostgresError {
    PostgresError::new(operation, Cause::Invalid(why.into()))
}

/// Decodes a row of the record columns and `now`, received at `seen`.
pub(crate) fn decode(
    operation: &'static str,
    row: &PgRow,
    trip: (Instant, Instant),
    clock: &ServerClock,
    responses: &SharedResponses,
) -> Result<Stored, PostgresError> {
    let column = |error: sqlx::Error| PostgresError::new(operation, Cause::Sqlx(error));
    let now = clock.observe(row.try_get("now").map_err(column)?, trip.0, trip.1);
    let key: String = row.try_get("key").map_err(column)?;
    let token: Vec<u8> = row.try_get("token").map_err(column)?;
    let token = <[u8; 16]>::try_from(token.as_slice())
        .map(ClaimToken::from_bytes)
        .map_err(|_| {
            invalid(
                operation,
                format!("the row of {key:?} has a malformed token"),
            )
        })?;
    let fingerprint: String = row.try_get("fingerprint").map_err(column)?;
    let version: i64 = row.try_get("fingerprint_version").map_err(column)?;
    let completed: bool = row.try_get("completed").map_err(column)?;
    let reclaimed: bool = row.try_get("reclaimed").map_err(column)?;
    let claimed_at: i64 = row.try_get("claimed_at").map_err(column)?;
    let lease_until: i64 = row.try_get("lease_until").map_err(column)?;
    let purge_after: i64 = row.try_get("purge_after").map_err(column)?;
    let record = Record::claimed(
        key.as_str(),
        fingerprint,
        u32::try_from(version).unwrap_or(u32::MAX),
        token.clone(),
        now.local(claimed_at),
        now.local(lease_until),
    );
    let record = if completed {
        let completed_at: Option<i64> = row.try_get("completed_at").map_err(column)?;
        let status: Option<i32> = row.try_get("status").map_err(column)?;
        let names: Option<Vec<String>> = row.try_get("header_names").map_err(column)?;
        let values: Option<Vec<Vec<u8>>> = row.try_get("header_values").map_err(column)?;
        let body: Option<Vec<u8>> = row.try_get("body").map_err(column)?;
        let (names, values) = (names.unwrap_or_default(), values.unwrap_or_default());
        let status = status
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| invalid(operation, format!("the row of {key:?} has no status")))?;
        if names.len() != values.len() {
            return Err(invalid(
                operation,
                format!("the row of {key:?} has unpaired headers"),
            ));
        }
        let response = Response {
            status,
            headers: names
                .into_iter()
                .zip(values.into_iter().map(Bytes::from))
                .collect(),
            body: body.unwrap_or_default().into(),
        };
        let completed_at = now.local(completed_at.unwrap_or(claimed_at));
        let response = responses.share(&key, &token, response);
        record.into_completed(completed_at, now.local(lease_until), response)
    } else {
        record
    };
    Ok(Stored {
        token,
        completed,
        reclaimed,
        lease_until,
        purge_after,
        now,
        record,
    })
}

/// A response as its columns: status, header names, header values, body.
pub(crate) fn columns(response: &Response) -> (i32, Vec<&str>, Vec<&[u8]>, &[u8]) {
    let names = response.headers.iter().map(|(n, _)| n.as_str()).collect();
    let values = response.headers.iter().map(|(_, v)| v.as_ref()).collect();
    (
        i32::from(response.status),
        names,
        values,
        response.body.as_ref(),
    )
}
