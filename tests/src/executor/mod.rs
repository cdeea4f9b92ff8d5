//! The executor suite: every vector in [`vectors`] drives a target's executor through a
//! [`Harness`].

mod conformance_executor;
pub mod failing_backend;
mod harness;
pub mod op;
pub mod vectors;

pub use conformance_executor::{ConformanceExecutor, RunResult};
pub use failing_backend::{FailingBackend, Operation};
pub use harness::{Harness, Setup, manual, real, try_real};
