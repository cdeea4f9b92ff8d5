//! The conformance suite against the Redis backend through its blocking trait, with the
//! blocking `Idempotency`, on threads, against a real `redis-server`.

mod conformance;

idemkit_conformance::conformance_tests!(crate::conformance::RedisBlocking);
