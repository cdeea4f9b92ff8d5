//! The conformance suite against `idemkit_smol::InMemoryBackend`, on smol.

idemkit_conformance::conformance_tests!(idemkit_conformance::targets::Smol);
idemkit_conformance::async_conformance_tests!(idemkit_conformance::targets::Smol);
