//! Storage failures at the executor level: every backend operation an executor calls can
//! fail (a networked backend will), and each failure is handled as the policy says:
//! refused under `FailClosed`, run without protection under `FailOpen`, and a failed
//! renewal is not taken for a lost lease while the lease is surely still held.
//!
//! The failures come from [`FailingBackend`] over an in-memory backend on a
//! `ManualClock` (so leases lapse only when a test says so). Every case runs on the
//! async executor with the tokio timer and with the smol timer; the blocking executor,
//! which follows the same run loop, runs the claim, completion and wait cases.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idemkit_conformance::executor::{FailingBackend, Operation};
use idemkit_core::BlockingBackend;
use idemkit_core::{
    AsyncIdempotency, Claim, Decision, Error, Fingerprint, Heartbeat, Idempotency, InMemoryBackend,
    Key, ManualClock, OnStorageError, Outcome, Policy, Response, RunError, State, Timer,
};

type Executor = AsyncIdempotency<FailingBackend<InMemoryBackend>>;

/// A lease no test lets lapse unless it advances the clock past it on purpose.
const LONG: Duration = Duration::from_secs(3600);

/// How long a test waits for something that should happen within milliseconds.
const PATIENT: Duration = Duration::from_secs(10);

/// A heartbeat quick enough for several renewals within a fraction of a second.
const QUICK_BEAT: Duration = Duration::from_millis(20);

/// A failing wrapper of a fresh in-memory backend whose waits sleep on `timer` and whose
/// leases run on a manual clock, and that clock.
fn failing(timer: impl Timer) -> (FailingBackend<InMemoryBackend>, ManualClock) {
    let clock = ManualClock::new();
    let inner = InMemoryBackend::builder()
        .timer(timer)
        .clock(clock.clone())
        .build();
    (FailingBackend::new(inner), clock)
}

/// An async executor with `policy` over [`failing`], and the clock.
fn executor<T: Timer + Default>(policy: Policy) -> (Executor, ManualClock) {
    let (backend, clock) = failing(T::default());
    let executor = AsyncIdempotency::with_policy(backend, policy);
    (executor, clock)
}

fn policy(on_storage_error: OnStorageError) -> Policy {
    Policy::builder()
        .on_storage_error(on_storage_error)
        .build()
        .expect("a valid policy")
}

fn key() -> Key {
    Key::new(["charge", "order-42"])
}

fn fingerprint() -> Fingerprint {
    Fingerprint::new([b"amount=100".as_slice()])
}

/// The future of [`charge`].
type Charge<'a> = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send + 'a>>;

/// An operation that counts its runs in `ran` and charges.
fn charge<'a>(ran: &'a AtomicUsize) -> impl FnOnce() -> Charge<'a> + 'a {
    move || {
        Box::pin(async move {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok(Response::new(200, "charged"))
        })
    }
}

fn assert_ran_unprotected(outcome: &Outcome) {
    assert_eq!(outcome.decision, Decision::RanUnprotected);
    assert_eq!(*outcome.response, Response::new(200, "charged"));
}

fn assert_storage_error(result: Result<Outcome, RunError<Infallible>>) {
    match result {
        Err(RunError::StorageFailed(Error::Storage(source))) => {
            assert!(source.to_string().contains("on purpose"), "{source}");
        }
        other => panic!("expected the double's storage error, got {other:?}"),
    }
}

/// Polls `condition` every few milliseconds on `timer` until it holds; panics after
/// [`PATIENT`].
async fn until(timer: &dyn Timer, what: &str, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < PATIENT, "{what}: not within {PATIENT:?}");
        timer.sleep(Duration::from_millis(5)).await;
    }
}

/// A claim that fails under `FailClosed` refuses with `Storage`; the operation never
/// runs and nothing is stored.
async fn a_failed_claim_fails_closed<T: Timer + Default>() {
    let (executor, _clock) = executor::<T>(policy(OnStorageError::FailClosed));
    let backend = executor.backend();
    backend.fail(Operation::Claim);
    let ran = AtomicUsize::new(0);

    assert_storage_error(executor.run(&key(), &fingerprint(), charge(&ran)).await);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "refused: the operation never ran"
    );
    assert_eq!(backend.failures(Operation::Claim), 1);
    assert!(backend.inner().get(key().as_str()).unwrap().is_none());
}

