//! [`RedisBackend`]: each operation one command on the server (a function, or for a
//! claim first a plain `SET`), within the command timeout; the async and blocking traits
//! are thin layers over these.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, Error, Record, Response};
use redis::{Cmd, Value};

use crate::claim_fields::ClaimFields;
use crate::commands::{Commands, NUMBER_LEN, fcall, fcall_with_room};
use crate::corrupt::{CorruptRecord, OnCorrupt, report};
use crate::digits::Padded;
use crate::error::{Cause, RedisError};
use crate::headers::{self, HeadersAndBody};
use crate::joined_arg::JoinedArg;
use crate::layout::Layout;
use crate::own_claims::{OwnClaims, WrittenClaim};
use crate::record::to_record;
use crate::releases::PendingReleases;
use crate::reply::{self, ClaimReply, Decoded, ReadReply, Stored, Undecodable};
use crate::responses::SharedResponses;
use crate::runtime::{Elapsed, OnRuntime};
use crate::scripts;
use crate::server_clock::{ServerClock, ServerNow, micros};
use crate::token;
use crate::wakeups::Wakeups;

/// How many claims one `claim` sends at most: a completed record whose response does not
/// decode costs a second one, which replaces it (a third covers it changing meanwhile).
const CLAIM_ATTEMPTS: usize = 3;

/// The statuses a stored response may have: HTTP's three digits, the three digits a
/// record holds it in. A stored record with any other is corrupt (absent, reported), like
/// any broken field.
const STORED_STATUSES: std::ops::RangeInclusive<u16> = 100..=999;

/// The first pause between two tries of a release the backend owes (see
/// [`Inner::release_later`]); each later pause doubles, up to [`RELEASE_RETRY_MAX`].
const RELEASE_RETRY_FIRST: Duration = Duration::from_millis(50);

/// The longest pause between two tries of a release the backend owes.
const RELEASE_RETRY_MAX: Duration = Duration::from_secs(1);

/// How long the backend keeps trying to release the claim of a completion that failed.
/// The claim's lease is not known there; ten minutes outlasts any lease a service would
/// set plus the default reclaim grace, after which the key is gone by itself.
const FAILED_COMPLETION_RELEASE_HORIZON: Duration = Duration::from_secs(600);

/// An idempotency backend on Redis: every process that shares the server (and
/// namespace) shares the records, so one key runs once across all of them.
///
/// Leases and expiry are judged by the server's clock. It implements the async
/// [`Backend`](idemkit_core::Backend) (on tokio or smol) and
/// [`BlockingBackend`](idemkit_core::BlockingBackend); clones share one connection, one
/// subscription and one configuration. Build it with [`RedisBackend::builder`].
#[derive(Clone)]
pub struct RedisBackend {
    pub(crate) inner: Arc<Inner>,
}

/// Replicas a write must reach before it is reported done (`WAIT`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Replicas {
    pub(crate) count: u32,
    pub(crate) timeout: Duration,
}

pub(crate) struct Inner {
    pub(crate) commands: Commands,
    pub(crate) wakeups: Wakeups,
    pub(crate) layout: Layout,
    pub(crate) namespace: String,
    pub(crate) reclaim_grace: Duration,
    pub(crate) command_timeout: Duration,
    pub(crate) replicas: Option<Replicas>,
    pub(crate) on_corrupt: Option<OnCorrupt>,
    pub(crate) clock: ServerClock,
    pub(crate) responses: SharedResponses,
    /// The claims this backend wrote itself and has not finished, for their completions.
    pub(crate) own_claims: OwnClaims,
    /// The runtime the connections run on, which runs the backend's background work and
    /// times its limits (see the crate docs' "Runtimes").
    pub(crate) runtime: OnRuntime,
    pub(crate) releases: Arc<PendingReleases>,
}

/// When a command was sent and when its reply arrived.
#[derive(Clone, Copy)]
struct RoundTrip {
    sent: Instant,
    seen: Instant,
}

/// What a read found, as a waiter needs it.
pub(crate) enum Found {
    /// No record, one that is gone, or a value that is not a record.
    Nothing,
    /// A claim: how long its lease has left by the server's clock (`None`: lapsed).
    Claimed {
        record: Record,
        lease_left: Option<Duration>,
    },
    /// A completed record.
    Completed(Record),
}

