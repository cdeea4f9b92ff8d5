//! The SQL of each operation for one table, written once when the backend is built.
//!
//! Every statement reads the time with `clock_timestamp()` once (in a `now` CTE) and
//! returns it, so the database's clock judges every lease and expiry and the reply says
//! what "now" was. Times come back as microseconds since the Unix epoch.

use std::sync::Arc;

use crate::table::TableName;

/// `x` (a timestamptz) as microseconds since the Unix epoch.
fn us(x: &str) -> String {
    format!("(extract(epoch from {x}) * 1000000)::bigint")
}

/// The columns of a record, as [`crate::row`] reads them, from the row alias `r`.
fn record_columns() -> String {
    format!(
        "r.key, r.token, r.fingerprint, r.fingerprint_version, r.completed, r.reclaimed, \
         {} AS claimed_at, {} AS lease_until, {} AS purge_after, {} AS completed_at, \
         r.status, r.header_names, r.header_values, r.body",
        us("r.claimed_at"),
        us("r.lease_until"),
        us("r.purge_after"),
        us("r.completed_at"),
    )
}

/// A `NOTIFY` on the table's channel with `key` (a parameter) as its payload; a key too
/// long for a payload sends an empty one, which wakes every waiter of the backend.
fn notify(table: &TableName, key: &str) -> String {
    format!(
        "pg_notify('{table}', CASE WHEN octet_length({key}) < 7900 THEN {key} ELSE '' END)::text"
    )
}

/// The statements of one table.
#[derive(Debug)]
pub(crate) struct Statements {
    /// $1 key, $2 token, $3 fingerprint, $4 version, $5 lease µs, $6 grace µs.
    pub(crate) claim: Arc<str>,
    /// $1 key, $2 token, $3 ttl µs, $4 status, $5 header names, $6 values, $7 body.
    pub(crate) complete: Arc<str>,
    /// $1 key, $2 token.
    pub(crate) release: Arc<str>,
    /// $1 key, $2 token, $3 lease µs, $4 grace µs.
    pub(crate) renew: Arc<str>,
    /// $1 key.
    pub(crate) read: Arc<str>,
    /// $1 key: marks a claim as waited on, so its completion, release or reclaim
    /// notifies. Unmarked rows notify nobody: `NOTIFY` serialises commits across the
    /// whole server, so a completion nobody waits for must not pay for it.
    pub(crate) watch: Arc<str>,
    /// $1 limit.
    pub(crate) purge: Arc<str>,
    pub(crate) stats: Arc<str>,
}