/// A claim that fails under `FailOpen` runs the operation once, unprotected, and
/// returns its response as `RanUnprotected`; there is no claim to store it under.
async fn a_failed_claim_runs_unprotected_when_open<T: Timer + Default>() {
    let (executor, _clock) = executor::<T>(policy(OnStorageError::FailOpen));
    let backend = executor.backend();
    backend.fail(Operation::Claim);
    let ran = AtomicUsize::new(0);

    let outcome = executor
        .run(&key(), &fingerprint(), charge(&ran))
        .await
        .expect("fail open runs the operation");
    assert_ran_unprotected(&outcome);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(backend.failures(Operation::Claim), 1);
    assert!(backend.inner().get(key().as_str()).unwrap().is_none());
}

/// A completion that fails under `FailClosed` reports `Storage`, after the operation ran
/// once. The result may or may not have been stored, so the claim is not released: it
/// is left to lapse.
async fn a_failed_completion_fails_closed<T: Timer + Default>() {
    let (executor, _clock) = executor::<T>(policy(OnStorageError::FailClosed));
    let backend = executor.backend();
    backend.fail(Operation::Complete);
    let ran = AtomicUsize::new(0);

    assert_storage_error(executor.run(&key(), &fingerprint(), charge(&ran)).await);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(backend.failures(Operation::Complete), 1);
    assert_eq!(
        backend.calls(Operation::Release),
        0,
        "the claim is left to lapse"
    );
    let record = backend
        .inner()
        .get(key().as_str())
        .unwrap()
        .expect("the claim is kept");
    assert_eq!(record.state(), State::Claimed);
}

/// A completion that fails under `FailOpen` returns the operation's response as
/// `RanUnprotected`: it ran once, and its result is not known to be stored.
async fn a_failed_completion_returns_the_response_unprotected_when_open<T: Timer + Default>() {
    let (executor, _clock) = executor::<T>(policy(OnStorageError::FailOpen));
    let backend = executor.backend();
    backend.fail(Operation::Complete);
    let ran = AtomicUsize::new(0);

    let outcome = executor
        .run(&key(), &fingerprint(), charge(&ran))
        .await
        .expect("fail open returns the response");
    assert_ran_unprotected(&outcome);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(backend.failures(Operation::Complete), 1);
}

/// Another executor holds the key (claimed straight on the backend), so this run waits;
/// the wait fails. Under `FailClosed` that refuses with `Storage`, without running; the
/// owner's claim is untouched.
async fn a_failed_wait_fails_closed<T: Timer + Default>() {
    let (executor, _clock) = executor::<T>(policy(OnStorageError::FailClosed));
    let backend = executor.backend();
    let claim = backend
        .inner()
        .claim(key().as_str(), fingerprint().as_str(), 1, LONG)
        .unwrap();
    let Claim::New(owner) = claim else {
        panic!("a fresh backend claims New, got {claim:?}");
    };
    backend.fail(Operation::Wait);
    let ran = AtomicUsize::new(0);

    assert_storage_error(executor.run(&key(), &fingerprint(), charge(&ran)).await);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "refused: the operation never ran"
    );
    assert_eq!(backend.calls(Operation::Claim), 1);
    assert_eq!(backend.failures(Operation::Wait), 1);
    let record = backend.inner().get(key().as_str()).unwrap().unwrap();
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &owner);
}

