//! The backend suite: every vector in [`vectors`] drives a backend through
//! [`ConformanceBackend`], on every [`Target`](crate::Target).
//!
//! A test file runs them all with `backend_tests!(path::to::Target)`, plus
//! `async_backend_tests!` for an [`AsyncTarget`](crate::AsyncTarget).

mod conformance_backend;
pub mod vectors;

pub use conformance_backend::ConformanceBackend;
