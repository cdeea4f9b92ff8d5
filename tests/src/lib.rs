//! The conformance suite: behaviour written once as vectors, run against every backend
//! and executor by the files in `tests/`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod executor;
