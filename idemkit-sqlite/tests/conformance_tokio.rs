//! The conformance suite against the SQLite backend through its async trait, with
//! `AsyncIdempotency`, on a multi-thread tokio runtime, each vector on a file of its own.

mod conformance;

idemkit_conformance::conformance_tests!(crate::conformance::SqliteTokio;
    manual_time, exact_capacity, async_waits, purger);
