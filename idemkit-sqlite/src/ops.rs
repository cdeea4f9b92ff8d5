//! The operations as SQL on one connection. A claim is one `BEGIN IMMEDIATE` transaction
//! (it takes the file's write lock before it reads, so two processes never both read and
//! then both try to upgrade to writing); complete, release and renew are one write
//! statement each, which SQLite runs as a write transaction of its own, the lock taken
//! before it reads; each read is one statement.

use std::time::Duration;

use idemkit_core::{Claim, ClaimToken, Record, Response};
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use crate::clock::{FileTime, NEVER, Reading, after, nanos};
use crate::codec::{decode_headers, encode_headers};
use crate::corrupt::{OnCorrupt, report};
use crate::error::{Cause, SqliteError};
use crate::responses::SharedResponses;
use crate::table::TableName;

/// Every this many claims of a process, the claim also deletes gone records on its way...
pub(crate) const PURGE_EVERY: u64 = 16;

/// ... at most this many: each claim adds at most one record, so deleting up to two per
/// claim on average keeps pace with expiry without a purger, while fifteen claims in
/// sixteen skip the statement.
const PURGE_ON_CLAIM: i64 = 2 * PURGE_EVERY as i64;

/// How many due records a claim that finds the store full deletes before it gives up.
const PURGE_WHEN_FULL: i64 = 1_000;

/// The statements, written once for the table's name.
#[derive(Debug)]
pub(crate) struct Statements {
    select: String,
    select_live: String,
    insert: String,
    replace: String,
    complete: String,
    release: String,
    renew: String,
    purge: String,
    count: String,
    stats: String,
}

const FIELDS: &str = "key, fingerprint, fingerprint_version, token, claimed_at, deadline, remove_at, completed_at, status, headers, body";

impl Statements {
    pub(crate) fn new(table: &TableName) -> Statements {
        let meta = table.meta();
        // A held claim: this token's, not completed, not gone.
        let held = "key = ?1 AND token = ?2 AND completed_at IS NULL AND remove_at >= ?3";
        Statements {
            select: format!("SELECT {FIELDS} FROM \"{table}\" WHERE key = ?1"),
            select_live: format!("SELECT {FIELDS} FROM \"{table}\" WHERE key = ?1 AND remove_at >= ?2"),
            insert: format!(
                "INSERT INTO \"{table}\" (key, fingerprint, fingerprint_version, token, claimed_at, deadline, remove_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ),
            replace: format!(
                "UPDATE \"{table}\" SET fingerprint = ?2, fingerprint_version = ?3, token = ?4, claimed_at = ?5, deadline = ?6, remove_at = ?7, completed_at = NULL, status = NULL, headers = NULL, body = NULL WHERE key = ?1"
            ),
            complete: format!(
                "UPDATE \"{table}\" SET completed_at = ?3, deadline = ?4, remove_at = ?4, status = ?5, headers = ?6, body = ?7 WHERE {held}"
            ),
            release: format!("DELETE FROM \"{table}\" WHERE {held}"),
            renew: format!("UPDATE \"{table}\" SET deadline = ?4, remove_at = ?5 WHERE {held}"),
            purge: format!(
                "DELETE FROM \"{table}\" WHERE key IN (SELECT key FROM \"{table}\" WHERE remove_at < ?1 ORDER BY remove_at LIMIT ?2)"
            ),
            count: format!("SELECT value FROM \"{meta}\" WHERE name = 'records'"),
            stats: format!(
                "SELECT
                    COALESCE(SUM(completed_at IS NULL AND deadline >= ?1), 0),
                    COALESCE(SUM(completed_at IS NULL AND deadline < ?1 AND remove_at >= ?1), 0),
                    COALESCE(SUM(completed_at IS NOT NULL AND remove_at >= ?1), 0),
                    COALESCE(SUM(remove_at < ?1), 0),
                    MIN(CASE WHEN completed_at IS NULL AND deadline >= ?1 THEN claimed_at END),
                    MIN(CASE WHEN completed_at IS NOT NULL AND remove_at >= ?1 AND deadline < {NEVER} THEN deadline END)
                FROM \"{table}\""
            ),
        }
    }
}

/// How a backend judges its records: the reclaim grace and the capacity.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rules {
    pub(crate) reclaim_grace: Duration,
    pub(crate) max_records: Option<u64>,
}

/// Why a claim was not granted, beside SQLite failing.
#[derive(Debug)]
pub(crate) enum ClaimError {
    Sqlite(rusqlite::Error),
    Full(u64),
    Random(getrandom::Error),
}

