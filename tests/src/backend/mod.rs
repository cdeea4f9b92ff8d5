//! The backend suite: every vector in [`vectors`] drives a backend through
//! [`ConformanceBackend`], which a backend provides through its async trait ([`Async`])
//! or its blocking trait ([`Blocking`]).

mod conformance_backend;
pub mod vectors;

pub use conformance_backend::{Async, Blocking, ConformanceBackend, Counts};
