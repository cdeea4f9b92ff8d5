//! The conformance suite against `idemkit_core::InMemoryBackend`, driven from threads.

idemkit_conformance::backend_tests!(idemkit_conformance::targets::Blocking);
