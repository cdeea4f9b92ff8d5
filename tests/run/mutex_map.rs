//! The conformance suite against `MutexMap`, a backend written outside `idemkit-core`
//! over a plain `Mutex<HashMap>`, through both of its traits: the blocking one with the
//! blocking executor on threads, and the async one with the async executor on tokio.

mod blocking {
    idemkit_conformance::conformance_tests!(
        idemkit_conformance::targets::MutexMapBlocking;
        manual_time, exact_capacity
    );
}

mod tokio {
    idemkit_conformance::conformance_tests!(
        idemkit_conformance::targets::MutexMapTokio;
        manual_time, exact_capacity, async_waits
    );
}
