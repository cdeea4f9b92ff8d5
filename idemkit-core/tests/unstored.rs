//! A response that ran but could not be stored is reported as such, on the outcome and
//! on the event: fenced out by a takeover, or refused by a failing backend.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idemkit_core::{
    Backend, Claim, ClaimToken, Decision, Error, Event, Fingerprint, Heartbeat, Idempotency,
    InMemoryBackend, Key, ManualClock, OnStorageError, Policy, Record, Response, RunError, Timer,
    Unstored,
};

const LEASE: Duration = Duration::from_secs(5);

/// The in-memory backend, whose completions fail while `fail_complete` is set, and
/// whose claims fail while `fail_claim` is set.
#[derive(Default)]
struct Flaky {
    inner: InMemoryBackend,
    fail_complete: AtomicBool,
    fail_claim: AtomicBool,
}

fn down() -> Error {
    Error::storage(std::io::Error::other("the store went away"))
}

impl Backend for Flaky {
    async fn claim(
        &self,
        key: &str,
        fp: &str,
        version: u32,
        lease: Duration,
    ) -> Result<Claim, Error> {
        if self.fail_claim.load(Ordering::SeqCst) {
            return Err(down());
        }
        self.inner.claim(key, fp, version, lease).await
    }
    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        ttl: Duration,
    ) -> Result<bool, Error> {
        if self.fail_complete.load(Ordering::SeqCst) {
            return Err(down());
        }
        self.inner.complete(key, token, response, ttl).await
    }
    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        self.inner.release(key, token).await
    }
    async fn renew(&self, key: &str, token: &ClaimToken, lease: Duration) -> Result<bool, Error> {
        self.inner.renew(key, token, lease).await
    }
    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        self.inner.wait_for_completion(key, timeout).await
    }
    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        self.inner.get(key).await
    }
    fn now(&self) -> Instant {
        self.inner.now()
    }
    fn timer(&self) -> Arc<dyn Timer> {
        self.inner.timer()
    }
}

/// An executor over `backend` whose events land in the returned list.
fn recorded<B: Backend>(backend: B, policy: Policy) -> (Idempotency<B>, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let executor = Idempotency::with_policy(backend, policy)
        .on_event(move |event| sink.lock().unwrap().push(event.clone()));
    (executor, events)
}

fn last(events: &Mutex<Vec<Event>>) -> Event {
    events
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("one event per run")
}

fn made() -> Result<Response, std::io::Error> {
    Ok(Response::new(201, "made"))
}

#[test]
fn a_stored_or_replayed_response_is_not_unstored() {
    let (executor, events) = recorded(InMemoryBackend::new(), Policy::default());
    let (key, fp) = (Key::new(["k"]), Fingerprint::new(["r"]));
    let first = executor.run(&key, &fp, |_| made()).unwrap();
    assert_eq!((first.decision, first.unstored), (Decision::New, None));
    assert_eq!(last(&events).unstored, None);
    let again = executor.run(&key, &fp, |_| made()).unwrap();
    assert_eq!((again.decision, again.unstored), (Decision::Replayed, None));
    assert_eq!(last(&events).unstored, None);
    // Left out by the predicate: by choice, not a failure.
    let policy = Policy::builder()
        .cacheable(|_| false)
        .build()
        .expect("a valid policy");
    let (executor, events) = recorded(InMemoryBackend::new(), policy);
    let outcome = executor.run(&key, &fp, |_| made()).unwrap();
    assert_eq!(
        (outcome.decision, outcome.unstored),
        (Decision::NotCached, None)
    );
    assert_eq!(last(&events).unstored, None);
}

#[test]
fn a_response_fenced_out_by_a_takeover_says_so() {
    let clock = ManualClock::new();
    let backend = InMemoryBackend::builder().clock(clock.clone()).build();
    let policy = Policy::builder()
        .lease_ttl(LEASE)
        .heartbeat(Heartbeat::Off)
        .build()
        .expect("a valid policy");
    let (executor, events) = recorded(backend.clone(), policy);
    let (key, fp) = (Key::new(["k"]), Fingerprint::new(["r"]));
    let outcome = executor
        .run(&key, &fp, |_| {
            // The lease lapses mid-run and another executor takes the key over.
            clock.advance(LEASE * 2);
            let claim =
                idemkit_core::BlockingBackend::claim(&backend, key.as_str(), fp.as_str(), 1, LEASE)
                    .unwrap();
            assert!(matches!(claim, Claim::Reclaimed(_)), "{claim:?}");
            made()
        })
        .unwrap();
    assert_eq!(outcome.decision, Decision::ReclaimedLoss);
    assert_eq!(outcome.unstored, Some(Unstored::FencedOut));
    assert_eq!(
        outcome.response.status, 201,
        "the caller still gets its response"
    );
    let event = last(&events);
    assert_eq!(
        (event.decision, event.unstored),
        (Decision::ReclaimedLoss, Some(Unstored::FencedOut))
    );
}

#[test]
fn a_completion_the_backend_fails_says_so_whatever_the_policy() {
    let (key, fp) = (Key::new(["k"]), Fingerprint::new(["r"]));

    let closed = Flaky::default();
    closed.fail_complete.store(true, Ordering::SeqCst);
    let (executor, events) = recorded(closed, Policy::default());
    let result = executor.run(&key, &fp, |_| made());
    assert!(
        matches!(result, Err(RunError::StorageFailed(_))),
        "{result:?}"
    );
    let event = last(&events);
    assert_eq!(
        (event.decision, event.unstored),
        (Decision::StorageFailed, Some(Unstored::StorageError)),
        "the operation ran: its event says its response went unstored"
    );

    let open = Flaky::default();
    open.fail_complete.store(true, Ordering::SeqCst);
    let policy = Policy::builder()
        .on_storage_error(OnStorageError::FailOpen)
        .build()
        .expect("a valid policy");
    let (executor, events) = recorded(open, policy);
    let outcome = executor.run(&key, &fp, |_| made()).unwrap();
    assert_eq!(
        (outcome.decision, outcome.unstored),
        (Decision::RanUnprotected, Some(Unstored::StorageError))
    );
    assert_eq!(last(&events).unstored, Some(Unstored::StorageError));
}

#[test]
fn a_failed_claim_is_unstored_only_if_the_operation_ran() {
    let (key, fp) = (Key::new(["k"]), Fingerprint::new(["r"]));
    let closed = Flaky::default();
    closed.fail_claim.store(true, Ordering::SeqCst);
    let (executor, events) = recorded(closed, Policy::default());
    let result = executor.run(&key, &fp, |_| -> Result<Response, std::io::Error> {
        panic!("failing closed, nothing runs")
    });
    assert!(
        matches!(result, Err(RunError::StorageFailed(_))),
        "{result:?}"
    );
    assert_eq!(
        last(&events).unstored,
        None,
        "nothing ran, nothing went unstored"
    );

    let open = Flaky::default();
    open.fail_claim.store(true, Ordering::SeqCst);
    let policy = Policy::builder()
        .on_storage_error(OnStorageError::FailOpen)
        .build()
        .expect("a valid policy");
    let (executor, events) = recorded(open, policy);
    let outcome = executor.run(&key, &fp, |_| made()).unwrap();
    assert_eq!(
        (outcome.decision, outcome.unstored),
        (Decision::RanUnprotected, Some(Unstored::StorageError))
    );
    assert_eq!(last(&events).unstored, Some(Unstored::StorageError));
}

#[test]
fn the_reasons_have_short_names() {
    assert_eq!(Unstored::StorageError.as_str(), "storage-error");
    assert_eq!(Unstored::FencedOut.as_str(), "fenced-out");
}