/// What a claim's first try (see [`Inner::claim_free`]) settled.
enum FirstTry {
    /// The key was free and is now ours.
    Won,
    /// A completed record, to replay (or a conflict with it).
    Replay(Claim),
    /// Something only the claim function can judge.
    AskTheServer,
}

/// How long a completed record a claim's plain `SET` found must have left, by this
/// client's mapping of the server's clock, to be replayed without asking the server:
/// far beyond the mapping's error (at most [`TOLERANCE`](crate::server_clock::TOLERANCE)
/// plus a round trip, or the anchor is taken again), so that a record is never replayed
/// past its end; nearer it, the claim function judges by the server's `TIME`.
const REPLAY_MARGIN: Duration = Duration::from_secs(1);

/// The first bytes of a completed record (layout 2).
const COMPLETED: &[u8] = b"ik2d";

/// The time to live of a key whose record is gone `micros` from now: in milliseconds,
/// rounded up, plus one, so that the key outlives its record and expires just after it.
fn key_ttl_ms(micros: u64) -> u64 {
    micros.div_ceil(1000) + 1
}

fn storage(operation: &'static str, cause: Cause) -> Error {
    Error::storage(RedisError::new(operation, cause))
}

impl Inner {
    /// Sends `call`, an `FCALL` (see [`fcall`]), within the command timeout; the reply and
    /// when it arrived.
    async fn call(&self, operation: &'static str, call: &Cmd) -> Result<(Value, RoundTrip), Error> {
        let sent = Instant::now();
        match self
            .runtime
            .within(self.command_timeout, self.commands.run(call))
            .await
        {
            Ok(Ok(value)) => {
                let seen = Instant::now();
                Ok((value, RoundTrip { sent, seen }))
            }
            Ok(Err(error)) => Err(storage(operation, Cause::Redis(error))),
            Err(Elapsed) => Err(storage(operation, Cause::TimedOut(self.command_timeout))),
        }
    }

    /// With the `WAIT` option: waits until the configured number of replicas acknowledged
    /// the write just made to `storage_key`, or reports that they did not.
    async fn replicate(&self, operation: &'static str, storage_key: &str) -> Result<(), Error> {
        let Some(replicas) = self.replicas else {
            return Ok(());
        };
        let limit = replicas.timeout.saturating_add(self.command_timeout);
        // Boxed: the wait holds a cluster's routed command, several kilobytes, which
        // every claim and completion future would otherwise carry (and copy) unused.
        let wait = Box::pin(self.commands.wait_for_replicas(
            storage_key,
            replicas.count,
            replicas.timeout,
        ));
        let waited = self.runtime.within(limit, wait).await;
        match waited {
            Ok(Ok(acknowledged)) if acknowledged >= i64::from(replicas.count) => Ok(()),
            Ok(Ok(acknowledged)) => Err(storage(
                operation,
                Cause::TooFewReplicas {
                    acknowledged,
                    wanted: replicas.count,
                },
            )),
            Ok(Err(error)) => Err(storage(operation, Cause::Redis(error))),
            Err(Elapsed) => Err(storage(operation, Cause::TimedOut(limit))),
        }
    }

    /// Waits for a release of `key` this backend has in flight, if any.
    pub(crate) async fn settled(&self, key: &str) {
        self.releases
            .settled(key, self.runtime.as_timer(), self.command_timeout)
            .await;
    }

    fn record(
        &self,
        key: &str,
        storage_key: &str,
        stored: Stored,
        now: &ServerNow,
    ) -> Result<Record, Undecodable> {
        to_record(key, storage_key, stored, now, &self.responses)
    }

    /// The record of a value the server returned, or why this client cannot read it.
    fn decoded(
        &self,
        key: &str,
        storage_key: &str,
        decoded: Decoded,
        now: &ServerNow,
    ) -> Result<Record, Undecodable> {
        self.record(key, storage_key, decoded?, now)
    }

    fn corrupt(&self, key: &str, storage_key: &str, reason: String, overwritten: bool) {
        let record = CorruptRecord {
            key: key.to_owned(),
            storage_key: storage_key.to_owned(),
            reason,
            overwritten,
        };
        report(record, self.on_corrupt.as_ref());
    }

