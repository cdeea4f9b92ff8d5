//! The conformance suite against `idemkit_core::InMemoryBackend`, driven from threads.

idemkit_conformance::conformance_tests!(idemkit_conformance::targets::Blocking);
