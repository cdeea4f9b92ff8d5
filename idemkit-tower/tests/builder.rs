//! The builder's rules: settings that cannot work are a `ConfigError` naming the setting,
//! the core's `Policy` is what the layer runs by (save the two settings that are the
//! layer's own), and events carry the backend's own name.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use idemkit_core::{Backend, DynBackend, Heartbeat, InMemoryBackend, ManualClock, Policy};
use idemkit_sqlite::SqliteBackend;
use idemkit_tower::{
    EventKind, IdempotencyEvent, IdempotencyLayer, IdempotencyLayerBuilder, RequestBody,
};
use tower::{Layer, ServiceExt, service_fn};

/// Sends one keyed POST through `layer` to a handler that counts its calls in `calls`
/// and answers 201 with the call's number; returns the status and the body.
async fn send<B: Backend>(
    layer: &IdempotencyLayer<B>,
    calls: &Arc<AtomicU64>,
    key: &str,
) -> (StatusCode, String) {
    let calls = Arc::clone(calls);
    let handler = service_fn(move |_: Request<RequestBody<Full<Bytes>>>| {
        let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            let mut response = Response::new(Full::new(Bytes::from(call.to_string())));
            *response.status_mut() = StatusCode::CREATED;
            Ok::<_, Infallible>(response)
        }
    });
    let request = Request::post("/orders")
        .header("idempotency-key", key)
        .body(Full::new(Bytes::from_static(b"order")))
        .unwrap();
    let response = layer.layer(handler).oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// A builder that records every event into the returned list.
fn recording<B: Backend>(
    builder: IdempotencyLayerBuilder<B>,
) -> (
    IdempotencyLayerBuilder<B>,
    Arc<Mutex<Vec<IdempotencyEvent>>>,
) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let builder = builder
        .single_tenant()
        .on_event(move |event| sink.lock().unwrap().push(event.clone()));
    (builder, events)
}

#[test]
fn a_policy_whose_heartbeat_outlasts_the_lease_is_refused_before_it_reaches_the_layer() {
    // A layer is only ever given a valid policy: the policy's own build refuses this one,
    // naming the setting.
    let error = Policy::builder()
        .lease_ttl(Duration::from_secs(1))
        .heartbeat(Heartbeat::Every(Duration::from_secs(2)))
        .build()
        .expect_err("a heartbeat slower than the lease cannot keep it");
    assert_eq!(error.setting(), "heartbeat");
    assert!(error.reason().contains("lease"), "{error}");
}

#[test]
fn a_layer_that_protects_no_method_is_a_config_error() {
    let error = IdempotencyLayer::builder(InMemoryBackend::new())
        .single_tenant()
        .methods([])
        .build()
        .expect_err("a layer with nothing to protect");
    assert_eq!(error.setting(), "methods");
}

#[tokio::test]
async fn the_policy_sets_how_long_a_response_is_replayed() {
    let clock = ManualClock::new();
    let backend = InMemoryBackend::builder().clock(clock.clone()).build();
    let (builder, _) = recording(IdempotencyLayer::builder(backend));
    let layer = builder
        .policy(
            Policy::builder()
                .expires_after(Duration::from_secs(10))
                .build()
                .expect("a valid policy"),
        )
        .build()
        .unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    assert_eq!(
        send(&layer, &calls, "k").await,
        (StatusCode::CREATED, "1".to_owned())
    );
    clock.advance(Duration::from_secs(10));
    assert_eq!(
        send(&layer, &calls, "k").await.1,
        "1",
        "replayed up to its expiry"
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        send(&layer, &calls, "k").await.1,
        "2",
        "run again once expired"
    );
}

#[tokio::test]
async fn the_fingerprint_version_is_the_layers_whatever_the_policy_says() {
    let (builder, events) = recording(IdempotencyLayer::builder(InMemoryBackend::new()));
    let layer = builder
        .policy(
            Policy::builder()
                .fingerprint_version(7)
                .build()
                .expect("a valid policy"),
        )
        .build()
        .unwrap();
    assert_eq!(layer.executor().policy().fingerprint_version(), 2);
    send(&layer, &Arc::new(AtomicU64::new(0)), "k").await;
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].fingerprint_version, 2);
}

/// The name the one event of one new run through a layer over `backend` carries.
async fn name_in_events<B: Backend>(backend: B) -> &'static str {
    let (builder, events) = recording(IdempotencyLayer::builder(backend));
    let layer = builder.build().unwrap();
    send(&layer, &Arc::new(AtomicU64::new(0)), "named").await;
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::New);
    events[0].backend
}

#[tokio::test]
async fn events_carry_the_backends_own_name() {
    assert_eq!(name_in_events(InMemoryBackend::new()).await, "memory");
    assert_eq!(
        name_in_events(DynBackend::new(InMemoryBackend::new())).await,
        "memory",
        "a backend chosen at run time keeps its name"
    );
    let dir = std::env::temp_dir().join(format!("idemkit-tower-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = SqliteBackend::open(dir.join("records.db")).unwrap();
    assert_eq!(name_in_events(sqlite).await, "sqlite");
    std::fs::remove_dir_all(&dir).unwrap();
}