impl From<rusqlite::Error> for ClaimError {
    fn from(error: rusqlite::Error) -> ClaimError {
        ClaimError::Sqlite(error)
    }
}

impl ClaimError {
    pub(crate) fn into_core(self) -> idemkit_core::Error {
        match self {
            ClaimError::Sqlite(error) => SqliteError::sqlite("claim", error).into(),
            ClaimError::Full(max) => idemkit_core::Error::Full {
                max_size: usize::try_from(max).unwrap_or(usize::MAX),
            },
            ClaimError::Random(error) => idemkit_core::Error::storage(SqliteError::new(
                "claim",
                Cause::Other(format!(
                    "no claim token: the OS random source failed: {error}"
                )),
            )),
        }
    }
}

/// A row as read, before its instants are mapped.
struct Row_ {
    key: String,
    fingerprint: String,
    fingerprint_version: u32,
    token: ClaimToken,
    claimed_at: FileTime,
    deadline: FileTime,
    remove_at: FileTime,
    completed: Option<(FileTime, Response)>,
}

/// The row as a record, or why it is not one. SQLite failing is the outer error; a
/// value of the wrong type or out of range is the inner one: a corrupt row.
fn read_row(row: &Row<'_>) -> rusqlite::Result<Result<Row_, String>> {
    match decode_row(row) {
        Ok(decoded) => Ok(decoded),
        Err(
            error @ (rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
            | rusqlite::Error::Utf8Error(..)),
        ) => Ok(Err(error.to_string())),
        Err(other) => Err(other),
    }
}

fn decode_row(row: &Row<'_>) -> rusqlite::Result<Result<Row_, String>> {
    let token: Vec<u8> = row.get(3)?;
    let Ok(token) = <[u8; 16]>::try_from(token.as_slice()) else {
        return Ok(Err(format!("a claim token of {} bytes", token.len())));
    };
    let completed_at: Option<i64> = row.get(7)?;
    let completed = match completed_at {
        None => None,
        Some(at) => {
            let status: Option<i64> = row.get(8)?;
            let headers: Option<Vec<u8>> = row.get(9)?;
            let body: Option<Vec<u8>> = row.get(10)?;
            let Some(status) = status
                .and_then(|status| u16::try_from(status).ok())
                .filter(|status| (100..=999).contains(status))
            else {
                return Ok(Err("a completed record without a valid status".to_owned()));
            };
            let headers = match decode_headers(headers.as_deref().unwrap_or_default()) {
                Ok(headers) => headers,
                Err(what) => return Ok(Err(what)),
            };
            let mut response = Response::new(status, body.unwrap_or_default());
            response.headers = headers;
            Some((at, response))
        }
    };
    let fingerprint_version: i64 = row.get(2)?;
    let Ok(fingerprint_version) = u32::try_from(fingerprint_version) else {
        return Ok(Err(format!(
            "a fingerprint version of {fingerprint_version}"
        )));
    };
    Ok(Ok(Row_ {
        key: row.get(0)?,
        fingerprint: row.get(1)?,
        fingerprint_version,
        token: ClaimToken::from_bytes(token),
        claimed_at: row.get(4)?,
        deadline: row.get(5)?,
        remove_at: row.get(6)?,
        completed,
    }))
}

impl Row_ {
    fn into_record(self, now: &Reading, responses: &SharedResponses) -> Record {
        let record = Record::claimed(
            self.key,
            self.fingerprint,
            self.fingerprint_version,
            self.token,
            now.instant(self.claimed_at),
            now.instant(self.deadline),
        );
        match self.completed {
            Some((at, response)) => {
                let response = responses.share(record.key(), record.claim_token(), response);
                record.into_completed(now.instant(at), now.instant(self.deadline), response)
            }
            None => record,
        }
    }
}

/// What reading a row needs beside the row: the responses to share, and whom to tell
/// of a corrupt row.
pub(crate) struct Decode<'a> {
    pub(crate) responses: &'a SharedResponses,
    pub(crate) on_corrupt: Option<&'a OnCorrupt>,
}

/// What a waiter finds.
pub(crate) enum Found {
    /// No record, or a gone one.
    Absent,
    Completed(Record),
    /// A claim whose lease lapsed.
    Lapsed,
    /// A claim whose lease is live for `lease_left` more.
    Claimed {
        lease_left: Duration,
    },
}

fn fresh_token() -> Result<ClaimToken, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(ClaimToken::from_bytes(bytes))
}

