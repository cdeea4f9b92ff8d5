//! The conformance suite against the Redis backend through its async trait, with
//! `AsyncIdempotency`, on a multi-thread tokio runtime, against a real `redis-server`.

mod conformance;

idemkit_conformance::conformance_tests!(crate::conformance::RedisTokio; async_waits);
