//! What a stored response holds for as long as its record is kept: its own bytes, not
//! the buffers the handler built them in. Over real loopback HTTP, read back from the
//! in-memory store.

mod support;

use std::ops::Range;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use idemkit_core::{Backend, InMemoryBackend};
use idemkit_tower::IdempotencyLayer;
use support::client::{Call, send};
use support::in_process::serve_axum;

/// The addresses of the buffer the handler answered from.
type Buffer = Arc<Mutex<Option<Range<usize>>>>;

/// Answers 60 bytes from a 4 KiB `String`, as a formatted reply often has spare room.
async fn roomy(
    State(buffer): State<Buffer>,
) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    let mut text = String::with_capacity(4096);
    text.push_str(&"x".repeat(60));
    let start = text.as_ptr() as usize;
    *buffer.lock().unwrap() = Some(start..start + text.capacity());
    ([(CONTENT_TYPE, "text/plain")], text)
}

#[tokio::test]
async fn a_stored_body_keeps_its_bytes_not_the_handlers_buffer() {
    let backend = InMemoryBackend::default();
    let layer = IdempotencyLayer::builder(backend.clone())
        .single_tenant()
        .build()
        .unwrap();
    let buffer = Buffer::default();
    let router = Router::new()
        .fallback(roomy)
        .with_state(buffer.clone())
        .layer(layer.clone());
    let served = serve_axum(router).await;
    let call = || Call::post("/charges").key("roomy");
    let first = send(served.address, call()).await.unwrap();
    let replay = send(served.address, call()).await.unwrap();
    assert_eq!(first.body, "x".repeat(60));
    assert_eq!(replay.body, first.body);
    assert_eq!(replay.header("content-type"), Some("text/plain"));

    let (parts, ()) = axum::http::Request::post("/charges")
        .header("idempotency-key", "roomy")
        .body(())
        .unwrap()
        .into_parts();
    let key = layer.effective_key(&parts).unwrap();
    let record = Backend::get(&backend, key.as_str()).await.unwrap().unwrap();
    let stored = record.response().expect("a completed record");
    assert_eq!(stored.body, "x".repeat(60));
    // The stored body was copied out while the handler's buffer was still alive, so it
    // lies outside it: the record does not keep 4 KiB for 60 bytes.
    let handlers = buffer.lock().unwrap().clone().unwrap();
    assert!(
        !handlers.contains(&(stored.body.as_ptr() as usize)),
        "the stored body is the handler's 4 KiB buffer"
    );
    // Nor room for headers it does not have.
    assert_eq!(stored.headers.len(), 1);
    assert_eq!(stored.headers.capacity(), 1);
}
