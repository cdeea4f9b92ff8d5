//! The conformance suite against the Redis backend through its async trait, with
//! `AsyncIdempotency`, on smol, against a real `redis-server`.

mod conformance;

idemkit_conformance::conformance_tests!(crate::conformance::RedisSmol; async_waits);
