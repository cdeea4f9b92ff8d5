//! The layer in the two ways it is installed: on an axum router (`Router::layer`,
//! `Router::route_layer`) and in front of a plain hyper 1 service.

mod support;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::routing::post;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use idemkit_core::InMemoryBackend;
use idemkit_tower::{IdempotencyLayer, RequestBody};
use support::client::{Call, send};
use support::in_process::serve_axum;
use tokio::net::TcpListener;
use tower::ServiceBuilder;

fn layer() -> IdempotencyLayer<InMemoryBackend> {
    IdempotencyLayer::builder(InMemoryBackend::new())
        .single_tenant()
        .build()
        .unwrap()
}

#[tokio::test]
async fn route_layer_protects_the_routes_it_wraps() {
    let calls = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&calls);
    let router = Router::new()
        .route(
            "/orders",
            post(move || {
                let call = counter.fetch_add(1, Ordering::SeqCst) + 1;
                async move { (http::StatusCode::CREATED, format!("order {call}")) }
            }),
        )
        .route_layer(layer());
    let served = serve_axum(router).await;
    let first = send(served.address, Call::post("/orders").key("k"))
        .await
        .unwrap();
    let retry = send(served.address, Call::post("/orders").key("k"))
        .await
        .unwrap();
    assert_eq!(first.body, "order 1");
    assert_eq!(retry.body, "order 1");
    assert_eq!(retry.header("idempotency-replayed"), Some("true"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Unmatched routes are answered by the router, untouched by the layer.
    let missing = send(served.address, Call::post("/nowhere").key("k"))
        .await
        .unwrap();
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn a_hyper_service_needs_one_adapter_line() {
    let calls = Arc::new(AtomicU64::new(0));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let counter = Arc::clone(&calls);
    // A plain hyper handler: it receives the layer's request body, generic or named.
    let handler = move |request: Request<RequestBody<Incoming>>| {
        let counter = Arc::clone(&counter);
        async move {
            let body = request.into_body().collect().await.unwrap().to_bytes();
            let call = counter.fetch_add(1, Ordering::SeqCst) + 1;
            let text = format!("run {call} of {}", String::from_utf8_lossy(&body));
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(text))))
        }
    };
    let service = ServiceBuilder::new().layer(layer()).service_fn(handler);
    let server = tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let service = service.clone();
            tokio::spawn(async move {
                // The one line: tower's service, adapted to hyper's trait.
                let service = TowerToHyperService::new(service);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let first = send(address, Call::post("/pay").key("k").body("10 EUR"))
        .await
        .unwrap();
    let retry = send(address, Call::post("/pay").key("k").body("10 EUR"))
        .await
        .unwrap();
    assert_eq!(first.body, "run 1 of 10 EUR");
    assert_eq!(retry.body, "run 1 of 10 EUR");
    assert_eq!(retry.header("idempotency-replayed"), Some("true"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    server.abort();
}
