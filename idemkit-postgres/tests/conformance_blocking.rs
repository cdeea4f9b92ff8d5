//! The conformance suite against the PostgreSQL backend (blocking), against a real server.
//! Groups not run: manual_time (the database's clock cannot be moved), exact_capacity
//! (a table has no fixed capacity), purger (the purge is a statement, tested in
//! records.rs).

mod conformance;

idemkit_conformance::conformance_tests!(crate::conformance::PostgresBlocking);