/// What a granted claim did to the row, for waking waiters.
pub(crate) struct Claimed {
    pub(crate) claim: Claim,
    /// Whether a record of the key was replaced (a reclaim, or a gone record).
    pub(crate) replaced: bool,
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn claim(
    connection: &mut Connection,
    sql: &Statements,
    rules: Rules,
    key: &str,
    fingerprint: &str,
    fingerprint_version: u32,
    lease_ttl: Duration,
    now: &Reading,
    decode: &Decode<'_>,
    purge: bool,
) -> Result<Claimed, ClaimError> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let at = now.file;
    if purge {
        transaction
            .prepare_cached(&sql.purge)?
            .execute(params![at, PURGE_ON_CLAIM])?;
    }
    let existing = transaction
        .prepare_cached(&sql.select)?
        .query_row([key], read_row)
        .optional()?;
    let (existing, corrupt) = match existing {
        Some(Ok(row)) => (Some(row), None),
        // A row that is not a record is treated as a gone one: overwritten.
        Some(Err(what)) => (None, Some(what)),
        None => (None, None),
    };
    let deadline = after(at, lease_ttl);
    let remove_at = deadline.saturating_add(nanos(rules.reclaim_grace));
    let version = i64::from(fingerprint_version);
    let present = existing.is_some() || corrupt.is_some();
    // Which write claims the key: a gone, lapsed or corrupt row is replaced, a free key
    // gets a new row; `reclaimed` when a lapsed claim is taken over.
    let (statement, reclaimed) = match existing {
        Some(row) if row.remove_at >= at => {
            if row.completed.is_some() {
                return Ok(Claimed {
                    claim: Claim::found(
                        row.into_record(now, decode.responses),
                        fingerprint,
                        fingerprint_version,
                    ),
                    replaced: false,
                });
            }
            if at <= row.deadline {
                return Ok(Claimed {
                    claim: Claim::InFlight(row.into_record(now, decode.responses)),
                    replaced: false,
                });
            }
            (&sql.replace, true)
        }
        _ if present => (&sql.replace, false),
        _ => {
            if let Some(max) = rules.max_records {
                let count = |transaction: &rusqlite::Transaction<'_>| -> rusqlite::Result<i64> {
                    transaction
                        .prepare_cached(&sql.count)?
                        .query_row([], |row| row.get(0))
                };
                if count(&transaction)? >= i64::try_from(max).unwrap_or(i64::MAX) {
                    transaction
                        .prepare_cached(&sql.purge)?
                        .execute(params![at, PURGE_WHEN_FULL])?;
                    if count(&transaction)? >= i64::try_from(max).unwrap_or(i64::MAX) {
                        // Whatever was purged stays purged.
                        transaction.commit()?;
                        return Err(ClaimError::Full(max));
                    }
                }
            }
            (&sql.insert, false)
        }
    };
    let token = fresh_token().map_err(ClaimError::Random)?;
    transaction.prepare_cached(statement)?.execute(params![
        key,
        fingerprint,
        version,
        token.as_bytes(),
        at,
        deadline,
        remove_at
    ])?;
    let outcome = Claimed {
        claim: if reclaimed {
            Claim::Reclaimed(token)
        } else {
            Claim::New(token)
        },
        replaced: present,
    };
    transaction.commit()?;
    if let Some(reason) = corrupt {
        report(key, reason, true, decode.on_corrupt);
    }
    Ok(outcome)
}