/// The same failed wait under `FailOpen` runs the operation once, unprotected, leaving
/// the owner's claim alone.
async fn a_failed_wait_runs_unprotected_when_open<T: Timer + Default>() {
    let (executor, _clock) = executor::<T>(policy(OnStorageError::FailOpen));
    let backend = executor.backend();
    let claim = backend
        .inner()
        .claim(key().as_str(), fingerprint().as_str(), 1, LONG)
        .unwrap();
    let Claim::New(owner) = claim else {
        panic!("a fresh backend claims New, got {claim:?}");
    };
    backend.fail(Operation::Wait);
    let ran = AtomicUsize::new(0);

    let outcome = executor
        .run(&key(), &fingerprint(), charge(&ran))
        .await
        .expect("fail open runs the operation");
    assert_ran_unprotected(&outcome);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(backend.failures(Operation::Wait), 1);
    assert_eq!(
        backend
            .inner()
            .get(key().as_str())
            .unwrap()
            .unwrap()
            .claim_token(),
        &owner
    );
}

/// A renewal that fails with an error is not proof that the lease is lost: while the
/// lease is surely held (the manual clock never moves, so it is), the operation keeps
/// running through several failed renewals, and its result is stored as `New`.
async fn failed_renewals_keep_a_surely_held_lease<T: Timer + Default>() {
    let (executor, _clock) = executor::<T>(
        Policy::builder()
            .lease_ttl(Duration::from_secs(30))
            .heartbeat(Heartbeat::Every(QUICK_BEAT))
            .build()
            .expect("a valid policy"),
    );
    let backend = executor.backend();
    backend.fail(Operation::Renew);
    let timer = backend.inner().timer();

    let outcome = executor
        .run(&key(), &fingerprint(), || async {
            until(timer.as_ref(), "three renewals failed", || {
                backend.failures(Operation::Renew) >= 3
            })
            .await;
            Ok::<_, Infallible>(Response::new(200, "charged"))
        })
        .await
        .expect("the lease was held throughout");
    assert_eq!(outcome.decision, Decision::New);
    assert_eq!(*outcome.response, Response::new(200, "charged"));
    let record = backend.inner().get(key().as_str()).unwrap().unwrap();
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.response(), Some(&Response::new(200, "charged")));
}

/// The other half of that promise: once the lease has surely lapsed since the last
/// successful renewal (the clock moved past it), a failed renewal does lose it: the
/// operation is cancelled and the run returns `LeaseLost`, storing nothing.
async fn a_failed_renewal_after_the_lease_surely_lapsed_loses_it<T: Timer + Default>() {
    let lease = Duration::from_secs(10);
    let (executor, clock) = executor::<T>(
        Policy::builder()
            .lease_ttl(lease)
            .heartbeat(Heartbeat::Every(QUICK_BEAT))
            .build()
            .expect("a valid policy"),
    );
    let backend = executor.backend();
    backend.fail(Operation::Renew);
    let timer = backend.inner().timer();
    let finished = Arc::new(AtomicBool::new(false));

    let result = executor
        .run(&key(), &fingerprint(), || async {
            until(timer.as_ref(), "a renewal failed", || {
                backend.failures(Operation::Renew) >= 1
            })
            .await;
            // Still running, and the lease is surely gone now.
            clock.advance(lease + Duration::from_secs(1));
            timer.sleep(PATIENT).await;
            finished.store(true, Ordering::SeqCst);
            Ok::<_, Infallible>(Response::new(200, "charged"))
        })
        .await;
    assert!(
        matches!(result, Err(RunError::LeaseLost)),
        "expected LeaseLost, got {result:?}"
    );
    assert!(
        !finished.load(Ordering::SeqCst),
        "the operation was cancelled"
    );
    assert!(
        backend
            .inner()
            .get(key().as_str())
            .unwrap()
            .is_none_or(|record| record.state() == State::Claimed),
        "nothing was stored"
    );
}

