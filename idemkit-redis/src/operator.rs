//! [`Operator`] for [`RedisBackend`]: counts by state and a bounded purge, found by
//! walking the backend's namespace with `SCAN`.
//!
//! # What a purge means on Redis
//!
//! Every record's key carries a TTL that fires just after the record is gone (a claim's
//! lease plus the reclaim grace, a result's expiry): Redis deletes records by itself,
//! and a purge is not needed to keep the store small. What a purge still finds are
//! records that are gone but whose key is still there: keys whose TTL was removed or
//! lengthened by hand (`PERSIST`, a restore without TTLs), or ones within the last
//! millisecond before their TTL fires. It deletes those, each only after checking on the
//! server, in one call of the library's `idemkit_purge`, that the record is still gone;
//! it never touches a value in the namespace that does not carry a record layout's
//! marker. Both read records through the library (`idemkit_fields`), from each value's
//! fixed header alone.
//!
//! Both walk the whole namespace (a `SCAN`, then one pipelined read per batch of keys),
//! so they cost time in proportion to the records it holds, in short commands that
//! never block the server. A Redis Cluster is not walked: both answer
//! [`Error::Storage`] there.

use std::future::Future;
use std::time::Duration;

use idemkit_core::{Error, Operator, StoreStats};
use redis::{RedisResult, Value};

use crate::backend::{Inner, RedisBackend};
use crate::commands::{Commands, fcall};
use crate::error::{Cause, RedisError};
use crate::runtime::Elapsed;
use crate::scripts;

/// How many keys one `SCAN` step asks for (a hint to the server).
const SCAN_COUNT: usize = 500;

/// Where one record stands, by the server's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    /// A claim whose lease is live, made at this server instant.
    InFlight { claimed_at: u64 },
    /// A claim whose lease lapsed, within the reclaim grace.
    Lapsed,
    /// A completed record, gone after this server instant.
    Completed { gone_at: u64 },
    /// Gone, but its key is still there: what a purge deletes.
    Gone,
}

/// Where the record with these fields (layout, state, claimed at, lease until, gone
/// after, as the library's `idemkit_fields` reads them from its fixed header) stands at
/// server instant `now`; `None` for a value that is not a record of any layout (or a key
/// deleted meanwhile).
fn standing(fields: &[Option<String>], now: u64) -> Option<Standing> {
    let [layout, state, claimed_at, lease_until, gone_at] = fields else {
        return None;
    };
    if !matches!(layout.as_deref(), Some("1" | "2" | "3")) {
        return None;
    }
    let number = |field: &Option<String>| {
        let field = field.as_deref()?;
        if field.is_empty() || !field.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        field.parse::<u64>().ok()
    };
    let (claimed_at, lease_until, gone_at) =
        (number(claimed_at)?, number(lease_until)?, number(gone_at)?);
    let claimed = match state.as_deref()? {
        "claimed" => true,
        "completed" => false,
        _ => return None,
    };
    Some(if now > gone_at {
        Standing::Gone
    } else if !claimed {
        Standing::Completed { gone_at }
    } else if now <= lease_until {
        Standing::InFlight { claimed_at }
    } else {
        Standing::Lapsed
    })
}

/// One step of a walk: the server's time, and each key found with its standing and,
/// when asked for, the bytes it takes.
struct Step {
    now: u64,
    records: Vec<(String, Option<Standing>, Option<u64>)>,
}

/// A walk over the namespace, one `SCAN` step at a time.
struct Walk {
    pattern: String,
    cursor: Option<String>,
}

impl Walk {
    fn new(namespace: &str) -> Walk {
        // Record keys are `<namespace>:{<key>}`; the namespace's own glob characters
        // are escaped so that they match only themselves.
        let mut pattern = String::with_capacity(namespace.len() + 4);
        for character in namespace.chars() {
            if matches!(character, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(character);
        }
        pattern.push_str(":{*}");
        Walk {
            pattern,
            cursor: Some("0".to_owned()),
        }
    }
}

fn storage(operation: &'static str, cause: Cause) -> Error {
    Error::storage(RedisError::new(operation, cause))
}

fn bad_reply(operation: &'static str, what: impl Into<String>) -> Error {
    storage(operation, Cause::BadReply(what.into()))
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(text) => Some(text.clone()),
        Value::Int(number) => Some(number.to_string()),
        _ => None,
    }
}

