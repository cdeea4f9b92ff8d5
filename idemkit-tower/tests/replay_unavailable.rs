//! A response delivered but not stored says so, over real loopback HTTP:
//! `Idempotency-Replay-Unavailable: storage-error` when the store failed to keep it,
//! `fenced-out` when the request's lease was taken over while its handler ran.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use idemkit_core::{
    Backend, Claim, ClaimToken, Error, Heartbeat, InMemoryBackend, ManualClock, OnStorageError,
    Policy, Record, Response as StoredResponse, Timer,
};
use idemkit_tower::{EventKind, IdempotencyLayer};
use support::client::{Call, send};
use support::in_process::serve_axum;

const HEADER: &str = "idempotency-replay-unavailable";

/// The in-memory backend, except that storing a response fails while `failing` is set.
#[derive(Clone, Default)]
struct FailingCompletions {
    inner: InMemoryBackend,
    failing: Arc<AtomicBool>,
}

impl Backend for FailingCompletions {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.inner.claim(key, fingerprint, version, lease_ttl).await
    }
    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<StoredResponse>,
        ttl: Duration,
    ) -> Result<bool, Error> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(Error::storage(std::io::Error::other("the store went away")));
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

async fn created() -> (http::StatusCode, &'static str) {
    (http::StatusCode::CREATED, "created")
}

fn post(key: &str) -> Call {
    Call::post("/orders").key(key).body("order")
}

#[tokio::test]
async fn a_response_the_store_failed_to_keep_is_marked_storage_error() {
    for policy in [OnStorageError::FailClosed, OnStorageError::FailOpen] {
        let backend = FailingCompletions::default();
        let kinds = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&kinds);
        let layer = IdempotencyLayer::builder(backend.clone())
            .single_tenant()
            .policy(
                Policy::builder()
                    .on_storage_error(policy)
                    .build()
                    .expect("a valid policy"),
            )
            .on_event(move |event| sink.lock().unwrap().push(event.kind))
            .build()
            .unwrap();
        let served = serve_axum(Router::new().fallback(created).layer(layer)).await;

        let stored = send(served.address, post("kept")).await.unwrap();
        assert_eq!(stored.status, 201);
        assert_eq!(
            stored.header(HEADER),
            None,
            "{policy:?}: stored, nothing to say"
        );

        backend.failing.store(true, Ordering::SeqCst);
        let delivered = send(served.address, post("lost")).await.unwrap();
        assert_eq!(
            delivered.status, 201,
            "{policy:?}: the handler ran; its client gets it"
        );
        assert_eq!(&delivered.body[..], b"created");
        assert_eq!(
            delivered.header(HEADER),
            Some("storage-error"),
            "{policy:?}"
        );
        let last = *kinds.lock().unwrap().last().unwrap();
        let expected = match policy {
            OnStorageError::FailClosed => EventKind::StorageFailed,
            _ => EventKind::RanUnprotected,
        };
        assert_eq!(last, expected);
    }
}

/// What the fencing test's handler needs: the store, its clock and the layer (for the
/// request's effective key).
#[derive(Clone)]
struct Takeover {
    backend: InMemoryBackend,
    clock: ManualClock,
    layer: IdempotencyLayer<InMemoryBackend>,
    taken: Arc<AtomicBool>,
}

const LEASE: Duration = Duration::from_secs(30);

/// Lets its own lease lapse (on the store's manual clock) and has another request take
/// the key over, then answers: its completion is fenced out.
async fn taken_over(State(takeover): State<Takeover>, request: Request) -> &'static str {
    let (parts, _) = request.into_parts();
    let key = takeover.layer.effective_key(&parts).unwrap();
    takeover.clock.advance(LEASE * 2);
    let claim = idemkit_core::BlockingBackend::claim(
        &takeover.backend,
        key.as_str(),
        "another request",
        2,
        LEASE,
    )
    .unwrap();
    takeover
        .taken
        .store(matches!(claim, Claim::Reclaimed(_)), Ordering::SeqCst);
    "late"
}

#[tokio::test]
async fn a_response_fenced_out_by_a_takeover_is_marked_fenced_out() {
    let clock = ManualClock::new();
    let backend = InMemoryBackend::builder().clock(clock.clone()).build();
    let layer = IdempotencyLayer::builder(backend.clone())
        .single_tenant()
        .policy(
            Policy::builder()
                .heartbeat(Heartbeat::Off)
                .lease_ttl(LEASE)
                .build()
                .expect("a valid policy"),
        )
        .build()
        .unwrap();
    let takeover = Takeover {
        backend,
        clock,
        layer: layer.clone(),
        taken: Arc::new(AtomicBool::new(false)),
    };
    let router = Router::new()
        .fallback(taken_over)
        .with_state(takeover.clone())
        .layer(layer);
    let served = serve_axum(router).await;
    let reply = send(served.address, post("fenced")).await.unwrap();
    assert!(
        takeover.taken.load(Ordering::SeqCst),
        "the key was taken over"
    );
    assert_eq!(reply.status, 200);
    assert_eq!(
        &reply.body[..],
        b"late",
        "its client still gets its response"
    );
    assert_eq!(reply.header(HEADER), Some("fenced-out"));
}
