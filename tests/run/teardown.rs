//! The per-vector teardown hook: every backend a vector builds reaches its target's
//! `after_vector` once the vector ends, told whether it passed; a vector's own failure
//! survives the teardown, and a teardown's failure fails a vector that passed.

use std::sync::Mutex;

use idemkit_conformance::backend::Async;
use idemkit_conformance::runtimes::Threads;
use idemkit_conformance::support::{FINGERPRINT, LONG, real};
use idemkit_conformance::{Settings, Target};
use idemkit_core::{AsyncIdempotency, InMemoryBackend};

/// What the teardowns of [`Recorded`] saw: how many records each backend held, and
/// whether its vector passed.
static SEEN: Mutex<Vec<(usize, bool)>> = Mutex::new(Vec::new());

/// Serializes this file's tests: they share [`SEEN`].
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The in-memory backend, whose teardown records what it finds, and fails when it finds
/// a key named `leak`.
struct Recorded;

impl Target for Recorded {
    type Runtime = Threads;
    type Backend = Async<InMemoryBackend>;
    type Executor = AsyncIdempotency<InMemoryBackend>;

    fn build(_settings: Settings) -> Async<InMemoryBackend> {
        Async::new(InMemoryBackend::new())
    }

    fn after_vector(backend: &Async<InMemoryBackend>, passed: bool) {
        SEEN.lock().unwrap().push((backend.backend().len(), passed));
        let leaked = idemkit_core::BlockingBackend::get(backend.backend(), "leak").unwrap();
        assert!(leaked.is_none(), "the vector left a key named leak");
    }
}

fn seen() -> Vec<(usize, bool)> {
    std::mem::take(&mut *SEEN.lock().unwrap())
}

async fn claims_in_two_backends<T: Target>(key: &'static str, fail: bool) {
    use idemkit_conformance::ConformanceBackend;
    let first = real::<T>(Settings::default());
    let second = real::<T>(Settings::default());
    let _held = first.claim("a", FINGERPRINT, 1, LONG).await.unwrap();
    let _held = second.claim("a", FINGERPRINT, 1, LONG).await.unwrap();
    let _held = second.claim(key, FINGERPRINT, 1, LONG).await.unwrap();
    assert!(!fail, "this vector fails on purpose");
}

#[test]
fn every_backend_a_vector_built_is_torn_down_after_it_passes() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    seen();
    idemkit_conformance::run::<Recorded, _>(claims_in_two_backends::<Recorded>("b", false));
    assert_eq!(seen(), [(1, true), (2, true)], "both, in the order built");
}

#[test]
fn a_failed_vector_is_torn_down_and_keeps_its_own_failure() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    seen();
    let failed = std::panic::catch_unwind(|| {
        idemkit_conformance::run::<Recorded, _>(claims_in_two_backends::<Recorded>("leak", true))
    });
    let panic = failed.expect_err("the vector failed");
    let message = panic.downcast_ref::<&str>().copied().unwrap_or_default();
    assert_eq!(
        message, "this vector fails on purpose",
        "not the teardown's"
    );
    assert_eq!(seen(), [(1, false), (2, false)]);
}

#[test]
fn a_teardown_that_finds_a_fault_fails_a_vector_that_passed() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    seen();
    let failed = std::panic::catch_unwind(|| {
        idemkit_conformance::run::<Recorded, _>(claims_in_two_backends::<Recorded>("leak", false))
    });
    assert!(failed.is_err(), "the teardown's check failed the vector");
    assert_eq!(seen(), [(1, true), (2, true)], "every teardown still ran");
}

/// Backends built outside a vector's run (a plain test, a program) have no teardown.
#[test]
fn outside_a_run_nothing_is_recorded() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    seen();
    futures_lite::future::block_on(claims_in_two_backends::<Recorded>("b", false));
    assert_eq!(seen(), []);
}