    /// Claims `key`. When the claim fails after it was sent (no reply in time, a lost
    /// connection, a reply that cannot be read), it may still have landed, holding the key
    /// for a token only this backend knows: the backend releases that token once the
    /// server answers again, so the key does not stay in flight for a whole lease.
    pub(crate) async fn claim(
        self: &Arc<Self>,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.settled(key).await;
        let token = token::fresh().map_err(Error::storage)?;
        let claimed = self
            .claim_with(key, &token, fingerprint, fingerprint_version, lease_ttl)
            .await;
        if claimed.is_err() {
            self.release_later(key, &token, lease_ttl.saturating_add(self.reclaim_grace));
        }
        claimed
    }

    /// Releases `token`'s claim of `key` in the background, trying again (with growing
    /// pauses) until the server answers or `horizon` has passed, after which the claim
    /// is gone by itself. Releasing is fenced, so a token whose claim never landed, or
    /// whose record was completed after all, changes nothing. Until it is done, this
    /// backend's later operations on `key` wait for it (at most the command timeout each).
    fn release_later(self: &Arc<Self>, key: &str, token: &ClaimToken, horizon: Duration) {
        let pending = self.releases.begin(key);
        let (inner, key, token) = (self.clone(), key.to_owned(), token.clone());
        let give_up = Instant::now().checked_add(horizon);
        self.runtime.spawn(async move {
            let _pending = pending;
            let mut pause = RELEASE_RETRY_FIRST;
            loop {
                if inner.release(&key, &token).await.is_ok() {
                    return;
                }
                if give_up.is_some_and(|at| Instant::now() + pause > at) {
                    return;
                }
                inner.runtime.sleep(pause).await;
                pause = (pause * 2).min(RELEASE_RETRY_MAX);
            }
        });
    }

    async fn claim_with(
        &self,
        key: &str,
        token: &ClaimToken,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        let storage_key = self.layout.storage_key(key);
        let mut token_hex = [0; 32];
        let token_text = token.write_hex(&mut token_hex);
        let (lease, grace) = (micros(lease_ttl), micros(self.reclaim_grace));
        let expires = key_ttl_ms(lease + grace);
        // The client's claim keeps its record until its key expires: the claim is made
        // in the last microsecond of a millisecond (see `claim_free`), so the time from
        // its lease's end to the key's expiry is this (at least the reclaim grace).
        let to_expiry = (expires * 1000).saturating_sub(999 + lease);
        let written = ClaimFields::new(lease, to_expiry, fingerprint, fingerprint_version);
        let first = self
            .claim_free(
                key,
                &storage_key,
                &written.client_claim(token_text, &Padded::new(expires, 16)),
                expires,
                (fingerprint, fingerprint_version),
            )
            .await?;
        match first {
            FirstTry::Won => {
                // Kept before the write is confirmed to replicas: a claim that fails
                // there is released, which forgets it.
                self.own_claims.insert(
                    token,
                    WrittenClaim {
                        fields: written,
                        expires_ms: expires,
                    },
                );
                self.replicate("claim", &storage_key).await?;
                return Ok(Claim::New(token.clone()));
            }
            FirstTry::Replay(claim) => return Ok(claim),
            FirstTry::AskTheServer => {}
        }
        let rest = ClaimFields::new(lease, grace, fingerprint, fingerprint_version);
        let mut replacing: Option<Undecodable> = None;
        for _ in 0..CLAIM_ATTEMPTS {
            let mut call = fcall(scripts::CLAIM, &storage_key);
            call.arg(token_text).arg(rest.as_str()).arg(expires);
            match &replacing {
                Some(undecodable) => call.arg(&undecodable.token[..]).arg(&undecodable.reason),
                None => call.arg("").arg(""),
            };
            let (value, trip) = self.call("claim", &call).await?;
            let (reply, now) =
                reply::claim(value).map_err(|bad| storage("claim", Cause::BadReply(bad.0)))?;
            let now = self.clock.observe(now, trip.sent, trip.seen);
            let found = match reply {
                ClaimReply::Won {
                    reclaimed,
                    replaced,
                } => {
                    if let Some(reason) = replaced {
                        self.corrupt(key, &storage_key, reason, true);
                    }
                    self.replicate("claim", &storage_key).await?;
                    return Ok(if reclaimed {
                        Claim::Reclaimed(token.clone())
                    } else {
                        Claim::New(token.clone())
                    });
                }
                ClaimReply::InFlight(decoded) => self
                    .decoded(key, &storage_key, decoded, &now)
                    .map(Claim::InFlight),
                ClaimReply::Completed(decoded) => self
                    .decoded(key, &storage_key, decoded, &now)
                    .map(|record| Claim::found(record, fingerprint, fingerprint_version)),
            };
            match found {
                Ok(claim) => return Ok(claim),
                // Not readable here: claim again, replacing exactly it.
                Err(undecodable) => replacing = Some(undecodable),
            }
        }
        Err(storage(
            "claim",
            Cause::BadReply("the record kept being replaced by ones that do not decode".into()),
        ))
    }

