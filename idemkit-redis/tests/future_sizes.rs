//! The backend's operations hand back small futures. A future is built, moved into its
//! caller's future and copied along the way; one that holds every layer of the
//! operation twice over (as nested `async fn`s with generic arguments do) cost the
//! client more in copying than in sending its command: a claim's future was 21 KiB.

use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Backend, ClaimToken, Response};
use idemkit_redis::RedisBackend;

/// Room for an operation's own state, the command on its way, and its time limit, with
/// margin for another compiler's layout: far below what one copy of every layer twice
/// over takes.
const SMALL: usize = 2048;

#[tokio::test]
async fn every_operation_hands_back_a_small_future() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let backend = RedisBackend::builder()
        .url(&server.url())
        .namespace("future-sizes")
        .build()
        .await
        .unwrap();
    let token = ClaimToken::from_bytes([7; 16]);
    let lease = Duration::from_secs(30);
    let response = Arc::new(Response::new(200, "ok"));
    let sizes = [
        ("claim", size_of_val(&backend.claim("k", "fp", 1, lease))),
        (
            "complete",
            size_of_val(&backend.complete("k", &token, response, lease)),
        ),
        ("release", size_of_val(&backend.release("k", &token))),
        ("renew", size_of_val(&backend.renew("k", &token, lease))),
        (
            "wait_for_completion",
            size_of_val(&backend.wait_for_completion("k", lease)),
        ),
        ("get", size_of_val(&backend.get("k"))),
    ];
    eprintln!("{sizes:?}");
    for (operation, size) in sizes {
        assert!(size <= SMALL, "{operation}'s future takes {size} bytes");
    }
}
