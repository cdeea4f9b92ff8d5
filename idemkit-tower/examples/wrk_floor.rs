//! The floor under the layer's wrk figures (`bench/wrk/run.py --floor`): the README's
//! quick start with idemkit's layer replaced by the least a run-once layer does for a
//! keyed request (`support/floor.rs` says what that is), so the ratios it reaches are
//! the most any such layer could reach on the same machine, server and client. Not for
//! use: it exists to be measured.
//! `cargo run --release -p idemkit-tower --example wrk_floor`
use axum::{Router, routing::post};

#[path = "support/floor.rs"]
mod floor;

use floor::FloorLayer;

async fn charge(body: String) -> String {
    format!("charged {body}\n")
}

#[tokio::main]
async fn main() {
    let app = Router::new()
        .route("/charges", post(charge))
        .layer(FloorLayer::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await;
    axum::serve(listener.unwrap(), app).await.unwrap();
}
