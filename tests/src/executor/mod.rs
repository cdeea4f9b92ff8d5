//! The executor suite (issue 5): every vector in [`vectors`] drives a target's executor
//! through a [`Harness`], on every [`Target`](crate::Target).
//!
//! A test file runs them all with `executor_tests!(path::to::Target)`.

mod conformance_executor;
pub mod failing_backend;
mod harness;
pub mod op;
pub mod vectors;

pub use conformance_executor::{ConformanceExecutor, RunResult};
pub use failing_backend::{FailingBackend, Operation};
pub use harness::{Harness, Setup, manual, real, try_real};