/// Runs one fenced write; whether it changed a row. A lone write statement is its own
/// write transaction: SQLite takes the write lock (waiting up to the busy timeout) before
/// the statement reads, exactly as `BEGIN IMMEDIATE` would, so it needs no `BEGIN` and
/// `COMMIT` around it.
fn fenced(
    connection: &mut Connection,
    statement: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<bool> {
    let changed = connection.prepare_cached(statement)?.execute(params)?;
    Ok(changed == 1)
}

pub(crate) fn complete(
    connection: &mut Connection,
    sql: &Statements,
    key: &str,
    token: &ClaimToken,
    response: &Response,
    expires_after: Duration,
    now: &Reading,
) -> rusqlite::Result<bool> {
    let expires = after(now.file, expires_after);
    let headers = encode_headers(&response.headers);
    fenced(
        connection,
        &sql.complete,
        params![
            key,
            token.as_bytes(),
            now.file,
            expires,
            i64::from(response.status),
            headers,
            &response.body[..]
        ],
    )
}

pub(crate) fn release(
    connection: &mut Connection,
    sql: &Statements,
    key: &str,
    token: &ClaimToken,
    now: &Reading,
) -> rusqlite::Result<bool> {
    fenced(
        connection,
        &sql.release,
        params![key, token.as_bytes(), now.file],
    )
}

pub(crate) fn renew(
    connection: &mut Connection,
    sql: &Statements,
    rules: Rules,
    key: &str,
    token: &ClaimToken,
    lease_ttl: Duration,
    now: &Reading,
) -> rusqlite::Result<bool> {
    let deadline = after(now.file, lease_ttl);
    let remove_at = deadline.saturating_add(nanos(rules.reclaim_grace));
    fenced(
        connection,
        &sql.renew,
        params![key, token.as_bytes(), now.file, deadline, remove_at],
    )
}

/// The live record of `key`, if any.
pub(crate) fn get(
    connection: &Connection,
    sql: &Statements,
    key: &str,
    now: &Reading,
    decode: &Decode<'_>,
) -> Result<Option<Record>, SqliteError> {
    let row = connection
        .prepare_cached(&sql.select_live)
        .and_then(|mut statement| {
            statement
                .query_row(params![key, now.file], read_row)
                .optional()
        })
        .map_err(|error| SqliteError::sqlite("read", error))?;
    match row {
        None => Ok(None),
        Some(Ok(row)) => Ok(Some(row.into_record(now, decode.responses))),
        Some(Err(reason)) => {
            report(key, reason, false, decode.on_corrupt);
            Ok(None)
        }
    }
}

/// What a waiter on `key` finds now.
pub(crate) fn watch(
    connection: &Connection,
    sql: &Statements,
    key: &str,
    now: &Reading,
    decode: &Decode<'_>,
) -> Result<Found, SqliteError> {
    let row = connection
        .prepare_cached(&sql.select_live)
        .and_then(|mut statement| {
            statement
                .query_row(params![key, now.file], read_row)
                .optional()
        })
        .map_err(|error| SqliteError::sqlite("read", error))?;
    let row = match row {
        None => return Ok(Found::Absent),
        Some(Ok(row)) => row,
        Some(Err(reason)) => {
            report(key, reason, false, decode.on_corrupt);
            return Ok(Found::Absent);
        }
    };
    if row.completed.is_some() {
        return Ok(Found::Completed(row.into_record(now, decode.responses)));
    }
    if row.deadline < now.file {
        Ok(Found::Lapsed)
    } else {
        let left = row.deadline.abs_diff(now.file);
        Ok(Found::Claimed {
            lease_left: Duration::from_nanos(left),
        })
    }
}

/// Deletes at most `limit` gone records; how many it deleted.
pub(crate) fn purge(
    connection: &mut Connection,
    sql: &Statements,
    limit: u64,
    now: &Reading,
) -> rusqlite::Result<u64> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let deleted = transaction
        .prepare_cached(&sql.purge)?
        .execute(params![now.file, limit])?;
    transaction.commit()?;
    Ok(deleted as u64)
}

/// The number of records held, gone ones not purged yet included.
pub(crate) fn count(connection: &Connection, sql: &Statements) -> rusqlite::Result<u64> {
    let count: i64 = connection
        .prepare_cached(&sql.count)?
        .query_row([], |row| row.get(0))?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// Counts by state, at `now`.
pub(crate) fn stats(
    connection: &Connection,
    sql: &Statements,
    now: &Reading,
) -> rusqlite::Result<idemkit_core::StoreStats> {
    let at = now.file;
    let mut stats = idemkit_core::StoreStats::default();
    let (oldest, nearest) = connection
        .prepare_cached(&sql.stats)?
        .query_row([at], |row| {
            stats.in_flight = row.get::<_, i64>(0)?.max(0) as u64;
            stats.lapsed = row.get::<_, i64>(1)?.max(0) as u64;
            stats.completed = row.get::<_, i64>(2)?.max(0) as u64;
            stats.purgeable = row.get::<_, i64>(3)?.max(0) as u64;
            Ok((row.get::<_, Option<i64>>(4)?, row.get::<_, Option<i64>>(5)?))
        })?;
    stats.oldest_claim =
        oldest.map(|claimed| Duration::from_nanos(at.saturating_sub(claimed).max(0) as u64));
    stats.nearest_expiry =
        nearest.map(|expiry| Duration::from_nanos(expiry.saturating_sub(at).max(0) as u64));
    let pages: i64 = connection.query_row("PRAGMA page_count", [], |row| row.get(0))?;
    let page_size: i64 = connection.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    stats.size_bytes = Some((pages.max(0) as u64) * (page_size.max(0) as u64));
    Ok(stats)
}