    /// A claim's first try, which runs no function: `SET <storage_key> <claim> NX PX
    /// <expires> GET`, the claim (`value`) written by the client in layout 3 (see
    /// `scripts/library.lua` and [`ClaimFields::client_claim`]), the key's expiry set by
    /// the server's clock. A free key is then ours, and a completed record comes back,
    /// replayed at once if it has more than [`REPLAY_MARGIN`] left by the mapped server
    /// clock. Anything else (a claim whose lease the server must judge, a value that is
    /// not a record, a record this client cannot read, a record near its end) is left
    /// for the claim function, which judges it by the server's `TIME`.
    async fn claim_free(
        &self,
        key: &str,
        storage_key: &str,
        value: &JoinedArg<'_, 4>,
        expires: u64,
        (fingerprint, fingerprint_version): (&str, u32),
    ) -> Result<FirstTry, Error> {
        // Room for all seven arguments, so that adding them does not grow the command.
        let mut set = Cmd::with_capacity(
            7,
            "SET".len() + storage_key.len() + value.len() + "NXPXGET".len() + NUMBER_LEN,
        );
        set.arg("SET")
            .arg(storage_key)
            .arg(value)
            .arg("NX")
            .arg("PX")
            .arg(expires)
            .arg("GET");
        let found = match self
            .runtime
            .within(self.command_timeout, self.commands.send(&set))
            .await
        {
            Ok(Ok(Value::Nil)) => return Ok(FirstTry::Won),
            Ok(Ok(Value::BulkString(found))) => found,
            Ok(Ok(_)) => return Ok(FirstTry::AskTheServer),
            // Not a string: a layout 1 hash, or not a record.
            Ok(Err(error)) if error.code() == Some("WRONGTYPE") => {
                return Ok(FirstTry::AskTheServer);
            }
            Ok(Err(error)) => return Err(storage("claim", Cause::Redis(error))),
            Err(Elapsed) => return Err(storage("claim", Cause::TimedOut(self.command_timeout))),
        };
        if !found.starts_with(COMPLETED) {
            return Ok(FirstTry::AskTheServer);
        }
        let Ok(Ok(stored)) = reply::decode(found.into(), true) else {
            return Ok(FirstTry::AskTheServer);
        };
        let Some(now) = self.clock.estimate(Instant::now()) else {
            return Ok(FirstTry::AskTheServer);
        };
        if now.micros().saturating_add(micros(REPLAY_MARGIN)) >= stored.gone_at {
            return Ok(FirstTry::AskTheServer);
        }
        Ok(match self.record(key, storage_key, stored, &now) {
            Ok(record) => FirstTry::Replay(Claim::found(record, fingerprint, fingerprint_version)),
            Err(_) => FirstTry::AskTheServer,
        })
    }

    /// Stores `response` for `token`'s claim of `key`. When that fails, the claim is
    /// released in the background once the server answers again (see
    /// [`Inner::release_later`]), so a retry runs again instead of waiting out the lease;
    /// a completion that landed after all is not undone by it.
    pub(crate) async fn complete(
        self: &Arc<Self>,
        key: &str,
        token: &ClaimToken,
        response: &Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        self.settled(key).await;
        if !STORED_STATUSES.contains(&response.status) {
            // A record with any other status is corrupt when read: refuse it up front.
            self.release_later(key, token, FAILED_COMPLETION_RELEASE_HORIZON);
            return Err(storage("complete", Cause::Unstorable(response.status)));
        }
        let storage_key = self.layout.storage_key(key);
        // Remembered before it is sent: the server wakes this key's waiters before this
        // reply arrives, and a waiter that decoded the result first would otherwise hold
        // an allocation of its own. Only a record this token stored, equal to it, is
        // ever matched with it, so a completion that fails leaves nothing wrong behind.
        self.responses.remember(&storage_key, token, response);
        match self
            .store_result(&storage_key, token, response, expires_after)
            .await
        {
            Ok(stored) => Ok(stored),
            Err(error) => {
                self.release_later(key, token, FAILED_COMPLETION_RELEASE_HORIZON);
                Err(error)
            }
        }
    }