impl Statements {
    /// The statements of `table`. With `notify_every_key`, complete, release and a
    /// reclaim notify every key, waited on or not (for listeners of the channel's own).
    pub(crate) fn new(table: &TableName, notify_every_key: bool) -> Statements {
        // Which rows' changes notify: those a waiter marked, or (when asked) every one.
        let notifying = if notify_every_key {
            "true"
        } else {
            "r.waiters"
        };
        // The row may be taken when its result expired or its claim was abandoned past
        // the grace (gone), or its claim's lease lapsed (a takeover).
        let winnable = "(r.purge_after < EXCLUDED.claimed_at \
                        OR (NOT r.completed AND r.lease_until < EXCLUDED.claimed_at))";
        let take = |column: &str| {
            format!("{column} = CASE WHEN {winnable} THEN EXCLUDED.{column} ELSE r.{column} END")
        };
        let mut sets: Vec<String> = [
            "token",
            "fingerprint",
            "fingerprint_version",
            "completed",
            "claimed_at",
            "lease_until",
            "purge_after",
            "completed_at",
            "status",
            "header_names",
            "header_values",
            "body",
        ]
        .iter()
        .map(|column| take(column))
        .collect();
        // A takeover of a claim still within its grace is a reclaim; of a gone record,
        // a fresh claim.
        sets.push(format!(
            "reclaimed = CASE WHEN {winnable} THEN (NOT r.completed AND r.purge_after >= \
             EXCLUDED.claimed_at) ELSE r.reclaimed END"
        ));
        // Waiters of a reclaimed claim keep waiting (for its successor's result), so
        // they stay flagged; a fresh claim of a gone row has none.
        sets.push(format!(
            "waiters = CASE WHEN {winnable} THEN (r.waiters AND NOT r.completed AND \
             r.purge_after >= EXCLUDED.claimed_at) ELSE r.waiters END"
        ));
        // One statement: insert, or take the row over, or (a no-op update, which locks
        // the row and so sees its latest version) return what is there.
        let claim = format!(
            "WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t) \
             INSERT INTO {table} AS r (key, token, fingerprint, fingerprint_version, completed, \
               reclaimed, claimed_at, lease_until, purge_after) \
             SELECT $1, $2, $3, $4, false, false, t, t + $5 * interval '1 microsecond', \
               t + ($5 + $6) * interval '1 microsecond' FROM now \
             ON CONFLICT (key) DO UPDATE SET {sets} \
             RETURNING {columns}, (SELECT {now} FROM now) AS now, \
               CASE WHEN r.token = $2 AND r.reclaimed AND {notifying} THEN {notify} END AS notified",
            sets = sets.join(", "),
            columns = record_columns(),
            now = us("t"),
            notify = notify(table, "$1"),
        );
        let complete = format!(
            "WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t) \
             UPDATE {table} AS r SET completed = true, completed_at = now.t, \
               lease_until = now.t + $3 * interval '1 microsecond', \
               purge_after = now.t + $3 * interval '1 microsecond', \
               status = $4, header_names = $5, header_values = $6, body = $7 \
             FROM now \
             WHERE r.key = $1 AND r.token = $2 AND NOT r.completed AND r.purge_after >= now.t \
             RETURNING CASE WHEN {notifying} THEN {notify} END",
            notify = notify(table, "$1"),
        );
        let release = format!(
            "DELETE FROM {table} AS r \
             WHERE r.key = $1 AND r.token = $2 AND NOT r.completed \
               AND r.purge_after >= clock_timestamp() \
             RETURNING CASE WHEN {notifying} THEN {notify} END",
            notify = notify(table, "$1"),
        );
        let renew = format!(
            "WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t) \
             UPDATE {table} AS r SET lease_until = now.t + $3 * interval '1 microsecond', \
               purge_after = now.t + ($3 + $4) * interval '1 microsecond' \
             FROM now \
             WHERE r.key = $1 AND r.token = $2 AND NOT r.completed AND r.purge_after >= now.t \
             RETURNING r.key"
        );
        let read = format!(
            "WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t) \
             SELECT {columns}, (SELECT {now} FROM now) AS now FROM {table} AS r WHERE r.key = $1",
            columns = record_columns(),
            now = us("t"),
        );
        let watch = format!(
            "UPDATE {table} SET waiters = true WHERE key = $1 AND NOT completed AND NOT waiters"
        );
        // Bounded: at most $1 rows, oldest first, skipping rows a claim is changing.
        let purge = format!(
            "DELETE FROM {table} WHERE key IN ( \
               SELECT key FROM {table} WHERE purge_after < clock_timestamp() \
               ORDER BY purge_after LIMIT $1 FOR UPDATE SKIP LOCKED) \
             AND purge_after < clock_timestamp()"
        );
        let stats = format!(
            "WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t) \
             SELECT \
               count(*) FILTER (WHERE NOT completed AND lease_until >= (SELECT t FROM now)), \
               count(*) FILTER (WHERE NOT completed AND lease_until < (SELECT t FROM now) \
                 AND purge_after >= (SELECT t FROM now)), \
               count(*) FILTER (WHERE completed AND purge_after >= (SELECT t FROM now)), \
               count(*) FILTER (WHERE purge_after < (SELECT t FROM now)), \
               {now} - {oldest}, \
               {nearest} - {now}, \
               pg_total_relation_size('{table}') \
             FROM {table}",
            now = us("(SELECT t FROM now)"),
            oldest = us(
                "min(claimed_at) FILTER (WHERE NOT completed AND lease_until >= (SELECT t FROM now))"
            ),
            nearest = us(
                "min(purge_after) FILTER (WHERE completed AND purge_after >= (SELECT t FROM now))"
            ),
        );
        Statements {
            claim: claim.into(),
            complete: complete.into(),
            release: release.into(),
            renew: renew.into(),
            read: read.into(),
            watch: watch.into(),
            purge: purge.into(),
            stats: stats.into(),
        }
    }
}
