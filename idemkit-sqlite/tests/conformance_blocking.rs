//! The conformance suite against the SQLite backend through its blocking trait, with the
//! blocking `Idempotency`, on threads, each vector on a file of its own.

mod conformance;

idemkit_conformance::conformance_tests!(crate::conformance::SqliteBlocking;
    manual_time, exact_capacity);
