//! The conformance suite against `idemkit_core::InMemoryBackend` through its blocking
//! trait, with the blocking `Idempotency`, driven from threads.

use idemkit_core::{Idempotency, InMemoryBackend};

idemkit_conformance::conformance_tests!(
    idemkit_conformance::targets::InMemoryBlocking;
    manual_time, exact_capacity
);

#[test]
fn the_executor_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Idempotency>();
    send_sync::<idemkit_core::Lease>();
    // Inferred from the backend, with no annotation.
    let executor = Idempotency::new(InMemoryBackend::new());
    assert_eq!(executor.policy().fingerprint_version(), 1);
}