/// The server's `TIME` reply in microseconds.
fn server_micros(value: &Value) -> Option<u64> {
    let Value::Array(parts) = value else {
        return None;
    };
    let [seconds, micros] = parts.as_slice() else {
        return None;
    };
    let seconds: u64 = text(seconds)?.parse().ok()?;
    let micros: u64 = text(micros)?.parse().ok()?;
    seconds.checked_mul(1_000_000)?.checked_add(micros)
}

impl Inner {
    /// Awaits `request` within the command timeout; its failure is a storage error of
    /// `operation`.
    async fn timed<T>(
        &self,
        operation: &'static str,
        request: impl Future<Output = RedisResult<T>>,
    ) -> Result<T, Error> {
        match self.runtime.within(self.command_timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(storage(operation, Cause::Redis(error))),
            Err(Elapsed) => Err(storage(operation, Cause::TimedOut(self.command_timeout))),
        }
    }

    /// The next step of `walk`, or `None` once it has covered the namespace.
    async fn step(
        &self,
        operation: &'static str,
        walk: &mut Walk,
        with_sizes: bool,
    ) -> Result<Option<Step>, Error> {
        if matches!(self.commands, Commands::Cluster(_)) {
            return Err(bad_reply(
                operation,
                "walking the records of a Redis Cluster is not supported",
            ));
        }
        let Some(cursor) = walk.cursor.take() else {
            return Ok(None);
        };
        let mut scan = redis::cmd("SCAN");
        scan.arg(&cursor)
            .arg("MATCH")
            .arg(&walk.pattern)
            .arg("COUNT")
            .arg(SCAN_COUNT);
        let reply = self.timed(operation, self.commands.send(&scan)).await?;
        let Value::Array(mut parts) = reply else {
            return Err(bad_reply(operation, "a SCAN reply that is not an array"));
        };
        let (Some(Value::Array(found)), Some(next)) = (parts.pop(), parts.pop()) else {
            return Err(bad_reply(operation, "a SCAN reply without cursor and keys"));
        };
        let next = text(&next).ok_or_else(|| bad_reply(operation, "a SCAN cursor"))?;
        if next != "0" {
            walk.cursor = Some(next);
        }
        let keys: Vec<String> = found.iter().filter_map(text).collect();

        let mut pipeline = redis::pipe();
        pipeline.cmd("TIME");
        pipeline
            .cmd("FCALL")
            .arg(scripts::FIELDS)
            .arg(keys.len())
            .arg(&keys[..]);
        if with_sizes {
            for key in &keys {
                pipeline.cmd("MEMORY").arg("USAGE").arg(key);
            }
        }
        // A server that forgot the library is sent it, then the pipeline again.
        let replies = self
            .timed(operation, self.commands.run_pipeline(&pipeline))
            .await?;
        let mut replies = replies.into_iter();
        let now = replies
            .next()
            .as_ref()
            .and_then(server_micros)
            .ok_or_else(|| bad_reply(operation, "a TIME reply"))?;
        let fields: Vec<Option<String>> = match replies.next() {
            Some(Value::Array(values)) if values.len() == 5 * keys.len() => values
                .iter()
                .map(|value| match value {
                    Value::Nil | Value::Boolean(false) => None,
                    other => text(other),
                })
                .collect(),
            _ => return Err(bad_reply(operation, "the fields of a SCAN step's records")),
        };
        let mut records = Vec::with_capacity(keys.len());
        for (key, fields) in keys.into_iter().zip(fields.chunks(5)) {
            let size = if with_sizes {
                match replies.next() {
                    Some(Value::Int(bytes)) => u64::try_from(bytes).ok(),
                    _ => None,
                }
            } else {
                None
            };
            records.push((key, standing(fields, now), size));
        }
        Ok(Some(Step { now, records }))
    }

    async fn stats(&self) -> Result<StoreStats, Error> {
        let mut stats = StoreStats::default();
        let mut walk = Walk::new(&self.namespace);
        let mut size = Some(0u64);
        let mut oldest_claim: Option<Duration> = None;
        let mut nearest_expiry: Option<Duration> = None;
        while let Some(step) = self.step("stats", &mut walk, true).await? {
            for (_, standing, bytes) in step.records {
                let Some(standing) = standing else { continue };
                size = size.zip(bytes).map(|(total, bytes)| total + bytes);
                match standing {
                    Standing::InFlight { claimed_at } => {
                        stats.in_flight += 1;
                        let age = Duration::from_micros(step.now.saturating_sub(claimed_at));
                        oldest_claim = Some(oldest_claim.map_or(age, |oldest| oldest.max(age)));
                    }
                    Standing::Lapsed => stats.lapsed += 1,
                    Standing::Completed { gone_at } => {
                        stats.completed += 1;
                        let left = Duration::from_micros(gone_at - step.now);
                        nearest_expiry =
                            Some(nearest_expiry.map_or(left, |nearest| nearest.min(left)));
                    }
                    Standing::Gone => stats.purgeable += 1,
                }
            }
        }
        stats.oldest_claim = oldest_claim;
        stats.nearest_expiry = nearest_expiry;
        stats.size_bytes = size;
        Ok(stats)
    }

