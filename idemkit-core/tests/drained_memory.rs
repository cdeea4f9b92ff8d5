//! A backend that drains gives its memory back: once its records expire and are purged,
//! what it owns shrinks to within twice what it still holds, counted in bytes requested
//! from the allocator. (Resident memory also depends on the allocator returning pages.)
//!
//! One test in its own binary: the counting allocator counts every thread of the
//! process, so nothing else may allocate while it measures.

#[path = "support/counting_allocator.rs"]
mod counting_allocator;

use std::time::Duration;

use idemkit_core::BlockingBackend;
use idemkit_core::{Claim, InMemoryBackend, ManualClock, Response};

use counting_allocator::{Counting, live_bytes};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const LEASE: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_secs(1);
const LONG: Duration = Duration::from_secs(3600);

/// Claims and completes `count` keys named `{prefix}-{i}`, replayed for `ttl`.
fn fill(backend: &InMemoryBackend, prefix: &str, count: usize, ttl: Duration) {
    for i in 0..count {
        let key = format!("{prefix}-{i:012}");
        let Ok(Claim::New(token)) = backend.claim(&key, "fp", 1, LEASE) else {
            panic!("{key} is new");
        };
        assert!(
            backend
                .complete(&key, &token, Response::new(200, "ok").into(), ttl)
                .unwrap()
        );
    }
}

/// A fresh backend on `clock` able to hold a million records.
fn backend(clock: &ManualClock) -> InMemoryBackend {
    InMemoryBackend::builder()
        .max_size(2_000_000)
        .clock(clock.clone())
        .build()
}

#[test]
fn a_drained_backend_shrinks_back_to_what_it_holds() {
    const PEAK: usize = 1_000_000;
    const KEPT: usize = 10_000;
    let clock = ManualClock::new();

    // What KEPT records cost in a backend that never held more.
    let base = live_bytes();
    let reference = backend(&clock);
    fill(&reference, "kept", KEPT, LONG);
    let holds = live_bytes() - base;
    drop(reference);

    let base = live_bytes();
    let backend = backend(&clock);
    fill(&backend, "kept", KEPT, LONG);
    fill(&backend, "brief", PEAK - KEPT, SHORT);
    let peak = live_bytes() - base;
    assert_eq!(backend.len(), PEAK);

    clock.advance(SHORT + Duration::from_nanos(1));
    assert_eq!(backend.purge_expired(), PEAK - KEPT);
    assert_eq!(backend.len(), KEPT);
    let drained = live_bytes() - base;
    assert!(
        drained <= 2 * holds,
        "after draining from {peak} bytes to {KEPT} records the backend owns {drained} \
         bytes; {KEPT} records alone take {holds}"
    );

    // And all the way down: what is left is the empty backend's own few buffers.
    clock.advance(LONG);
    assert_eq!(backend.purge_expired(), KEPT);
    let empty = live_bytes() - base;
    assert!(
        empty <= holds / 4,
        "an emptied backend still owns {empty} bytes (peak {peak})"
    );
}