    /// The completion's write: by `idemkit_complete_own_claim` for a claim this backend
    /// wrote itself and still holds the fields of (it sends them, so the server cuts
    /// nothing out of the claim), else, or when that declines (the claim was renewed
    /// since, by a holder of its token elsewhere, or its key has no expiry), by
    /// `idemkit_complete`.
    async fn store_result(
        &self,
        storage_key: &str,
        token: &ClaimToken,
        response: &Response,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        let ttl = micros(expires_after);
        let ttl_digits = Padded::new(ttl, 16);
        let status = Padded::new(u64::from(response.status), 3);
        let headers_len = headers::encoded_len(&response.headers);
        let headers_len_digits = Padded::new(headers_len as u64, 10);
        // Written straight into the command, as are the result fields.
        let headers_and_body = HeadersAndBody {
            headers: &response.headers,
            body: &response.body,
        };
        let headers_and_body_len = headers_len + response.body.len();
        let mut token_hex = [0; 32];
        let token_text = token.write_hex(&mut token_hex);
        if let Some(written) = self.own_claims.take(token) {
            let lease_and_kept = written.fields.lease_and_kept();
            let result_fields =
                written
                    .fields
                    .result_fields(&ttl_digits, &status, &headers_len_digits);
            let mut call = fcall_with_room(
                scripts::COMPLETE_OWN_CLAIM,
                storage_key,
                6,
                token_text.len()
                    + NUMBER_LEN
                    + lease_and_kept.len()
                    + result_fields.len()
                    + headers_and_body_len
                    + NUMBER_LEN,
            );
            call.arg(token_text)
                .arg(written.expires_ms)
                .arg(lease_and_kept)
                .arg(&result_fields)
                .arg(&headers_and_body)
                .arg(key_ttl_ms(ttl));
            let (value, trip) = self.call("complete", &call).await?;
            if value != Value::Nil {
                return self.took_effect("complete", value, trip, storage_key).await;
            }
        }
        let ttl_and_status = JoinedArg([ttl_digits.as_bytes(), status.as_bytes()]);
        let mut call = fcall_with_room(
            scripts::COMPLETE,
            storage_key,
            5,
            token_text.len()
                + ttl_and_status.len()
                + headers_len_digits.as_bytes().len()
                + headers_and_body_len
                + NUMBER_LEN,
        );
        call.arg(token_text)
            .arg(&ttl_and_status)
            .arg(headers_len_digits.as_bytes())
            .arg(&headers_and_body)
            .arg(key_ttl_ms(ttl));
        self.write("complete", &call, storage_key).await
    }