    async fn purge_batch(&self, limit: usize) -> Result<u64, Error> {
        let mut deleted = 0u64;
        if limit == 0 {
            return Ok(0);
        }
        let mut walk = Walk::new(&self.namespace);
        while let Some(step) = self.step("purge", &mut walk, false).await? {
            for (key, standing, _) in step.records {
                if standing != Some(Standing::Gone) {
                    continue;
                }
                let delete = fcall(scripts::PURGE, &key);
                // A server that forgot the library is sent it, then the call again.
                if let Value::Int(1) = self.timed("purge", self.commands.run(&delete)).await? {
                    deleted += 1;
                    if deleted as usize >= limit {
                        return Ok(deleted);
                    }
                }
            }
        }
        Ok(deleted)
    }
}

/// Stats and purge by walking the namespace: see the module docs above for what a purge
/// means on Redis, where every record expires by itself.
impl Operator for RedisBackend {
    /// Counts the namespace's records by state, by the server's clock; `size_bytes` is
    /// the sum of `MEMORY USAGE` over them (`None` if the server would not say).
    async fn stats(&self) -> Result<StoreStats, Error> {
        let inner = self.inner.clone();
        self.inner
            .runtime
            .drive(async move { inner.stats().await })
            .await
    }

    /// Deletes at most `limit` records that are gone but whose keys are still there
    /// (see the module docs: Redis deletes the others itself).
    async fn purge_batch(&self, limit: usize) -> Result<u64, Error> {
        let inner = self.inner.clone();
        self.inner
            .runtime
            .drive(async move { inner.purge_batch(limit).await })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(values: [&str; 5]) -> Vec<Option<String>> {
        values
            .iter()
            .map(|value| (!value.is_empty()).then(|| (*value).to_owned()))
            .collect()
    }

    #[test]
    fn records_stand_by_the_servers_clock() {
        let claim = fields(["1", "claimed", "100", "200", "300"]);
        assert_eq!(
            standing(&claim, 150),
            Some(Standing::InFlight { claimed_at: 100 })
        );
        assert_eq!(
            standing(&claim, 200),
            Some(Standing::InFlight { claimed_at: 100 })
        );
        assert_eq!(standing(&claim, 201), Some(Standing::Lapsed));
        assert_eq!(standing(&claim, 300), Some(Standing::Lapsed));
        assert_eq!(standing(&claim, 301), Some(Standing::Gone));
        let done = fields(["1", "completed", "100", "900", "900"]);
        assert_eq!(
            standing(&done, 500),
            Some(Standing::Completed { gone_at: 900 })
        );
        assert_eq!(standing(&done, 901), Some(Standing::Gone));
        // Layout 2's instants read the same.
        let claim = fields(["2", "claimed", "100", "200", "300"]);
        assert_eq!(
            standing(&claim, 150),
            Some(Standing::InFlight { claimed_at: 100 })
        );
        assert_eq!(standing(&claim, 301), Some(Standing::Gone));
    }

    #[test]
    fn hashes_that_are_not_records_stand_nowhere() {
        assert_eq!(standing(&fields(["4", "claimed", "1", "2", "3"]), 0), None);
        assert_eq!(standing(&fields(["2", "c", "1", "2", "3"]), 0), None);
        assert_eq!(standing(&fields(["2", "claimed", "+1", "2", "3"]), 0), None);
        assert_eq!(standing(&fields(["1", "odd", "1", "2", "3"]), 0), None);
        assert_eq!(standing(&fields(["1", "claimed", "x", "2", "3"]), 0), None);
        assert_eq!(standing(&fields(["", "", "", "", ""]), 0), None);
        assert_eq!(standing(&[], 0), None);
    }

    #[test]
    fn the_pattern_matches_only_this_namespace() {
        assert_eq!(Walk::new("idemkit").pattern, "idemkit:{*}");
        assert_eq!(Walk::new("a*b?[c]\\").pattern, "a\\*b\\?\\[c\\]\\\\:{*}");
    }
}
