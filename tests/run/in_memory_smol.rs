//! The conformance suite against `idemkit_smol::InMemoryBackend`, on smol.

idemkit_conformance::backend_tests!(idemkit_conformance::targets::Smol);
idemkit_conformance::async_backend_tests!(idemkit_conformance::targets::Smol);