/// Declares a `#[test]` per case, each run on `$runtime` with `$timer`.
macro_rules! cases {
    ($runtime:ty, $timer:ty) => {
        use idemkit_conformance::Runtime;

        cases!(@each $runtime, $timer;
            a_failed_claim_fails_closed,
            a_failed_claim_runs_unprotected_when_open,
            a_failed_completion_fails_closed,
            a_failed_completion_returns_the_response_unprotected_when_open,
            a_failed_wait_fails_closed,
            a_failed_wait_runs_unprotected_when_open,
            failed_renewals_keep_a_surely_held_lease,
            a_failed_renewal_after_the_lease_surely_lapsed_loses_it,
        );
    };
    (@each $runtime:ty, $timer:ty; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                <$runtime as Runtime>::block_on(super::$case::<$timer>());
            }
        )*
    };
}

mod tokio_timer {
    cases!(
        idemkit_conformance::runtimes::TokioRuntime,
        idemkit_tokio::TokioTimer
    );
}

mod smol_timer {
    cases!(
        idemkit_conformance::runtimes::SmolRuntime,
        idemkit_smol::SmolTimer
    );
}

/// The blocking executor over a failing wrapper, with `policy`.
fn blocking(policy: Policy) -> Idempotency<FailingBackend<InMemoryBackend>> {
    let (backend, _clock) = failing(idemkit_core::ThreadTimer);
    Idempotency::with_policy(backend, policy)
}

/// A blocking operation that counts its runs in `ran` and charges.
fn charge_blocking(
    ran: &AtomicUsize,
) -> impl FnOnce(&idemkit_core::Lease) -> Result<Response, Infallible> + '_ {
    move |_lease| {
        ran.fetch_add(1, Ordering::SeqCst);
        Ok(Response::new(200, "charged"))
    }
}

mod blocking_executor {
    use super::*;

    #[test]
    fn a_failed_claim_fails_closed_or_runs_unprotected() {
        let ran = AtomicUsize::new(0);
        let closed = blocking(policy(OnStorageError::FailClosed));
        closed.backend().fail(Operation::Claim);
        assert_storage_error(closed.run(&key(), &fingerprint(), charge_blocking(&ran)));
        assert_eq!(ran.load(Ordering::SeqCst), 0);

        let open = blocking(policy(OnStorageError::FailOpen));
        open.backend().fail(Operation::Claim);
        let outcome = open
            .run(&key(), &fingerprint(), charge_blocking(&ran))
            .expect("fail open runs the operation");
        assert_ran_unprotected(&outcome);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_failed_completion_fails_closed_and_leaves_the_claim_to_lapse() {
        let ran = AtomicUsize::new(0);
        let executor = blocking(policy(OnStorageError::FailClosed));
        let backend = executor.backend();
        backend.fail(Operation::Complete);
        assert_storage_error(executor.run(&key(), &fingerprint(), charge_blocking(&ran)));
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert_eq!(backend.calls(Operation::Release), 0);
        let record = backend
            .inner()
            .get(key().as_str())
            .unwrap()
            .expect("the claim is kept");
        assert_eq!(record.state(), State::Claimed);
    }

    #[test]
    fn a_failed_wait_fails_closed_or_runs_unprotected() {
        for (on_error, runs) in [
            (OnStorageError::FailClosed, 0),
            (OnStorageError::FailOpen, 1),
        ] {
            let ran = AtomicUsize::new(0);
            let executor = blocking(policy(on_error));
            let backend = executor.backend();
            let claim = backend
                .inner()
                .claim(key().as_str(), fingerprint().as_str(), 1, LONG)
                .unwrap();
            let Claim::New(owner) = claim else {
                panic!("a fresh backend claims New, got {claim:?}");
            };
            backend.fail(Operation::Wait);
            let result = executor.run(&key(), &fingerprint(), charge_blocking(&ran));
            match on_error {
                OnStorageError::FailClosed => assert_storage_error(result),
                OnStorageError::FailOpen => assert_ran_unprotected(&result.unwrap()),
            }
            assert_eq!(ran.load(Ordering::SeqCst), runs, "{on_error:?}");
            assert_eq!(backend.failures(Operation::Wait), 1);
            let record = backend.inner().get(key().as_str()).unwrap().unwrap();
            assert_eq!(
                record.claim_token(),
                &owner,
                "the owner's claim is untouched"
            );
        }
    }
}
