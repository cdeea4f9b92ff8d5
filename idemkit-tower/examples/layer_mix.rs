//! A fixed mix of requests for counting instructions: `n` requests through an axum app
//! alone (`bare`), behind the idempotency layer with a new key each (`new`), or replaying
//! one key (`replay`), called in process (no sockets) on a current-thread runtime,
//! each request with the quick start's `x-api-key` header and the layer scoped by it;
//! `floor-new` and `floor-replay` send the same requests through the floor layer of
//! `wrk_floor` instead (`support/floor.rs`: the least a run-once layer does), so the two
//! layers' counts can be set side by side. Nothing is timed: run it under
//! `valgrind --tool=callgrind`, whose counts do not move with the machine's load, to
//! compare two versions of the code (BENCHMARKS.md, "The one-trait seam"). Under
//! valgrind SHA-256 runs without the CPU's SHA instructions, so hashing weighs more
//! there than on the machine itself.
//!
//! ```sh
//! cargo build --release -p idemkit-tower --example layer_mix
//! valgrind --tool=callgrind target/release/examples/layer_mix new 20000
//! # the loopback bench's body (compact, its names sorted) instead of the default's
//! valgrind --tool=callgrind target/release/examples/layer_mix replay 20000 \
//!     '{"amount":2500,"currency":"eur","source":"card_4242"}'
//! ```

use std::time::Duration;

use axum::Router;
use bytes::Bytes;
use http_body_util::BodyExt;
use idemkit_core::{InMemoryBackend, Policy};
use idemkit_tower::IdempotencyLayer;
use tower::ServiceExt;

#[path = "support/floor.rs"]
mod floor;

/// The app: a small JSON answer, as a create endpoint would give (the loopback bench's).
fn app() -> Router {
    Router::new().fallback(|body: Bytes| async move {
        (
            http::StatusCode::CREATED,
            [(http::header::CONTENT_TYPE, "application/json")],
            format!(r#"{{"id":"order-1","received":{}}}"#, body.len()),
        )
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "new".to_owned());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let body = Bytes::from(
        args.next()
            .unwrap_or_else(|| r#"{"sku":"A1","qty":2}"#.to_owned()),
    );
    let layer = IdempotencyLayer::builder(InMemoryBackend::builder().max_size(2 * n).build())
        // The quick start's scope, from the header every request here sends.
        .scope_header(http::HeaderName::from_static("x-api-key"))
        .policy(
            Policy::builder()
                .expires_after(Duration::from_secs(3600))
                .build()
                .expect("a valid policy"),
        )
        .build()
        .expect("valid settings");
    let router = match mode.as_str() {
        "bare" => app(),
        "new" | "replay" => app().layer(layer),
        "floor-new" | "floor-replay" => app().layer(floor::FloorLayer::default()),
        other => {
            eprintln!(
                "layer_mix: the mode is `bare`, `new`, `replay`, `floor-new` or \
                 `floor-replay`, not {other:?}"
            );
            std::process::exit(2);
        }
    };
    let replay = mode.ends_with("replay");
    let mut bytes = 0usize;
    for i in 0..n {
        let key = if replay { 0 } else { i };
        let request = http::Request::post("/orders")
            .header(http::header::CONTENT_TYPE, "application/json")
            .header("idempotency-key", format!("order-{key}"))
            .header("x-api-key", "key_live_1")
            .body(axum::body::Body::from(body.clone()))
            .expect("a valid request");
        let response = router.clone().oneshot(request).await.expect("infallible");
        bytes += response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes()
            .len();
    }
    // Printed so that the requests cannot be optimized away.
    println!("{bytes}");
}
