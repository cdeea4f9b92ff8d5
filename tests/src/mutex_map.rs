//! [`MutexMap`]: a whole idempotency backend in a page, written outside `idemkit-core`
//! against its public API only: a `Mutex<HashMap>` of public [`Record`]s, one event that
//! every change notifies, and waits that poll as a floor. It implements both backend
//! traits and passes the conformance suite, which is what shows that the core is open to
//! other stores (a networked one looks the same, with the map on a server).
//!
//! It is simple rather than fast: a claim of a new key sweeps the whole map for records
//! that are gone, and every change wakes every waiter to re-read its key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use event_listener::{Event, EventListener};
use idemkit_core::{
    Backend, Claim, ClaimToken, Clock, Error, ManualClock, PollSchedule, Record, Response, State,
    SystemClock, ThreadTimer, Timer,
};

/// A backend over a `Mutex<HashMap>`. Clones share one map.
#[derive(Clone)]
pub struct MutexMap {
    shared: Arc<Shared>,
}

struct Shared {
    records: Mutex<HashMap<String, Record>>,
    /// Notified by every completion, release and claim that replaces a record.
    changed: Event,
    max_size: usize,
    reclaim_grace: Duration,
    clock: Arc<dyn Clock>,
    timer: Arc<dyn Timer>,
    /// Whether `changed` is never notified (see [`MutexMap::without_wakeups`]).
    silent: bool,
}

/// What a waiter finds.
enum Found {
    /// The wait is over: the completed record, or `None`.
    Done(Option<Record>),
    /// A live claim, whose lease has this long left.
    Claimed(Duration),
}

/// `now + duration`, saturating at four centuries: "never", for a test backend.
fn later(now: Instant, duration: Duration) -> Instant {
    const FOUR_CENTURIES: Duration = Duration::from_secs(400 * 365 * 86_400);
    now.checked_add(duration)
        .or_else(|| now.checked_add(FOUR_CENTURIES))
        .unwrap_or(now)
}

impl MutexMap {
    /// An empty map holding at most `max_size` records, keeping lapsed claims for
    /// `reclaim_grace`, on the system clock.
    pub fn new(max_size: usize, reclaim_grace: Duration) -> MutexMap {
        MutexMap {
            shared: Arc::new(Shared {
                records: Mutex::new(HashMap::new()),
                changed: Event::new(),
                max_size,
                reclaim_grace,
                clock: Arc::new(SystemClock),
                timer: Arc::new(ThreadTimer),
                silent: false,
            }),
        }
    }

    /// This (still empty) map, with leases and TTLs on `clock`.
    pub fn on_clock(self, clock: ManualClock) -> MutexMap {
        let shared = Arc::into_inner(self.shared).expect("a fresh map has no clones");
        MutexMap {
            shared: Arc::new(Shared {
                clock: Arc::new(clock),
                ..shared
            }),
        }
    }

    /// This (still empty) map, with its waits' re-reads and time-outs on `timer` (a
    /// [`FrozenTimer`](crate::FrozenTimer) for the wake vectors).
    pub fn on_timer(self, timer: impl Timer) -> MutexMap {
        let shared = Arc::into_inner(self.shared).expect("a fresh map has no clones");
        MutexMap {
            shared: Arc::new(Shared {
                timer: Arc::new(timer),
                ..shared
            }),
        }
    }

    /// This (still empty) map, waking no waiter ever: they find out only by re-reading.
    /// A broken backend, for the suite's own tests (its wake vectors must fail on it
    /// when its timers are frozen).
    pub fn without_wakeups(self) -> MutexMap {
        let shared = Arc::into_inner(self.shared).expect("a fresh map has no clones");
        MutexMap {
            shared: Arc::new(Shared {
                silent: true,
                ..shared
            }),
        }
    }

    /// Wakes every waiter, unless this map was built [without](MutexMap::without_wakeups).
    fn wake_all(&self) {
        if !self.shared.silent {
            self.shared.changed.notify(usize::MAX);
        }
    }