    pub(crate) async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        self.own_claims.forget(token);
        let storage_key = self.layout.storage_key(key);
        let mut call = fcall(scripts::RELEASE, &storage_key);
        call.arg(token.write_hex(&mut [0; 32]));
        self.write("release", &call, &storage_key).await
    }

    pub(crate) async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        self.settled(key).await;
        // A renewal rewrites a client's claim in layout 2, which only `idemkit_complete`
        // completes.
        self.own_claims.forget(token);
        let storage_key = self.layout.storage_key(key);
        let mut call = fcall(scripts::RENEW, &storage_key);
        call.arg(token.write_hex(&mut [0; 32]))
            .arg(micros(lease_ttl))
            // 16 digits, as a record stores it ([`micros`] keeps it below 10^16).
            .arg(Padded::new(micros(self.reclaim_grace), 16).as_bytes())
            .arg(key_ttl_ms(micros(lease_ttl) + micros(self.reclaim_grace)));
        self.write("renew", &call, &storage_key).await
    }

    /// Complete, release or renew: whether the token held the key and the write was made
    /// (and, with the `WAIT` option, replicated).
    async fn write(
        &self,
        operation: &'static str,
        call: &Cmd,
        storage_key: &str,
    ) -> Result<bool, Error> {
        let (value, trip) = self.call(operation, call).await?;
        self.took_effect(operation, value, trip, storage_key).await
    }

    /// What a write's reply, `value`, says: whether it took effect (then, with the `WAIT`
    /// option, replicated).
    async fn took_effect(
        &self,
        operation: &'static str,
        value: Value,
        trip: RoundTrip,
        storage_key: &str,
    ) -> Result<bool, Error> {
        let (done, now) =
            reply::write(value).map_err(|bad| storage(operation, Cause::BadReply(bad.0)))?;
        self.clock.observe(now, trip.sent, trip.seen);
        if done {
            self.replicate(operation, storage_key).await?;
        }
        Ok(done)
    }

    /// Reads the record of `key`, stored at `storage_key`; for a waiter subscribed to its
    /// channel (`watching`), so that a completion after this read publishes.
    pub(crate) async fn find(
        &self,
        key: &str,
        storage_key: &str,
        watching: bool,
    ) -> Result<Found, Error> {
        let function = if watching {
            scripts::WATCH
        } else {
            scripts::READ
        };
        let call = fcall(function, storage_key);
        let (value, trip) = self.call("read", &call).await?;
        let (reply, now) =
            reply::read(value).map_err(|bad| storage("read", Cause::BadReply(bad.0)))?;
        let now = self.clock.observe(now, trip.sent, trip.seen);
        let stored = match reply {
            ReadReply::Absent { corrupt: None } => return Ok(Found::Nothing),
            ReadReply::Absent {
                corrupt: Some(reason),
            } => {
                self.corrupt(key, storage_key, reason, false);
                return Ok(Found::Nothing);
            }
            ReadReply::Present(Err(undecodable)) => {
                self.corrupt(key, storage_key, undecodable.reason, false);
                return Ok(Found::Nothing);
            }
            ReadReply::Present(Ok(stored)) => stored,
        };
        let lease_until = stored.lease_until;
        let claimed = stored.result.is_none();
        match self.record(key, storage_key, stored, &now) {
            Ok(record) if claimed => {
                let lease_left = (now.micros() <= lease_until).then(|| now.until(lease_until));
                Ok(Found::Claimed { record, lease_left })
            }
            Ok(record) => Ok(Found::Completed(record)),
            Err(undecodable) => {
                self.corrupt(key, storage_key, undecodable.reason, false);
                Ok(Found::Nothing)
            }
        }
    }

    pub(crate) async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        self.settled(key).await;
        let storage_key = self.layout.storage_key(key);
        Ok(match self.find(key, &storage_key, false).await? {
            Found::Nothing => None,
            Found::Claimed { record, .. } | Found::Completed(record) => Some(record),
        })
    }
}

impl RedisBackend {
    /// The Redis key that holds the record of `key`: `<namespace>:{<key>}`. Its wake-ups
    /// are published on a channel of the same name.
    ///
    /// ```
    /// # fn show(backend: &idemkit_redis::RedisBackend) {
    /// assert_eq!(backend.storage_key("abc"), format!("{}:{{abc}}", backend.namespace()));
    /// # }
    /// ```
    pub fn storage_key(&self, key: &str) -> String {
        self.inner.layout.storage_key(key)
    }

    /// The namespace every key of this backend starts with.
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// How long a claim whose lease lapsed is kept, so that the next claim reports it
    /// reclaimed (and the key expires after its lease plus this).
    pub fn reclaim_grace(&self) -> Duration {
        self.inner.reclaim_grace
    }

    /// The longest any one command may take before the operation fails.
    pub fn command_timeout(&self) -> Duration {
        self.inner.command_timeout
    }

    /// How many keys this process is waiting on right now (each has one subscription).
    pub fn watched_keys(&self) -> usize {
        self.inner.wakeups.watched()
    }
}

impl fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBackend")
            .field("namespace", &self.inner.namespace)
            .field("reclaim_grace", &self.inner.reclaim_grace)
            .field("command_timeout", &self.inner.command_timeout)
            .finish_non_exhaustive()
    }
}
