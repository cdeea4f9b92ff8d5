//! The README's axum quick start: a router whose POST /charges runs once per
//! `Idempotency-Key` per API key. `cargo run -p idemkit-tower --example axum_quick_start`
use axum::{Router, http::HeaderName, routing::post};
use idemkit_core::InMemoryBackend;
use idemkit_tower::IdempotencyLayer;

async fn charge(body: String) -> String {
    format!("charged {body}\n")
}

#[tokio::main]
async fn main() {
    // The store is bounded: a new key beyond a million held records (about 450 MB
    // with this handler's replies) is refused (503) until stored responses expire,
    // after 24 hours by default.
    let backend = InMemoryBackend::builder().max_size(1_000_000).build();
    let idempotency = IdempotencyLayer::builder(backend)
        .scope_header(HeaderName::from_static("x-api-key"))
        .build()
        .unwrap();
    let app = Router::new()
        .route("/charges", post(charge))
        .layer(idempotency);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await;
    axum::serve(listener.unwrap(), app).await.unwrap();
}