    /// Records held, lapsed and expired ones not dropped yet included.
    pub fn len(&self) -> usize {
        self.records().len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn records(&self) -> MutexGuard<'_, HashMap<String, Record>> {
        // No code panics while holding the lock; keep the map if a test thread did.
        self.shared
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `record` is gone at `now`: an expired result, or a lapsed claim past the
    /// reclaim grace.
    fn is_gone(&self, record: &Record, now: Instant) -> bool {
        match record.state() {
            State::Completed => record.lease_until() < now,
            State::Claimed => later(record.lease_until(), self.shared.reclaim_grace) < now,
        }
    }

    /// The token's claim on `key`, if it holds one at `now`.
    fn held<'a>(
        &self,
        records: &'a mut HashMap<String, Record>,
        key: &str,
        token: &ClaimToken,
        now: Instant,
    ) -> Option<&'a mut Record> {
        let record = records.get_mut(key)?;
        let held = record.state() == State::Claimed
            && record.claim_token() == token
            && !self.is_gone(record, now);
        held.then_some(record)
    }

    fn claim_now(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        let now = self.shared.clock.now();
        let mut records = self.records();
        records.retain(|_, record| !self.is_gone(record, now));
        let reclaimed = match records.get(key) {
            Some(record) if record.state() == State::Completed => {
                return Ok(Claim::found(
                    record.clone(),
                    fingerprint,
                    fingerprint_version,
                ));
            }
            Some(record) if now <= record.lease_until() => {
                return Ok(Claim::InFlight(record.clone()));
            }
            Some(_) => true,
            None if records.len() >= self.shared.max_size => {
                return Err(Error::Full {
                    max_size: self.shared.max_size,
                });
            }
            None => false,
        };
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(Error::storage)?;
        let token = ClaimToken::from_bytes(bytes);
        let record = Record::claimed(
            key,
            fingerprint,
            fingerprint_version,
            token.clone(),
            now,
            later(now, lease_ttl),
        );
        records.insert(key.to_owned(), record);
        drop(records);
        if reclaimed {
            self.wake_all();
            Ok(Claim::Reclaimed(token))
        } else {
            Ok(Claim::New(token))
        }
    }

    fn complete_now(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> bool {
        let now = self.shared.clock.now();
        let mut records = self.records();
        let Some(record) = self.held(&mut records, key, token, now) else {
            return false;
        };
        *record = record
            .clone()
            .into_completed(now, later(now, expires_after), response);
        drop(records);
        self.wake_all();
        true
    }

    fn release_now(&self, key: &str, token: &ClaimToken) -> bool {
        let now = self.shared.clock.now();
        let mut records = self.records();
        if self.held(&mut records, key, token, now).is_none() {
            return false;
        }
        records.remove(key);
        drop(records);
        self.wake_all();
        true
    }

    fn renew_now(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> bool {
        let now = self.shared.clock.now();
        let mut records = self.records();
        let Some(record) = self.held(&mut records, key, token, now) else {
            return false;
        };
        *record = Record::claimed(
            record.key(),
            record.fingerprint(),
            record.fingerprint_version(),
            token.clone(),
            record.claimed_at(),
            later(now, lease_ttl),
        );
        true
    }

    fn get_now(&self, key: &str) -> Option<Record> {
        let now = self.shared.clock.now();
        let records = self.records();
        records
            .get(key)
            .filter(|record| !self.is_gone(record, now))
            .cloned()
    }

    /// Listens for the next change, then reads the key: subscribed before it reads, so no
    /// change between the two is missed.
    fn look(&self, key: &str) -> (Found, EventListener) {
        let listener = self.shared.changed.listen();
        let now = self.shared.clock.now();
        let found = match self.get_now(key) {
            None => Found::Done(None),
            Some(record) if record.state() == State::Completed => Found::Done(Some(record)),
            // A lapsed lease: its owner has probably crashed; the caller may claim.
            Some(record) if record.lease_until() < now => Found::Done(None),
            Some(record) => Found::Claimed(record.lease_until() - now),
        };
        (found, listener)
    }

    async fn wait_async(&self, key: &str, timeout: Duration) -> Option<Record> {
        let timer = &self.shared.timer;
        let deadline = timer.now().checked_add(timeout);
        let mut polls = PollSchedule::new();
        loop {
            let (found, listener) = self.look(key);
            let lease_left = match found {
                Found::Done(record) => return record,
                Found::Claimed(lease_left) => lease_left,
            };
            let left = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(timer.now()));
            if left.is_zero() {
                return None;
            }
            let within = polls.next_park(lease_left).min(left);
            futures_lite::future::or(listener, timer.sleep(within)).await;
        }
    }
}

impl Backend for MutexMap {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.claim_now(key, fingerprint, fingerprint_version, lease_ttl)
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        Ok(self.complete_now(key, token, response, expires_after))
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        Ok(self.release_now(key, token))
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        Ok(self.renew_now(key, token, lease_ttl))
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        Ok(self.wait_async(key, timeout).await)
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        Ok(self.get_now(key))
    }

    fn now(&self) -> Instant {
        self.shared.clock.now()
    }

    fn timer(&self) -> Arc<dyn Timer> {
        Arc::clone(&self.shared.timer)
    }
}

impl std::fmt::Debug for MutexMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutexMap")
            .field("len", &self.records().len())
            .finish_non_exhaustive()
    }
}
