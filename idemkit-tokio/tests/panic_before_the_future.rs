//! An operation whose closure panics before returning its future is a panicking
//! operation like any other: the claim is released and the run reports exactly one
//! event, with or without a claim.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use idemkit_tokio::{
    AsyncIdempotency, Backend, Decision, Fingerprint, InMemoryBackend, Key, OnStorageError, Policy,
    Response,
};

/// Runs a closure that panics at once on `backend` and returns the decisions of the
/// events the run reported, having checked that the panic reached the caller.
async fn events_of_a_panicking_closure(backend: InMemoryBackend, policy: Policy) -> Vec<Decision> {
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let executor = AsyncIdempotency::with_policy(backend, policy)
        .on_event(move |event| seen.lock().unwrap().push(event.decision));
    let (key, request) = (Key::new(["k"]), Fingerprint::new(["f"]));
    let calls = Arc::new(AtomicUsize::new(0));
    let called = Arc::clone(&calls);
    let run = tokio::spawn(async move {
        executor
            .run(
                &key,
                &request,
                move || -> std::future::Ready<Result<Response, ()>> {
                    called.fetch_add(1, Ordering::SeqCst);
                    panic!("before the future")
                },
            )
            .await
    });
    let joined = run.await;
    assert!(
        joined.as_ref().is_err_and(|error| error.is_panic()),
        "the panic did not reach the caller: {joined:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    events.lock().unwrap().clone()
}

#[tokio::test]
async fn under_a_claim_it_releases_the_key_and_reports_one_event() {
    let backend = InMemoryBackend::new();
    let events = events_of_a_panicking_closure(backend.clone(), Policy::default()).await;
    assert_eq!(events, [Decision::HandlerFailed]);
    assert!(
        backend
            .get(Key::new(["k"]).as_str())
            .await
            .unwrap()
            .is_none(),
        "the claim was kept"
    );
}

#[tokio::test]
async fn without_a_claim_it_reports_one_event() {
    let full = InMemoryBackend::builder().max_size(0).build();
    let policy = Policy::builder()
        .on_storage_error(OnStorageError::FailOpen)
        .build()
        .expect("a valid policy");
    let events = events_of_a_panicking_closure(full, policy).await;
    assert_eq!(events, [Decision::HandlerFailed]);
}
