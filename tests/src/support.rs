//! Small helpers the vectors share: backends, claims taken apart, responses, polling.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, Completed, ManualClock, Record, Response};

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::target::{ManualTime, Settings, Target};

/// The fingerprint vectors claim with, unless they test fingerprints.
pub const FINGERPRINT: &str = "sha256:0f1e2d";

/// A lease no vector outlives in real time.
pub const LONG: Duration = Duration::from_secs(3600);

/// A wait timeout far longer than any vector should take to wake.
pub const PATIENT: Duration = Duration::from_secs(30);

/// A backend of target `T` on a [`ManualClock`], and the clock to move it. The target's
/// [`after_vector`](Target::after_vector) gets it when the vector ends.
pub fn manual<T: ManualTime>(settings: Settings) -> (T::Backend, ManualClock) {
    let clock = ManualClock::new();
    (manual_on::<T>(settings, clock.clone()), clock)
}

/// A backend of target `T` on `clock`. The target's
/// [`after_vector`](Target::after_vector) gets it when the vector ends.
pub fn manual_on<T: ManualTime>(settings: Settings, clock: ManualClock) -> T::Backend {
    let backend = T::build_on(settings, clock);
    crate::teardown::built::<T>(&backend);
    backend
}

/// A backend of target `T` on real time. The target's
/// [`after_vector`](Target::after_vector) gets it when the vector ends.
pub fn real<T: Target>(settings: Settings) -> T::Backend {
    let backend = T::build(settings);
    crate::teardown::built::<T>(&backend);
    backend
}

/// A backend of target `T` whose timers never fire, if the target can build one (see
/// [`Target::build_frozen`]). The target's [`after_vector`](Target::after_vector) gets it
/// when the vector ends.
pub fn frozen<T: Target>(settings: Settings) -> Option<T::Backend> {
    let backend = T::build_frozen(settings)?;
    crate::teardown::built::<T>(&backend);
    Some(backend)
}

/// A backend of target `T` on `clock` whose timers never fire, if the target can build
/// one (see [`ManualTime::build_frozen_on`]).
pub fn frozen_on<T: ManualTime>(settings: Settings, clock: ManualClock) -> Option<T::Backend> {
    let backend = T::build_frozen_on(settings, clock)?;
    crate::teardown::built::<T>(&backend);
    Some(backend)
}

/// A response with a status, a header and a body, so replays can be compared whole.
pub fn response(body: &str) -> Response {
    Response::new(201, body.to_owned()).with_header("content-type", "text/plain")
}

/// Checks that `backend` holds `expected` records, if it can tell.
#[track_caller]
pub fn assert_len<B: ConformanceBackend>(backend: &B, expected: usize) {
    if let Some(len) = backend.held_records() {
        assert_eq!(len, expected, "records held");
    }
}

/// Checks that `expected` keys have waiter entries in `backend`, if it can tell.
#[track_caller]
pub fn assert_watched<B: ConformanceBackend>(backend: &B, expected: usize) {
    if let Some(watched) = backend.watched_keys() {
        assert_eq!(watched, expected, "keys with waiter entries");
    }
}

/// How long a vector lets a waiter settle into its wait on a backend that cannot show
/// its waiters: far longer than a task or thread takes to start waiting.
pub const UNOBSERVED_SETTLE: Duration = Duration::from_millis(500);

/// Returns once `expected` keys have waiter entries in `backend` (panicking after
/// [`PATIENT`]); on a backend that cannot tell, once [`UNOBSERVED_SETTLE`] has passed.
pub async fn until_watched<R: Runtime, B: ConformanceBackend>(backend: &B, expected: usize) {
    if backend.watched_keys().is_none() {
        R::sleep(UNOBSERVED_SETTLE).await;
        return;
    }
    eventually::<R>("the waiters are parked", PATIENT, || {
        backend.watched_keys() == Some(expected)
    })
    .await;
}

/// Whether `backend` holds `expected` records; true if it cannot tell.
pub fn len_is<B: ConformanceBackend>(backend: &B, expected: usize) -> bool {
    backend.held_records().is_none_or(|len| len == expected)
}

/// A token no claim was given.
pub fn forged_token() -> ClaimToken {
    ClaimToken::from_bytes([0x5a; 16])
}

/// The token of a [`Claim::New`]; panics on anything else.
#[track_caller]
pub fn expect_new(claim: Claim) -> ClaimToken {
    match claim {
        Claim::New(token) => token,
        other => panic!("expected Claim::New, got {other:?}"),
    }
}

/// The token of a [`Claim::Reclaimed`]; panics on anything else.
#[track_caller]
pub fn expect_reclaimed(claim: Claim) -> ClaimToken {
    match claim {
        Claim::Reclaimed(token) => token,
        other => panic!("expected Claim::Reclaimed, got {other:?}"),
    }
}

/// The record of a [`Claim::InFlight`]; panics on anything else.
#[track_caller]
pub fn expect_in_flight(claim: Claim) -> Record {
    match claim {
        Claim::InFlight(record) => record,
        other => panic!("expected Claim::InFlight, got {other:?}"),
    }
}

/// What a [`Claim::Completed`] hands back; panics on anything else.
#[track_caller]
pub fn expect_completed(claim: Claim) -> Completed {
    match claim {
        Claim::Completed(replay) => replay,
        other => panic!("expected Claim::Completed, got {other:?}"),
    }
}

/// Polls `condition` every 5 ms until it holds; panics naming `what` if it still does not
/// after `within` of real time.
pub async fn eventually<R: Runtime>(what: &str, within: Duration, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(
            start.elapsed() < within,
            "{what}: still not true after {within:?}"
        );
        R::sleep(Duration::from_millis(5)).await;
    }
}

/// A starting line for concurrent tasks: each waits at it until all have arrived, so they
/// then run into the backend together rather than one after another as they were
/// spawned.
#[derive(Debug, Default)]
pub struct StartGate {
    arrived: AtomicUsize,
    open: AtomicBool,
}

impl StartGate {
    /// Arrives at the gate and waits, yielding, until it opens.
    pub async fn pass(&self) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        while !self.open.load(Ordering::SeqCst) {
            futures_lite::future::yield_now().await;
        }
    }

    /// Opens the gate once `count` tasks have arrived.
    pub async fn open_when<R: Runtime>(&self, count: usize) {
        eventually::<R>("every task reached the gate", PATIENT, || {
            self.arrived.load(Ordering::SeqCst) == count
        })
        .await;
        self.open.store(true, Ordering::SeqCst);
    }
}
